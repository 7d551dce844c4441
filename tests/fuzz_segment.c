/* fuzz_segment.c: libFuzzer target for sentence segmentation, plain text and HTML
 * (mt_translator_segment, mt_translator_segment_html), the HTML decoding of what is
 * encoded and the rejoining of a translation.
 *
 * The first input byte picks the format (bit 0) and the token limit (8..71); the rest is
 * the text. The translator is a tiny random model over the real OPUS-MT tokenizer files
 * (tests/fixtures/opus-mt-tc-big-en-pt), written to a temporary directory at start.
 * Checks: an error only for invalid UTF-8; segments are non-empty, in order, and cover the
 * text exactly; every sentence encodes; in plain text each one fits the token limit
 * (unless it is a single character); joining the sentences back as their own
 * "translations" gives the text again (HTML: with & < > escaped).
 * Under gcc this builds a replay tool: fuzz-segment FILE... (tests/fuzz_replay.h).
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tiny_model.h"
#include "translator.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static mt_translator *tr;
static char dir[64];

static void die(const char *what)
{
    fprintf(stderr, "fuzz-segment: %s\n", what);
    abort();
}

static void remove_model(void)
{
    static const char *const names[] = {"config.json", "generation_config.json", "model.safetensors",
                                        "source.spm", "target.spm", "vocab.json", "tokenizer_config.json",
                                        "special_tokens_map.json"};
    char path[PATH_MAX];
    mt_translator_free(tr);
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        remove(path);
    }
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char err[512];
    snprintf(dir, sizeof dir, "/tmp/mt-fuzz-segment-XXXXXX");
    if (!mkdtemp(dir))
        die("mkdtemp failed");
    if (tiny_model_write_opus(dir))
        die("could not write the tiny model (is MT_SOURCE_DIR the repository root?)");
    tr = mt_translator_load(dir, NULL, NULL, err, sizeof err);
    if (!tr)
        die(err);
    atexit(remove_model);
    return 0;
}

static void check(const char *text, size_t len, int html, int max_tokens)
{
    char err[512];
    mt_segment *segs;
    int n = (html ? mt_translator_segment_html : mt_translator_segment)(tr, text, len, max_tokens, &segs, err,
                                                                       sizeof err);
    if (n < 0) {
        if (mt_utf8_valid(text, len, NULL, 0))
            die(err);
        return;
    }
    size_t at = 0;
    int n_sentences = 0;
    for (int i = 0; i < n; i++) {
        if (segs[i].start != at || segs[i].len == 0)
            die("segments do not cover the text in order");
        at += segs[i].len;
        n_sentences += segs[i].translate;
    }
    if (at != len)
        die("segments do not cover the whole text");

    mt_sentence_hyps *hyps = calloc((size_t)n_sentences + 1, sizeof *hyps);
    char **own = calloc((size_t)n_sentences + 1, sizeof *own);
    float *scores = calloc((size_t)n_sentences + 1, sizeof *scores);
    if (!hyps || !own || !scores)
        die("out of memory");
    for (int i = 0, k = 0; i < n; i++) {
        if (!segs[i].translate)
            continue;
        int32_t *ids;
        const char *s = text + segs[i].start;
        int m = (html ? mt_translator_encode_html : mt_translator_encode)(tr, s, segs[i].len, &ids, err,
                                                                       sizeof err);
        if (m < 0)
            die(err);
        free(ids);
        /* a single character cannot be cut further */
        unsigned char c = (unsigned char)s[0];
        size_t first_char = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        if (!html && m > max_tokens && segs[i].len > first_char)
            die("a plain-text sentence is longer than the token limit");
        own[k] = strndup(s, segs[i].len);
        if (!own[k])
            die("out of memory");
        hyps[k] = (mt_sentence_hyps){&own[k], &scores[k], 1};
        k++;
    }
    float score;
    char *joined = mt_translator_join(text, segs, n, hyps, 0, html ? MT_JOIN_HTML : MT_JOIN_TEXT, &score);
    if (!joined)
        die("join failed");
    /* (a NUL inside the text cuts the C strings short: nothing to compare then) */
    if (!memchr(text, 0, len)) {
        if (!html && (strlen(joined) != len || memcmp(joined, text, len) != 0))
            die("joining the sentences back does not give the text");
        if (html && strlen(joined) < len)
            die("escaping shortened the text");
    }
    free(joined);
    for (int k = 0; k < n_sentences; k++)
        free(own[k]);
    free(own);
    free(hyps);
    free(scores);
    free(segs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    char *text = malloc(size);
    if (!text)
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = 0;
    check(text, size - 1, data[0] & 1, 8 + (data[0] >> 1 & 63));
    free(text);
    return 0;
}

#define MT_FUZZ_INITIALIZE
#include "fuzz_replay.h"
