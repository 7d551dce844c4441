/* packed.c: what the CPU offers for the packed compute types, and weights packed once
 * for oneDNN's matmul (see packed.h for the design and the two traps it avoids). The
 * products that use them: packed_run.c; the scalar conversion and epilogue:
 * packed_scalar.c. */
#include "packed.h"

#include <cpuid.h>
#include <errno.h>
#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"
#include "packed_impl.h"

/* Every call into oneDNN from one of our threads runs it single-threaded: each thread's
 * OpenMP "nthreads" setting is its own, so this touches no other thread. */
void mt_pk_one_omp_thread(void)
{
    if (omp_get_max_threads() != 1)
        omp_set_num_threads(1);
}

static size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

/* ---- what the CPU offers ---- */

typedef struct {
    int vnni, bf16, amx_int8, amx_bf16;
} cpu_features;

static int hidden(const char *h, const char *what)
{
    size_t n = strlen(what);
    for (const char *p = h; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && !strncmp(p, what, n))
            return 1;
        p = end ? end + 1 : p + len;
    }
    return 0;
}

static cpu_features cpu_get(const char *hide)
{
    cpu_features f = {0};
    unsigned a, b, c, d;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        f.vnni = (c >> 11) & 1;          /* AVX512_VNNI */
        f.amx_bf16 = (d >> 22) & 1;
        f.amx_int8 = (d >> 25) & 1 && (d >> 24) & 1; /* AMX-TILE and AMX-INT8 */
        f.amx_bf16 &= (d >> 24) & 1;
        if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) {
            f.vnni |= (a >> 4) & 1;      /* AVX-VNNI */
            f.bf16 = (a >> 5) & 1;       /* AVX512_BF16 */
        }
    }
    if (hidden(hide, "vnni"))
        f.vnni = 0;
    if (hidden(hide, "bf16"))
        f.bf16 = 0;
    if (hidden(hide, "amx"))
        f.amx_int8 = f.amx_bf16 = 0;
    return f;
}

static dnnl_data_type_t weight_type(mt_compute_type t)
{
    return t == MT_COMPUTE_INT8 ? dnnl_s8 : t == MT_COMPUTE_BFLOAT16 ? dnnl_bf16 : dnnl_f32;
}
static dnnl_data_type_t src_type(mt_compute_type t)
{
    return t == MT_COMPUTE_INT8 ? dnnl_u8 : t == MT_COMPUTE_BFLOAT16 ? dnnl_bf16 : dnnl_f32;
}
static dnnl_data_type_t dst_type(mt_compute_type t) { return t == MT_COMPUTE_INT8 ? dnnl_s32 : dnnl_f32; }
size_t mt_pk_src_elt(mt_compute_type t) { return t == MT_COMPUTE_INT8 ? 1 : t == MT_COMPUTE_BFLOAT16 ? 2 : 4; }
static int packable(mt_compute_type t)
{
    return t == MT_COMPUTE_FLOAT32 || t == MT_COMPUTE_BFLOAT16 || t == MT_COMPUTE_INT8;
}

/* A matmul primitive descriptor for rows x k by k x n; wei NULL lets oneDNN choose the
 * weights' layout (format any). */
dnnl_status_t mt_pk_matmul_pd(dnnl_engine_t eng, mt_compute_type t, int rows, int k, int n,
                               const dnnl_memory_desc_t *wei, dnnl_primitive_desc_t *pd)
{
    dnnl_memory_desc_t src_md, wei_md, dst_md;
    dnnl_dims_t sd = {rows, k}, wd = {k, n}, dd = {rows, n};
    dnnl_status_t s = dnnl_memory_desc_init_by_tag(&src_md, 2, sd, src_type(t), dnnl_ab);
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_tag(&dst_md, 2, dd, dst_type(t), dnnl_ab);
    if (s == dnnl_success && !wei)
        s = dnnl_memory_desc_init_by_tag(&wei_md, 2, wd, weight_type(t), dnnl_format_tag_any);
    dnnl_matmul_desc_t desc;
    if (s == dnnl_success)
        s = dnnl_matmul_desc_init(&desc, &src_md, wei ? wei : &wei_md, NULL, &dst_md);
    dnnl_primitive_attr_t attr = NULL;
    if (s == dnnl_success)
        s = dnnl_primitive_attr_create(&attr);
    if (s == dnnl_success)
        s = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (s == dnnl_success)
        s = dnnl_primitive_desc_create(pd, &desc, attr, eng, NULL);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return s;
}

const char *mt_pk_pd_impl(const_dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl)
        return "?";
    return impl;
}

/* A kernel worth using: brgemm (with VNNI or AMX for int8). gemm:jit and ref are slower
 * than our float32 path. */
int mt_pk_fast_impl(mt_compute_type t, const char *impl)
{
    if (strncmp(impl, "brg", 3))
        return 0;
    return t != MT_COMPUTE_INT8 || strstr(impl, "vnni") || strstr(impl, "amx");
}

int mt_packed_cpu_hide_valid(const char *hide)
{
    for (const char *p = hide; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (!((len == 4 && !strncmp(p, "vnni", 4)) || (len == 4 && !strncmp(p, "bf16", 4)) ||
              (len == 3 && !strncmp(p, "amx", 3))))
            return 0;
        p = end ? end + 1 : p + len;
    }
    return 1;
}

int mt_packed_available(mt_compute_type type, const char *cpu_hide, char *impl, size_t impl_len, char *why,
                        size_t whylen)
{
    char tmp[1];
    if (!why) {
        why = tmp;
        whylen = sizeof tmp;
    }
    if (impl && impl_len)
        impl[0] = 0;
    if (!packable(type))
        return mt_strfmt(why, whylen, "not a oneDNN compute type"), 0;
    cpu_features f = cpu_get(cpu_hide);
    if (type == MT_COMPUTE_INT8 && !f.vnni && !f.amx_int8)
        return mt_strfmt(why, whylen, "this CPU has no VNNI (AVX-512 VNNI, AVX-VNNI or AMX-INT8)"), 0;
    if (type == MT_COMPUTE_BFLOAT16 && !f.bf16 && !f.amx_bf16)
        return mt_strfmt(why, whylen, "this CPU has no bfloat16 instructions (AVX-512 BF16 or AMX-BF16)"), 0;
    mt_pk_one_omp_thread();
    dnnl_engine_t eng;
    if (dnnl_engine_create(&eng, dnnl_cpu, 0) != dnnl_success)
        return mt_strfmt(why, whylen, "oneDNN has no CPU engine"), 0;
    dnnl_primitive_desc_t pd;
    int ok = 0;
    if (mt_pk_matmul_pd(eng, type, 32, 512, 512, NULL, &pd) == dnnl_success) {
        const char *name = mt_pk_pd_impl(pd);
        if (impl)
            mt_strfmt(impl, impl_len, "%s", name);
        ok = mt_pk_fast_impl(type, name);
        if (!ok)
            mt_strfmt(why, whylen, "oneDNN %s offers only '%s' for it", mt_packed_library_version(), name);
        dnnl_primitive_desc_destroy(pd);
    } else {
        mt_strfmt(why, whylen, "oneDNN %s has no matmul for it", mt_packed_library_version());
    }
    dnnl_engine_destroy(eng);
    return ok;
}

#define MT_STR2(x) #x
#define MT_STR(x) MT_STR2(x)

/* The version this was built against (Debian pins the library to it); a constant, so
 * no thread ever writes it. */
const char *mt_packed_library_version(void)
{
    return MT_STR(DNNL_VERSION_MAJOR) "." MT_STR(DNNL_VERSION_MINOR) "." MT_STR(DNNL_VERSION_PATCH);
}

/* ---- packing ---- */

/* Block width: a multiple of 64 (the brgemm kernels' column block) that gives two blocks
 * for middle-sized matrices (two threads share a d x d product) and at most 1024 columns
 * (a block's packed weights and output stay within L2). */
static int block_cols(int n)
{
    if (n <= 256)
        return n;
    int half = (int)round_up((size_t)(n + 1) / 2, 64);
    return half < 1024 ? half : 1024;
}

static void quantize_rows(const float *w, int rows, int k, int8_t *q, float *scale, int32_t *colsum)
{
    for (int r = 0; r < rows; r++) {
        const float *wr = w + (size_t)r * (size_t)k;
        float amax = 0.0f;
        for (int i = 0; i < k; i++)
            amax = fmaxf(amax, fabsf(wr[i]));
        float s = amax > 0.0f ? amax / 127.0f : 1.0f, inv = 1.0f / s;
        int32_t sum = 0;
        for (int i = 0; i < k; i++) {
            long v = lrintf(wr[i] * inv);
            v = v > 127 ? 127 : v < -127 ? -127 : v;
            q[(size_t)r * (size_t)k + (size_t)i] = (int8_t)v;
            sum += (int32_t)v;
        }
        scale[r] = s;
        colsum[r] = sum;
    }
}

/* Reorders one block held plainly as (cols, k) row-major (= k x cols, tag ba) into the
 * packed layout md at dst. */
static int reorder_block(dnnl_engine_t eng, mt_compute_type t, const void *plain, int k, int cols,
                         const dnnl_memory_desc_t *md, void *dst)
{
    dnnl_memory_desc_t src_md;
    dnnl_dims_t dims = {k, cols};
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    dnnl_memory_t sm = NULL, dm = NULL;
    dnnl_stream_t stream = NULL;
    int ok = dnnl_memory_desc_init_by_tag(&src_md, 2, dims, weight_type(t), dnnl_ba) == dnnl_success &&
             dnnl_reorder_primitive_desc_create(&pd, &src_md, eng, md, eng, NULL) == dnnl_success &&
             dnnl_primitive_create(&prim, pd) == dnnl_success &&
             dnnl_memory_create(&sm, &src_md, eng, (void *)plain) == dnnl_success &&
             dnnl_memory_create(&dm, md, eng, dst) == dnnl_success &&
             dnnl_stream_create(&stream, eng, dnnl_stream_default_flags) == dnnl_success;
    if (ok) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, sm}, {DNNL_ARG_TO, dm}};
        ok = dnnl_primitive_execute(prim, stream, 2, args) == dnnl_success && dnnl_stream_wait(stream) == dnnl_success;
    }
    if (stream)
        dnnl_stream_destroy(stream);
    if (sm)
        dnnl_memory_destroy(sm);
    if (dm)
        dnnl_memory_destroy(dm);
    if (prim)
        dnnl_primitive_destroy(prim);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    return ok ? 0 : -1;
}

/* The layout brgemm asks for, for blocks `cols` wide (the same for every row count up to
 * MT_PACKED_MAX_ROWS, so one packed copy serves them all). */
static int query_layout(dnnl_engine_t eng, mt_compute_type t, int k, int cols, dnnl_memory_desc_t *md)
{
    dnnl_primitive_desc_t pd;
    if (mt_pk_matmul_pd(eng, t, MT_PACKED_MAX_ROWS, k, cols, NULL, &pd) != dnnl_success)
        return -1;
    *md = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_primitive_desc_destroy(pd);
    return 0;
}

/* Converts each column block to bfloat16, or quantizes it (filling its rows' scales and
 * column sums), then reorders it into its packed layout. */
static int pack_blocks(mt_packed *p, dnnl_engine_t eng, const float *w, float *scale, int32_t *colsum, char *err,
                       size_t errlen)
{
    size_t k = (size_t)p->k, nb = (size_t)p->nb;
    void *plain = p->type == MT_COMPUTE_FLOAT32 ? NULL : malloc(nb * k * 2); /* float32: reordered as is */
    if (!plain && p->type != MT_COMPUTE_FLOAT32)
        return mt_strfmt(err, errlen, "out of memory packing a %d x %d matrix", p->n, p->k), -1;
    int rc = 0;
    for (int j = 0; j < p->blocks && !rc; j++) {
        int cols = j == p->blocks - 1 ? p->n - j * p->nb : p->nb;
        const float *wb = w + (size_t)j * nb * k;
        if (p->type == MT_COMPUTE_BFLOAT16)
            mt_packed_kernels_scalar.to_bf16(wb, plain, (size_t)cols * k);
        else if (p->type == MT_COMPUTE_INT8)
            quantize_rows(wb, cols, p->k, plain, scale + (size_t)j * nb, colsum + (size_t)j * nb);
        const dnnl_memory_desc_t *md = &p->md[j == p->blocks - 1 && cols != p->nb];
        if (reorder_block(eng, p->type, plain ? plain : wb, p->k, cols, md, p->data + (size_t)j * p->stride))
            rc = (mt_strfmt(err, errlen, "oneDNN could not reorder block %d of a %d x %d matrix", j, p->n, p->k), -1);
    }
    free(plain);
    return rc;
}

/* Packed weights are streamed from memory once per decoder step (a float32 transformer-
 * base step reads about 200 MB of them at beam 4, the output projection alone 119 MB), so
 * at few rows a product runs at the speed of memory, and with 4 KiB pages every 4 KiB
 * costs a TLB miss and a page walk. Maps of 2 MiB or more therefore start on a 2 MiB
 * boundary and ask for transparent huge pages over their whole 2 MiB pages (the tail,
 * and maps under 2 MiB, keep small pages: a huge page there would hold memory the weights
 * do not use). Streaming 208 MB measured 23 GB/s on small pages, 31 GB/s on huge ones
 * (Zen 5, one thread). Where THP is off ("never") the advice is ignored: same as before. */
enum { HUGE_PAGE = 2 << 20 };

static void *map_weights(size_t bytes)
{
    if (bytes < HUGE_PAGE)
        return mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    size_t span = bytes + HUGE_PAGE - PAGE; /* room to slide to a 2 MiB boundary */
    unsigned char *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return MAP_FAILED;
    unsigned char *at = (unsigned char *)round_up((size_t)(uintptr_t)raw, HUGE_PAGE);
    if (at > raw)
        munmap(raw, (size_t)(at - raw));
    if (raw + span > at + bytes)
        munmap(at + bytes, (size_t)(raw + span - (at + bytes)));
    madvise(at, bytes / HUGE_PAGE * HUGE_PAGE, MADV_HUGEPAGE); /* advice: failure changes nothing */
    return at;
}

mt_packed *mt_packed_create(mt_compute_type type, const float *w, int n, int k, char *err, size_t errlen)
{
    if (!packable(type) || n < 1 || k < 1) {
        mt_strfmt(err, errlen, "cannot pack a %d x %d matrix as %s", n, k, mt_compute_type_name(type));
        return NULL;
    }
    mt_pk_one_omp_thread();
    mt_packed *p = calloc(1, sizeof *p);
    dnnl_engine_t eng = NULL;
    if (!p || dnnl_engine_create(&eng, dnnl_cpu, 0) != dnnl_success) {
        free(p);
        mt_strfmt(err, errlen, "out of memory (or no oneDNN CPU engine) packing a %d x %d matrix", n, k);
        return NULL;
    }
    p->type = type;
    p->n = n;
    p->k = k;
    p->nb = block_cols(n);
    p->blocks = (n + p->nb - 1) / p->nb;
    int tail = n - (p->blocks - 1) * p->nb;
    int rc = query_layout(eng, type, k, p->nb, &p->md[0]);
    if (!rc)
        rc = query_layout(eng, type, k, tail, &p->md[1]);
    size_t weights = 0;
    if (rc) {
        mt_strfmt(err, errlen, "oneDNN %s has no %s matmul for a %d x %d matrix", mt_packed_library_version(),
                  mt_compute_type_name(type), n, k);
    } else {
        p->stride = round_up(dnnl_memory_desc_get_size(&p->md[0]), ALIGN);
        weights = p->stride * (size_t)(p->blocks - 1) + round_up(dnnl_memory_desc_get_size(&p->md[1]), ALIGN);
        size_t extra = type == MT_COMPUTE_INT8 ? 2 * round_up(sizeof(float) * (size_t)n, ALIGN) : 0;
        p->map_bytes = round_up(weights + extra, PAGE);
        p->map = map_weights(p->map_bytes);
        if (p->map == MAP_FAILED) {
            p->map = NULL;
            rc = (mt_strfmt(err, errlen, "cannot allocate %zu bytes for packed weights: %s", p->map_bytes,
                            strerror(errno)), -1);
        }
    }
    float *scale = NULL;
    int32_t *colsum = NULL;
    if (!rc) {
        p->data = p->map;
        if (type == MT_COMPUTE_INT8) {
            scale = (float *)(p->data + weights);
            colsum = (int32_t *)(p->data + weights + round_up(sizeof(float) * (size_t)n, ALIGN));
            p->scale = scale;
            p->colsum = colsum;
        }
    }
    if (!rc)
        rc = pack_blocks(p, eng, w, scale, colsum, err, errlen);
    dnnl_engine_destroy(eng);
    /* read-only from here: a stray write faults instead of corrupting what others read */
    if (!rc && mprotect(p->map, p->map_bytes, PROT_READ) != 0)
        rc = (mt_strfmt(err, errlen, "mprotect: %s", strerror(errno)), -1);
    if (rc) {
        mt_packed_free(p);
        return NULL;
    }
    return p;
}

void mt_packed_free(mt_packed *p)
{
    if (!p)
        return;
    if (p->map)
        munmap(p->map, p->map_bytes);
    free(p);
}

size_t mt_packed_bytes(const mt_packed *p) { return p ? p->map_bytes : 0; }
int mt_packed_block_cols(const mt_packed *p) { return p->nb; }
