/* load_ct2.c: mt_tokenizer_load_ct2 (tokenizer.h): the tokenizer of a CTranslate2 directory
 * or argos-translate package read where it lies. Its vocabularies and config.json tokens
 * come from ct2_layout.c, the reading `mt-models install` shares, so that a package loaded
 * in place and installed map pieces alike; the rest of the loading is tokenizer.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct2_layout.h"
#include "status.h"
#include "tokenizer_impl.h"

/* A CTranslate2 vocabulary (ct2_layout.h): token i is id i. */
static int vocab_from_ct2(struct vocab *v, const mt_ct2_vocab *c, const char *path, char *err, size_t errlen)
{
    memset(v, 0, sizeof(*v));
    size_t arena_bytes = 0;
    for (int i = 0; i < c->n; i++)
        arena_bytes += strlen(c->tok[i]) + 1;
    if (mt_tok_vocab_alloc(v, c->n, (size_t)c->n, arena_bytes, path, err, errlen) != 0) {
        mt_tok_vocab_free(v);
        return -1;
    }
    char *at = v->arena;
    for (int i = 0; i < c->n; i++)
        mt_tok_vocab_put(v, i, c->tok[i], &at);
    return 0;
}

mt_tokenizer *mt_tokenizer_load_ct2(const mt_ct2_layout *layout, char *err, size_t errlen)
{
    if (layout == NULL || layout->model_dir[0] == '\0') {
        mt_error(MT_ERR_INVALID, err, errlen, "no CTranslate2 model directory given");
        return NULL;
    }
    const char *dir = layout->model_dir;
    mt_ct2_tokens tokens;
    mt_ct2_vocab src = {0}, tgt = {0};
    int shared = 0;
    if (mt_ct2_tokens_load(dir, &tokens, err, errlen) != 0 ||
        mt_ct2_vocabs_load(dir, &src, &tgt, &shared, err, errlen) != 0)
        return NULL;
    char cfg_path[MT_CT2_PATH + 16], vocab_path[MT_CT2_PATH + 80], tvocab_path[MT_CT2_PATH + 80];
    snprintf(cfg_path, sizeof cfg_path, "%s/config.json", dir);
    snprintf(vocab_path, sizeof vocab_path, "%s/%s", dir, src.name);
    snprintf(tvocab_path, sizeof tvocab_path, "%s/%s", dir, shared ? src.name : tgt.name);
    /* The special tokens as `mt-models install` writes them into tokenizer_config.json:
     * config.json's eos and unk, "<pad>" (absent from CTranslate2 vocabularies: no-op). */
    struct specials sp = {.eos = tokens.eos, .unk = tokens.unk, .pad = "<pad>", .eos_id = -1, .pad_id = -1};
    mt_tokenizer *tok = calloc(1, sizeof(*tok));
    if (tok == NULL)
        mt_error(MT_ERR_INVALID, err, errlen, "%s: out of memory", dir);
    int rc = tok == NULL || vocab_from_ct2(&tok->src, &src, vocab_path, err, errlen) != 0 ? -1 : 0;
    if (rc == 0) {
        tok->tgt = &tok->src;
        if (!shared) {
            rc = vocab_from_ct2(&tok->tgt_own, &tgt, tvocab_path, err, errlen);
            tok->tgt = &tok->tgt_own;
        }
    }
    mt_ct2_vocab_free(&src);
    mt_ct2_vocab_free(&tgt);
    if (rc == 0)
        rc = mt_tok_finish_load(tok, &sp, vocab_path, tvocab_path, cfg_path, layout->source_spm, layout->target_spm, err,
                         errlen);
    if (rc != 0) {
        mt_tokenizer_free(tok);
        return NULL;
    }
    return tok;
}
