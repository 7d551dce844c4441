/* fuzz_tokenizer.c: libFuzzer target for mt_tokenizer_encode (and decode of the result).
 *
 * Built only with clang (tests/meson.build). Model directory: $MT_FUZZ_MODEL, else
 * tests/fixtures/opus-mt-tc-big-en-pt. Example, from the repository root:
 *   build-fuzz/tests/fuzz-tokenizer -max_total_time=60
 * Checks: no crash or sanitizer report; invalid UTF-8 is the only encode error; every
 * id is in range and ends with eos; decode of the ids succeeds.
 */
#include "fixture_dir.h"
#include "tokenizer.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static mt_tokenizer *tok;
static int32_t eos;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char dir[PATH_MAX], err[1024];
    const char *model = getenv("MT_FUZZ_MODEL");
    if (model != NULL)
        snprintf(dir, sizeof dir, "%s", model);
    else
        opus_fixture_dir(dir, sizeof dir);
    tok = mt_tokenizer_load(dir, err, sizeof err);
    if (tok == NULL) {
        fprintf(stderr, "fuzz-tokenizer: %s\n", err);
        abort();
    }
    eos = mt_tokenizer_source_id(tok, "</s>");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    int32_t small[64];
    int n = mt_tokenizer_encode(tok, (const char *)data, size, small, 64, err, sizeof err);
    if (n < 0) {
        if (strncmp(err, "invalid UTF-8 at byte ", 22) != 0)
            abort();
        return 0;
    }
    int32_t *ids = malloc((size_t)n * sizeof(*ids));
    if (ids == NULL)
        return 0;
    if (mt_tokenizer_encode(tok, (const char *)data, size, ids, n, err, sizeof err) != n)
        abort();
    if (n < 1 || ids[n - 1] != eos || memcmp(ids, small, (size_t)(n < 64 ? n : 64) * 4) != 0)
        abort();
    int len = mt_tokenizer_decode(tok, ids, n, NULL, 0, err, sizeof err);
    if (len < 0)
        abort();
    char *out = malloc((size_t)len + 1);
    if (out != NULL) {
        if (mt_tokenizer_decode(tok, ids, n, out, (size_t)len + 1, err, sizeof err) != len ||
            strlen(out) > (size_t)len)
            abort();
        free(out);
    }
    free(ids);
    return 0;
}
