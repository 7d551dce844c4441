/* fuzz_torchzip.c: fuzz target for hub/torchzip.c, the reader of torch.save's zip format
 * and its weights-only unpickler. An input starting with "PK" (zip) or torch's legacy magic
 * pickle is opened as a torch.save file and every tensor of its state dict read (those under 16 MiB); any other input is unpickled alone
 * as a data.pkl. Every failure must say why (a non-empty message); nothing may read out of
 * bounds (ASan) or run away (libFuzzer's limits).
 *
 * With clang: a libFuzzer target seeded with tests/fuzz/torchzip (written by
 * tests/fuzz/make_torchzip_seeds.py with torch). Without: replays the files named on the
 * command line (fuzz_replay.h), which the unit suite does. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "torchzip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512] = "";
    static const uint8_t legacy[] = {0x80, 0x02, 0x8a, 0x0a};
    if ((size < 2 || memcmp(data, "PK", 2)) && (size < 4 || memcmp(data, legacy, 4))) {
        if (mh_unpickle_check(data, size, err, sizeof err) && !err[0])
            abort();
        return 0;
    }
    mh_torch *t = mh_torch_parse(data, size, err, sizeof err);
    if (!t) {
        if (!err[0])
            abort();
        return 0;
    }
    for (int i = 0; i < mh_torch_count(t); i++) {
        const mh_torch_tensor *x = mh_torch_at(t, i);
        uint64_t bytes = mh_dtype_size(x->dtype);
        for (int d = 0; d < x->ndim && bytes <= (16u << 20); d++)
            bytes *= (uint64_t)x->shape[d];
        if (bytes > (16u << 20))
            continue;
        void *buf = malloc(bytes ? bytes : 1);
        err[0] = 0;
        if (buf && mh_torch_read(t, i, buf, err, sizeof err) && !err[0])
            abort();
        free(buf);
    }
    mh_torch_close(t);
    return 0;
}

#include "fuzz_replay.h"
