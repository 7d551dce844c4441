/* model-probe MODEL_DIR OUT.bin: for kernel checks against tools/reference.py --probe.
 * Reads lines "SRC_IDS<TAB>PREFIX_IDS" (space-separated; SRC_IDS end in eos, PREFIX starts
 * with the decoder start token) and appends, per line, float32 encoder output
 * [src_len, d_model] then decoder logits [prefix_len, tgt_vocab] to OUT.bin. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "../model/probe.h"

static int parse_ids(char *s, int32_t *ids, int cap)
{
    int n = 0;
    for (char *tok = strtok(s, " "); tok && n < cap; tok = strtok(NULL, " "))
        ids[n++] = (int32_t)strtol(tok, NULL, 10);
    return n;
}

int main(int argc, char **argv)
{
    mt_process_setup(NULL, NULL);
    if (argc != 3) {
        fprintf(stderr, "usage: model-probe MODEL_DIR OUT.bin < lines\n");
        return 2;
    }
    char err[512];
    mt_model *m = mt_model_load(argv[1], err, sizeof err);
    if (!m) {
        fprintf(stderr, "model-probe: %s\n", err);
        return 1;
    }
    mt_state *st = mt_state_create(m, 1, err, sizeof err);
    FILE *out = fopen(argv[2], "wb");
    if (!st || !out) {
        fprintf(stderr, "model-probe: cannot start: %s\n", st ? argv[2] : err);
        return 1;
    }
    const mt_model_info *in = mt_model_get_info(m);
    static char line[1 << 20];
    static int32_t src[4096], prefix[4096];
    int rc = 0;
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = 0;
        char *tab = strchr(line, '\t');
        if (!tab) {
            fprintf(stderr, "model-probe: line without a tab\n");
            rc = 1;
            break;
        }
        *tab = 0;
        int ns = parse_ids(line, src, 4096), np = parse_ids(tab + 1, prefix, 4096);
        float *enc = malloc(sizeof(float) * (size_t)ns * (size_t)in->d_model);
        float *logits = malloc(sizeof(float) * (size_t)np * (size_t)in->tgt_vocab_size);
        if (!enc || !logits || mt_encode_one(st, src, ns, enc) ||
            mt_decoder_logits(st, src, ns, prefix, np, logits)) {
            fprintf(stderr, "model-probe: %s\n", mt_state_error(st));
            free(enc);
            free(logits);
            rc = 1;
            break;
        }
        fwrite(enc, sizeof(float), (size_t)ns * (size_t)in->d_model, out);
        fwrite(logits, sizeof(float), (size_t)np * (size_t)in->tgt_vocab_size, out);
        free(enc);
        free(logits);
    }
    fclose(out);
    mt_state_free(st);
    mt_model_free(m);
    return rc;
}
