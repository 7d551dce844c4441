/* fuzz_replay.h: main() for fuzz targets built without libFuzzer (gcc): feeds each file
 * named on the command line (or stdin) to LLVMFuzzerTestOneInput, to replay a corpus or a
 * crash. Include it once, after the target's LLVMFuzzerTestOneInput. */
#ifndef MT_FUZZ_REPLAY_H
#define MT_FUZZ_REPLAY_H
#ifndef MT_LIBFUZZER
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int replay_file(FILE *f)
{
    size_t cap = 1 << 16, n = 0, got;
    uint8_t *buf = malloc(cap);
    if (!buf)
        return 1;
    while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                return 1;
            }
            buf = nb;
        }
    }
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
#ifdef MT_FUZZ_INITIALIZE /* the target defines LLVMFuzzerInitialize */
    LLVMFuzzerInitialize(&argc, &argv);
#endif
    if (argc < 2)
        return replay_file(stdin);
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            perror(argv[i]);
            return 1;
        }
        int rc = replay_file(f);
        fclose(f);
        if (rc)
            return rc;
    }
    return 0;
}
#endif
#endif
