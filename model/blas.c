/* blas.c: which OpenBLAS kernels run, and how many threads OpenBLAS itself uses.
 *
 * OpenBLAS picks its kernel family once, in a library constructor, from the
 * OPENBLAS_CORETYPE environment variable or its CPU table. Debian's 0.3.21 does not know
 * recent AVX-512 cores, and environments often pin OPENBLAS_CORETYPE=Haswell; either way
 * sgemm runs at half the speed the CPU offers. The choice cannot be changed after the
 * library is loaded, so executables call mt_process_setup() first thing: it sets
 * the variable and re-executes the program when a faster family applies.
 *
 * The program's main reads MT_BLAS_CORETYPE and passes it in; this file reads no
 * environment variable. It writes two before re-executing: OPENBLAS_CORETYPE for the new
 * image's OpenBLAS, and MT_BLAS_CORETYPE=keep so that the new image, passing it back
 * here, never re-executes again (even if OpenBLAS refuses the name). */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model.h"

const char *mt_blas_core_name(void) { return openblas_get_corename(); }

static int core_has_avx512(const char *name)
{
    static const char *const families[] = {"SkylakeX", "Cooperlake", "SapphireRapids"};
    for (size_t i = 0; i < sizeof families / sizeof *families; i++)
        if (name && !strcasecmp(name, families[i]))
            return 1;
    return 0;
}

static int cpu_has_avx512(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
}

/* What OPENBLAS_CORETYPE should be, or NULL to leave things as they are. */
static const char *wanted_core(const char *choice)
{
    if (choice && *choice && strcasecmp(choice, "auto"))
        return strcasecmp(choice, "keep") ? choice : NULL;
    if (cpu_has_avx512() && !core_has_avx512(openblas_get_corename()))
        return "SkylakeX";
    return NULL;
}

static void blas_single_threaded(void)
{
    /* Our own pool splits each product; OpenBLAS threading on top would oversubscribe
     * the cores and serialise concurrent callers on its shared thread pool. */
    openblas_set_num_threads(1);
}

void mt_process_setup(char **argv, const char *blas_coretype)
{
    const char *want = wanted_core(blas_coretype);
    if (argv && want && strcasecmp(openblas_get_corename(), want)) {
        setenv("OPENBLAS_CORETYPE", want, 1);
        setenv("MT_BLAS_CORETYPE", "keep", 1); /* the new image never loops */
        execv("/proc/self/exe", argv);
        /* exec failed (no /proc?): carry on with the kernels already loaded */
    }
    blas_single_threaded();
}
