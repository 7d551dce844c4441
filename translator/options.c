/* options.c: the decoding options table and the checks, merges and comparisons that walk it. */
#include "options.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "error.h"

#define OFF(f) offsetof(mt_search_options, f)
#define ALL (MT_OPT_NATIVE | MT_OPT_LIBRE | MT_OPT_CLI)
#define NATIVE_CLI (MT_OPT_NATIVE | MT_OPT_CLI)

static const mt_option_desc TABLE[MT_OPT_COUNT] = {
    [MT_OPT_BEAM_SIZE] = {"beam_size", "--beam-size", "--beam", "N", MT_OPT_INT, 1, 256, 0, OFF(beam_size),
                          NATIVE_CLI, 1, 1, "beam size (default: the model's num_beams, else 4; 1 = greedy)"},
    [MT_OPT_N_BEST] = {"n_best", "--n-best", NULL, "N", MT_OPT_INT, 1, 256, 0, OFF(n_best), NATIVE_CLI, 1, 1,
                       "hypotheses per text, best first (at most the beam size)"},
    [MT_OPT_LENGTH_PENALTY] = {"length_penalty", "--length-penalty", NULL, "A", MT_OPT_FLOAT, 0, 10, 0,
                               OFF(length_penalty), NATIVE_CLI, 1, 1,
                               "score = sum(log p) / length^A (default: the model's, else 1.0)"},
    [MT_OPT_MAX_LENGTH] = {"max_length", "--max-length", NULL, "N", MT_OPT_INT, 1, 1000000, 0, OFF(max_length),
                           NATIVE_CLI, 1, 1, "at most N decoding steps, eos included (default: the model's, else 256)"},
    [MT_OPT_MAX_LENGTH_FACTOR] = {"max_length_factor", "--max-length-factor", NULL, "F", MT_OPT_FLOAT, 0, 1000, 0,
                                  OFF(max_length_factor), MT_OPT_CLI, 1, 1,
                                  "also at most F * source length + 10 steps (default 0: off)"},
    [MT_OPT_SAMPLING_TOPK] = {"sampling_topk", "--sampling-topk", NULL, "K", MT_OPT_INT, 0, 1000000, 0,
                              OFF(sampling_topk), ALL, 1, 0,
                              "sample from the K most likely (0: all; default 1: no sampling; sampling "
                              "without a beam size uses beam 1)"},
    [MT_OPT_SAMPLING_TOPP] = {"sampling_topp", "--sampling-topp", NULL, "P", MT_OPT_FLOAT, 0, 1, 1,
                              OFF(sampling_topp), ALL, 1, 0,
                              "sample from the smallest set of mass >= P (default 1: all)"},
    /* Below 1e-6 the scaled logits of a real model overflow to infinity and the search
     * ends at once with an empty translation. */
    [MT_OPT_SAMPLING_TEMPERATURE] = {"sampling_temperature", "--sampling-temperature", NULL, "T", MT_OPT_FLOAT,
                                     1e-6, 1000, 0, OFF(sampling_temperature), ALL, 1, 0,
                                     "divide logits by T before sampling (default 1)"},
    [MT_OPT_SEED] = {"seed", "--seed", NULL, "N", MT_OPT_U64, 0, 9007199254740991.0, 0, OFF(seed), ALL, 1, 0,
                     "sampling seed (default 0): same seed and input, same output"},
    [MT_OPT_NO_REPEAT_NGRAM_SIZE] = {"no_repeat_ngram_size", "--no-repeat-ngram-size", NULL, "N", MT_OPT_INT, 0,
                                     1000, 0, OFF(no_repeat_ngram_size), ALL, 1, 1,
                                     "no n-gram of size N occurs twice (default 0: off)"},
    [MT_OPT_REPETITION_PENALTY] = {"repetition_penalty", "--repetition-penalty", NULL, "R", MT_OPT_FLOAT, 1, 1000,
                                   0, OFF(repetition_penalty), ALL, 1, 1,
                                   "penalise generated tokens (default 1: off)"},
    [MT_OPT_MIN_LENGTH] = {"min_length", "--min-length", NULL, "N", MT_OPT_INT, 0, 1000000, 0, OFF(min_length),
                           ALL, 1, 1, "no end of sentence before N tokens (default 0)"},
    [MT_OPT_RETURN_SCORES] = {"return_scores", "--return-scores", NULL, NULL, MT_OPT_BOOL, 0, 1, 0,
                              OFF(return_scores), ALL, 1, 0, "per-token log-probabilities (with --output json)"},
    [MT_OPT_RETURN_ALIGNMENTS] = {"return_alignments", "--return-alignments", NULL, NULL, MT_OPT_BOOL, 0, 1, 0,
                                  OFF(return_alignments), ALL, 1, 0,
                                  "word and token alignments (with --output json)"},
    [MT_OPT_ALIGNMENT_LAYER] = {"alignment_layer", "--alignment-layer", NULL, "N", MT_OPT_INT, -1000, 999, 0,
                                OFF(alignment_layer), ALL, 1, 0,
                                "decoder layer that aligns, < 0 from the end (default -1)"},
    [MT_OPT_REPLACE_UNKNOWNS] = {"replace_unknowns", "--replace-unknowns", NULL, NULL, MT_OPT_BOOL, 0, 1, 0,
                                 OFF(replace_unknowns), ALL, 1, 0,
                                 "an <unk> in the output becomes its aligned source token"},
};

const mt_option_desc *mt_option(int id) { return id >= 0 && id < MT_OPT_COUNT ? &TABLE[id] : NULL; }

int mt_option_by_name(const char *name)
{
    for (int i = 0; i < MT_OPT_COUNT; i++)
        if (strcmp(TABLE[i].name, name) == 0) return i;
    return -1;
}

int mt_option_by_flag(const char *flag)
{
    for (int i = 0; i < MT_OPT_COUNT; i++)
        if (strcmp(TABLE[i].flag, flag) == 0 || (TABLE[i].alias && strcmp(TABLE[i].alias, flag) == 0)) return i;
    return -1;
}

double mt_option_get(const mt_search_options *o, int id)
{
    const char *p = (const char *)o + TABLE[id].offset;
    switch (TABLE[id].type) {
    case MT_OPT_FLOAT: return *(const float *)p;
    case MT_OPT_U64: return (double)*(const uint64_t *)p;
    default: return *(const int *)p;
    }
}

static void put(mt_search_options *o, int id, double x)
{
    char *p = (char *)o + TABLE[id].offset;
    switch (TABLE[id].type) {
    case MT_OPT_FLOAT: *(float *)p = (float)x; break;
    case MT_OPT_U64: *(uint64_t *)p = (uint64_t)x; break;
    default: *(int *)p = (int)x; break;
    }
}

int mt_option_check(int id, double x, double max_override, const char *label, char *err, size_t errlen)
{
    const mt_option_desc *d = &TABLE[id];
    double lo = d->min, hi = max_override > 0 && max_override < d->max ? max_override : d->max;
    int integral = d->type != MT_OPT_FLOAT;
    int ok = isfinite(x) && (d->min_open ? x > lo : x >= lo) && x <= hi && (!integral || x == floor(x));
    if (ok) return 0;
    if (d->type == MT_OPT_BOOL) return mt_error(-1, err, errlen, "%s must be true or false", label);
    if (d->min_open)
        return mt_error(-1, err, errlen, "%s must be a number in (%g, %g]", label, lo, hi);
    if (!integral) return mt_error(-1, err, errlen, "%s must be a number between %g and %g", label, lo, hi);
    return mt_error(-1, err, errlen, "%s must be an integer between %.0f and %.0f", label, lo, hi);
}

int mt_option_set(mt_decoding *d, int id, double x, double max_override, const char *label, char *err,
                  size_t errlen)
{
    if (mt_option_check(id, x, max_override, label, err, errlen)) return -1;
    put(&d->v, id, x);
    d->set |= 1u << id;
    return 0;
}

int mt_option_parse(mt_decoding *d, int id, const char *text, double max_override, const char *label,
                    char *err, size_t errlen)
{
    double x;
    if (TABLE[id].type == MT_OPT_BOOL) {
        if (!strcasecmp(text, "true") || !strcmp(text, "1")) x = 1;
        else if (!strcasecmp(text, "false") || !strcmp(text, "0")) x = 0;
        else return mt_error(-1, err, errlen, "%s must be true or false", label);
    } else {
        char *end;
        errno = 0;
        x = strtod(text, &end);
        while (*end == ' ') end++;
        if (end == text || *end || errno == ERANGE) x = NAN; /* mt_option_check names the range */
    }
    return mt_option_set(d, id, x, max_override, label, err, errlen);
}

void mt_decoding_merge(mt_decoding *dst, const mt_decoding *src)
{
    for (int i = 0; i < MT_OPT_COUNT; i++)
        if (src->set & (1u << i)) {
            put(&dst->v, i, mt_option_get(&src->v, i));
            if (TABLE[i].type == MT_OPT_U64) /* beyond 2^53 a double would round the seed */
                dst->v.seed = src->v.seed;
            dst->set |= 1u << i;
        }
}

int mt_options_same_batch(const mt_search_options *a, const mt_search_options *b)
{
    for (int i = 0; i < MT_OPT_COUNT; i++) {
        if (!TABLE[i].batch_key) continue;
        size_t size = TABLE[i].type == MT_OPT_U64 ? sizeof(uint64_t)
                      : TABLE[i].type == MT_OPT_FLOAT ? sizeof(float) : sizeof(int);
        if (memcmp((const char *)a + TABLE[i].offset, (const char *)b + TABLE[i].offset, size) != 0) return 0;
    }
    /* not options a caller sets through the table: target_prefix and sentence_index are
     * per sentence and travel with the items */
    return a->n_bad_ids == b->n_bad_ids && a->bad_ids == b->bad_ids && a->unk_id == b->unk_id;
}

size_t mt_options_key_size(void)
{
    size_t n = 0;
    for (int i = 0; i < MT_OPT_COUNT; i++)
        if (TABLE[i].cache_key) n += TABLE[i].type == MT_OPT_U64 ? 8 : 4;
    return n;
}

void mt_options_key(const mt_search_options *o, unsigned char *out)
{
    for (int i = 0; i < MT_OPT_COUNT; i++) {
        if (!TABLE[i].cache_key) continue;
        size_t size = TABLE[i].type == MT_OPT_U64 ? 8 : 4;
        memcpy(out, (const char *)o + TABLE[i].offset, size);
        out += size;
    }
}
