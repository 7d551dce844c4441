/* fuzz_ct2.c: fuzz target for model/ct2_file.c, the reader of CTranslate2's model.bin, and
 * for the spec checks of model/ct2.c that need only the file. Any input must give either a
 * parsed file whose every variable lies inside the input, or an error that says why;
 * nothing may read out of bounds (ASan) or run away.
 *
 * With clang: a libFuzzer target seeded with tests/fuzz/ct2 (written by
 * tests/fuzz/make_ct2_seeds.py). Without: replays the files named on the command line
 * (fuzz_replay.h), which the unit suite does. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../model/ct2.h"
#include "../model/ct2_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512] = "";
    mt_ct2_file *f = mt_ct2_parse(data, size, err, sizeof err);
    if (!f) {
        if (!err[0] || !memchr(err, 0, sizeof err))
            abort(); /* every failure explains itself */
        return 0;
    }
    float sink = 0.0f;
    for (int i = 0; i < mt_ct2_count(f); i++) {
        const mt_ct2_var *v = mt_ct2_at(f, i);
        size_t bytes = (size_t)v->numel * mt_ct2_type_size(v->dtype);
        const uint8_t *p = v->data;
        if (bytes && (p < data || p + bytes > data + size))
            abort();
        if (v->numel > 0 && v->numel < 4096) { /* convert small variables: touches every byte */
            float *out = malloc(sizeof(float) * (size_t)v->numel);
            if (!out)
                abort();
            mt_ct2_to_f32(v, out);
            sink += out[0];
            free(out);
        }
        if (mt_ct2_find(f, v->name) != v)
            abort();
    }
    err[0] = 0;
    if (mt_ct2_check(f, err, sizeof err) && !err[0])
        abort();
    mt_ct2_free(f);
    return sink != sink ? 0 : 0; /* reads the conversions, so they are kept */
}

#include "fuzz_replay.h"
