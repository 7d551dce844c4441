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

#include "fuzz_replay.h"
