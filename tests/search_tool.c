/* search-tool MODEL_DIR [KEY=VALUE...]: mt_translate_ids with decoding controls, for
 * tests/test_decoding_vs_reference.py. Reads lines "SRC_IDS[<TAB>PREFIX_IDS]" (SRC_IDS
 * end in eos; PREFIX_IDS is the target_prefix, without the start token), translates
 * them all in one batch and prints per hypothesis "LINE<TAB>IDS<TAB>SCORE".
 * Keys: beam, n_best, max_length, length_penalty, sampling_topk, sampling_topp,
 * sampling_temperature, seed, no_repeat_ngram_size, repetition_penalty, min_length,
 * replace_unknowns, unk_id, return_scores, return_alignments, alignment_layer (extra columns: the token log-probs,
 * eos's last, then the alignment), index_base (sentence i gets index index_base + i),
 * reverse=1 (batch in reverse order, output still in input order). Exit 2 on invalid options, with the engine's message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

enum { MAX_LINES = 512, MAX_IDS = 1024 };

static int parse_ids(char *s, int32_t *ids, int cap)
{
    int n = 0;
    for (char *tok = strtok(s, " "); tok && n < cap; tok = strtok(NULL, " "))
        ids[n++] = (int32_t)strtol(tok, NULL, 10);
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: search-tool MODEL_DIR [KEY=VALUE...] < lines\n");
        return 2;
    }
    char err[512];
    mt_model *m = mt_model_load(argv[1], err, sizeof err);
    if (!m) {
        fprintf(stderr, "search-tool: %s\n", err);
        return 1;
    }
    mt_search_options o;
    mt_search_options_default(m, &o);
    int reverse = 0;
    uint64_t index_base = 0;
    for (int i = 2; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq) {
            fprintf(stderr, "search-tool: %s: expected KEY=VALUE\n", argv[i]);
            return 2;
        }
        *eq = 0;
        const char *k = argv[i], *v = eq + 1;
        if (!strcmp(k, "beam")) o.beam_size = atoi(v);
        else if (!strcmp(k, "n_best")) o.n_best = atoi(v);
        else if (!strcmp(k, "max_length")) o.max_length = atoi(v);
        else if (!strcmp(k, "length_penalty")) o.length_penalty = strtof(v, NULL);
        else if (!strcmp(k, "sampling_topk")) o.sampling_topk = atoi(v);
        else if (!strcmp(k, "sampling_topp")) o.sampling_topp = strtof(v, NULL);
        else if (!strcmp(k, "sampling_temperature")) o.sampling_temperature = strtof(v, NULL);
        else if (!strcmp(k, "seed")) o.seed = strtoull(v, NULL, 10);
        else if (!strcmp(k, "no_repeat_ngram_size")) o.no_repeat_ngram_size = atoi(v);
        else if (!strcmp(k, "repetition_penalty")) o.repetition_penalty = strtof(v, NULL);
        else if (!strcmp(k, "min_length")) o.min_length = atoi(v);
        else if (!strcmp(k, "return_scores")) o.return_scores = atoi(v);
        else if (!strcmp(k, "return_alignments")) o.return_alignments = atoi(v);
        else if (!strcmp(k, "alignment_layer")) o.alignment_layer = atoi(v);
        else if (!strcmp(k, "replace_unknowns")) o.replace_unknowns = atoi(v);
        else if (!strcmp(k, "unk_id")) o.unk_id = atoi(v);
        else if (!strcmp(k, "index_base")) index_base = strtoull(v, NULL, 10);
        else if (!strcmp(k, "reverse")) reverse = atoi(v);
        else {
            fprintf(stderr, "search-tool: unknown key %s\n", k);
            return 2;
        }
    }
    static char line[1 << 16];
    static int32_t ids[MAX_LINES][MAX_IDS], pre[MAX_LINES][MAX_IDS];
    static int lens[MAX_LINES], plens[MAX_LINES];
    int n = 0, any_prefix = 0;
    while (n < MAX_LINES && fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = 0;
        char *tab = strchr(line, '\t');
        if (tab)
            *tab = 0;
        lens[n] = parse_ids(line, ids[n], MAX_IDS);
        plens[n] = tab ? parse_ids(tab + 1, pre[n], MAX_IDS) : 0;
        any_prefix |= plens[n] > 0;
        n++;
    }
    /* The batch, possibly reversed: sentence_index keeps each line's own random numbers. */
    const int32_t *src[MAX_LINES], *prefix[MAX_LINES];
    int blens[MAX_LINES], bplens[MAX_LINES], line_of[MAX_LINES];
    uint64_t index[MAX_LINES];
    for (int b = 0; b < n; b++) {
        int l = reverse ? n - 1 - b : b;
        line_of[b] = l;
        src[b] = ids[l];
        blens[b] = lens[l];
        prefix[b] = pre[l];
        bplens[b] = plens[l];
        index[b] = index_base + (uint64_t)l;
    }
    o.sentence_index = index;
    if (any_prefix) {
        o.target_prefix = prefix;
        o.target_prefix_len = bplens;
    }
    mt_state *st = mt_state_create(m, 2, err, sizeof err);
    if (!st) {
        fprintf(stderr, "search-tool: %s\n", err);
        return 1;
    }
    static mt_result res[MAX_LINES];
    int rc = mt_translate_ids(st, &o, n, src, blens, res);
    if (rc) {
        fprintf(stderr, "search-tool: %s\n", mt_state_error(st));
        mt_state_free(st);
        mt_model_free(m);
        return rc == MT_ERR_INVALID ? 2 : 1;
    }
    for (int l = 0; l < n; l++)
        for (int b = 0; b < n; b++) {
            if (line_of[b] != l)
                continue;
            for (int h = 0; h < res[b].n_hyps; h++) {
                printf("%d\t", l);
                for (int i = 0; i < res[b].hyps[h].length; i++)
                    printf(i ? " %d" : "%d", res[b].hyps[h].ids[i]);
                printf("\t%.6f", res[b].hyps[h].score);
                const mt_hypothesis *y = &res[b].hyps[h];
                if (y->token_scores)
                    for (int i = 0; i <= y->length; i++)
                        printf(i ? " %.6f" : "\t%.6f", y->token_scores[i]);
                if (y->alignment) {
                    printf("\t");
                    for (int i = 0; i < y->length; i++)
                        printf(i ? " %d" : "%d", y->alignment[i]);
                }
                printf("\n");
            }
        }
    mt_state_free(st);
    mt_model_free(m);
    return 0;
}
