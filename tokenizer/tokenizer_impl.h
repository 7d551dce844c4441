/* tokenizer_impl.h: the tokenizer's struct and the steps of its loading that both loaders
 * share (private to tokenizer/): tokenizer.c reads a Marian directory (vocab.json ...),
 * load_ct2.c a CTranslate2 vocabulary in place (ct2_layout.h). Same rules as tokenizer.h:
 * errors -1 with a message naming the file; a loaded tokenizer is read-only. */
#ifndef MT_TOKENIZER_IMPL_H
#define MT_TOKENIZER_IMPL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "spm_shim.h"
#include "tokenizer.h"

/* One vocabulary file (vocab.json or target_vocab.json). */
struct vocab {
    int32_t size;       /* ids are 0 .. size-1 */
    const char **piece; /* (size) id -> piece, NULL where no piece has that id; into arena */
    char *arena;        /* every piece, NUL-terminated, back to back */
    int32_t *slots;     /* (mask+1) open-addressing hash of ids by piece, -1 = empty */
    uint32_t mask;
};

struct mt_tokenizer {
    mt_spm *src_spm;          /* source.spm: encode */
    mt_spm *tgt_spm;          /* target.spm: decode */
    struct vocab src;         /* vocab.json */
    struct vocab tgt_own;     /* target_vocab.json, only with separate_vocabs */
    const struct vocab *tgt;  /* &src, or &tgt_own with separate_vocabs */
    int32_t eos_id;           /* appended by encode */
    int32_t unk_id;           /* source id of pieces missing from vocab.json */
    unsigned char *tgt_skip;  /* (tgt->size) 1 = decode drops this id (specials, >>xx<<) */
    const char **lang;        /* (n_lang) ">>xxx<<" pieces of the source vocab, sorted */
    int n_lang;
    uint32_t *spelled;        /* (n_spelled) non-ASCII code points of source pieces, sorted,
                               * each with its verdict (spells.c) */
    size_t n_spelled;
    int rare_symbols;         /* no byte fallback: a symbol with a rare piece is unknown */
};

/* Special-token names and ids: a Marian directory's config.json and tokenizer_config.json, or a
 * CTranslate2 config.json's tokens. */
struct specials {
    const char *eos, *unk, *pad;  /* token texts (borrowed from the tokenizer_config JSON or ct2 tokens) */
    int64_t eos_id, pad_id;       /* config.json, -1 if absent */
    const json_t *extra;          /* tokenizer_config additional_special_tokens, or NULL */
};

/* Room for size ids and n pieces of arena_bytes in all; the hash empty. */
int mt_tok_vocab_alloc(struct vocab *v, int32_t size, size_t n, size_t arena_bytes, const char *path, char *err,
                       size_t errlen);
/* Gives id the piece key (copied to *at, which advances) and, unless the piece already has
 * an id, hashes it to this one: the first id of a piece listed twice wins, as CTranslate2
 * maps strings to ids. */
void mt_tok_vocab_put(struct vocab *v, int32_t id, const char *key, char **at);
void mt_tok_vocab_free(struct vocab *v);
/* Id of the piece s[0..n) in v, or -1. */
int32_t mt_tok_vocab_find(const struct vocab *v, const char *s, size_t n);
/* spells.c: tok->spelled from the source vocabulary (needs src and src_spm loaded).
 * 0, or -1 with a message naming vocab_path. */
int mt_tok_build_spelled(mt_tokenizer *tok, const char *vocab_path, char *err, size_t errlen);
/* What both loaders do once the vocabularies are in: the unknown and eos ids, the tokens
 * decoding drops, the language tokens, the SentencePiece models. 0 or -1 with a message. */
int mt_tok_finish_load(mt_tokenizer *tok, const struct specials *sp, const char *vocab_path,
                       const char *tgt_vocab_path, const char *cfg_path, const char *src_spm, const char *tgt_spm,
                       char *err, size_t errlen);

#endif
