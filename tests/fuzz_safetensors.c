/* fuzz_safetensors.c: libFuzzer target for the safetensors header parser. Any input must
 * give either a parsed file whose every tensor lies inside the input, or an error. Seeds:
 * tests/fuzz/safetensors (tests/fuzz/make_safetensors_seeds.py); built without libFuzzer
 * (gcc) it replays files named on its command line (fuzz_replay.h), which the unit suite
 * does with the seeds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../model/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    mt_safetensors *st = mt_safetensors_parse(data, size, err, sizeof err);
    if (!st) {
        if (!err[0] || !memchr(err, 0, sizeof err))
            abort(); /* every failure explains itself */
        return 0;
    }
    float sink = 0.0f;
    for (int i = 0; i < mt_safetensors_count(st); i++) {
        const mt_tensor_view *t = mt_safetensors_at(st, i);
        size_t bytes = (size_t)t->numel * mt_dtype_size(t->dtype);
        const uint8_t *p = t->data;
        if (p < data || p + bytes > data + size)
            abort();
        if (t->numel > 0 && t->numel < 4096) { /* convert small tensors: touches every byte */
            float *out = malloc(sizeof(float) * (size_t)t->numel);
            mt_tensor_to_f32(t, out);
            sink += out[0];
            free(out);
        }
    }
    mt_safetensors_close(st);
    return sink == 12345.0f;
}

#include "fuzz_replay.h"
