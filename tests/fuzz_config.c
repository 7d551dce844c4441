/* fuzz_config.c: fuzz target for the config file reader (mt_config_load_string).
 *
 * With clang: cc -fsanitize=fuzzer,address -DMT_LIBFUZZER ... (libFuzzer's main).
 * Without: the program reads each file named on the command line (or stdin) and runs
 * it through the reader once, so a crash corpus can be replayed under any compiler. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mt_config cfg;
    char err[256];
    mt_config_init(&cfg);
    if (mt_config_load_string(&cfg, (const char *)data, size, "fuzz", "base", err, sizeof err) == 0) {
        /* A file that loads must survive a write / read round trip. */
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (f) {
            mt_config_write(&cfg, f);
            fclose(f);
            mt_config again;
            mt_config_init(&again);
            if (mt_config_load_string(&again, buf, len, "dump", NULL, err, sizeof err) != 0) {
                fprintf(stderr, "round trip failed: %s\n%s\n", err, buf);
                abort();
            }
            if (again.port != cfg.port || again.n_models != cfg.n_models ||
                again.n_api_keys != cfg.n_api_keys)
                abort();
            mt_config_free(&again);
        }
        free(buf);
    } else if (!memchr(err, ':', strlen(err))) {
        abort(); /* every error names a position */
    }
    mt_config_free(&cfg);
    return 0;
}

#ifndef MT_LIBFUZZER
static int run_file(FILE *f)
{
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    if (!buf) return 1;
    size_t got;
    while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap *= 2);
            if (!nb) { free(buf); return 1; }
            buf = nb;
        }
    }
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) return run_file(stdin);
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) { perror(argv[i]); return 1; }
        int rc = run_file(f);
        fclose(f);
        if (rc) return rc;
    }
    return 0;
}
#endif
