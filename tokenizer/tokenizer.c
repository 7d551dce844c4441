/* tokenizer.c: MarianTokenizer-compatible text <-> ids (see tokenizer.h); a CTranslate2
 * vocabulary read in place is loaded by load_ct2.c into the same struct (tokenizer_impl.h).
 *
 * Everything is built at load: the id -> piece tables, a piece -> id hash for the
 * source vocabulary, a per-id "dropped by decode" flag for the target vocabulary and
 * the sorted list of language tokens. Encode and decode only read the struct.
 */
#include "tokenizer.h"
#include "tokenizer_impl.h"
#include "status.h"
#include "utf8.h"

#include "spm_shim.h"

#include <jansson.h>

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/* ---- small helpers --------------------------------------------------------------- */

static uint32_t hash_bytes(const char *s, size_t n)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

/* Id of the piece s[0..n) in v, or -1. */
int32_t mt_tok_vocab_find(const struct vocab *v, const char *s, size_t n)
{
    uint32_t i = hash_bytes(s, n) & v->mask;
    for (;;) {
        int32_t id = v->slots[i];
        if (id < 0)
            return -1;
        const char *p = v->piece[id];
        if (strnlen(p, n + 1) == n && memcmp(p, s, n) == 0)
            return id;
        i = (i + 1) & v->mask;
    }
}

static bool is_lang_token(const char *p)
{
    size_t n = strlen(p);
    return n >= 5 && p[0] == '>' && p[1] == '>' && p[n - 2] == '<' && p[n - 1] == '<';
}

/* Length of the valid UTF-8 sequence at s[0..n), or 0 if invalid: util's validator. */
static size_t utf8_seq_len(const unsigned char *s, size_t n, uint32_t *cp)
{
    return (size_t)mt_utf8_len((const char *)s, n, cp);
}

/* Python's str.isspace(), which str.strip() uses. */
static bool is_py_space(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 ||
           c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
           c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* ---- JSON files ------------------------------------------------------------------ */

static int file_path(char *out, size_t cap, const char *dir, const char *name, char *err,
                     size_t errlen)
{
    int n = snprintf(out, cap, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= cap) {
        mt_error(MT_ERR_INVALID, err, errlen, "%s/%s: path too long", dir, name);
        return -1;
    }
    if (access(out, R_OK) != 0) {
        mt_error(MT_ERR_INVALID, err, errlen, "%s: missing or unreadable file (%s)", out, strerror(errno));
        return -1;
    }
    return 0;
}

static json_t *load_json_object(const char *path, char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (root == NULL) {
        mt_error(MT_ERR_INVALID, err, errlen, "%s: invalid JSON at line %d column %d: %s", path, je.line,
                je.column, je.text);
        return NULL;
    }
    if (!json_is_object(root)) {
        mt_error(MT_ERR_INVALID, err, errlen, "%s: expected a JSON object at the top level", path);
        json_decref(root);
        return NULL;
    }
    return root;
}

/* Optional non-negative integer field: *out = -1 when absent or null. */
static int json_opt_id(const json_t *obj, const char *key, int64_t *out, const char *path,
                       char *err, size_t errlen)
{
    const json_t *v = json_object_get(obj, key);
    *out = -1;
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) > INT32_MAX) {
        mt_error(MT_ERR_INVALID, err, errlen, "%s: \"%s\" must be a non-negative integer", path, key);
        return -1;
    }
    *out = json_integer_value(v);
    return 0;
}

/* Token text of a tokenizer_config.json field: a string, an AddedToken object with
 * "content", or absent/null (then def). */
static int json_token(const json_t *obj, const char *key, const char *def, const char **out,
                      const char *path, char *err, size_t errlen)
{
    const json_t *v = json_object_get(obj, key);
    if (v != NULL && json_is_object(v))
        v = json_object_get(v, "content");
    if (v == NULL || json_is_null(v)) {
        *out = def;
        return 0;
    }
    if (!json_is_string(v) || json_string_length(v) == 0) {
        mt_error(MT_ERR_INVALID, err, errlen, "%s: \"%s\" must be a non-empty string or {\"content\": ...}",
                path, key);
        return -1;
    }
    *out = json_string_value(v);
    return 0;
}

/* ---- vocabularies ---------------------------------------------------------------- */

void mt_tok_vocab_free(struct vocab *v)
{
    free(v->piece);
    free(v->arena);
    free(v->slots);
    memset(v, 0, sizeof(*v));
}

/* Room for size ids and n pieces of arena_bytes in all; the hash empty. */
int mt_tok_vocab_alloc(struct vocab *v, int32_t size, size_t n, size_t arena_bytes, const char *path, char *err,
                       size_t errlen)
{
    v->size = size;
    uint32_t nslots = 1;
    while (nslots < 2 * (uint32_t)n)
        nslots <<= 1;
    v->mask = nslots - 1;
    v->piece = calloc((size_t)size, sizeof(*v->piece));
    v->arena = malloc(arena_bytes);
    v->slots = malloc((size_t)nslots * sizeof(*v->slots));
    if (v->piece == NULL || v->arena == NULL || v->slots == NULL) {
        mt_error(MT_ERR_INVALID, err, errlen, "%s: out of memory", path);
        return -1;
    }
    memset(v->slots, 0xff, (size_t)nslots * sizeof(*v->slots)); /* all -1 */
    return 0;
}

/* Gives id the piece key (copied to *at, which advances) and, unless the piece already has
 * an id, hashes it to this one: the first id of a piece listed twice wins, as CTranslate2
 * maps strings to ids. */
void mt_tok_vocab_put(struct vocab *v, int32_t id, const char *key, char **at)
{
    size_t len = strlen(key);
    memcpy(*at, key, len + 1);
    v->piece[id] = *at;
    *at += len + 1;
    uint32_t i = hash_bytes(key, len) & v->mask;
    for (; v->slots[i] >= 0; i = (i + 1) & v->mask)
        if (strcmp(v->piece[v->slots[i]], key) == 0)
            return;
    v->slots[i] = id;
}

/* Loads path (an object piece -> id). size_limit >= 0 (config.json's vocabulary size)
 * bounds the ids; otherwise the ids must be below the number of entries. */
static int vocab_load(struct vocab *v, const char *path, int64_t size_limit, const char *limit_name,
                      char *err, size_t errlen)
{
    memset(v, 0, sizeof(*v));
    json_t *root = load_json_object(path, err, errlen);
    if (root == NULL)
        return -1;
    int rc = -1;
    size_t n = json_object_size(root);
    if (n == 0) {
        mt_error(MT_ERR_INVALID, err, errlen, "%s: the vocabulary is empty", path);
        goto done;
    }
    if (n > INT32_MAX / 4) {
        mt_error(MT_ERR_INVALID, err, errlen, "%s: too many entries (%zu)", path, n);
        goto done;
    }
    int64_t size = size_limit >= 0 ? size_limit : (int64_t)n;
    if (size_limit < 0)
        limit_name = "the number of entries";
    if (size > INT32_MAX / 4) {
        mt_error(MT_ERR_INVALID, err, errlen, "%s: vocabulary size %lld is too large", path, (long long)size);
        goto done;
    }
    if ((int64_t)n > size) {
        mt_error(MT_ERR_INVALID, err, errlen, "%s: %zu entries, more than the vocabulary size %lld (%s)", path,
                n, (long long)size, limit_name);
        goto done;
    }

    size_t arena_bytes = 0;
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val) {
        if (!json_is_integer(val)) {
            mt_error(MT_ERR_INVALID, err, errlen, "%s: the id of piece \"%.60s\" is not an integer", path, key);
            goto done;
        }
        json_int_t id = json_integer_value(val);
        if (id < 0) {
            mt_error(MT_ERR_INVALID, err, errlen, "%s: piece \"%.60s\" has negative id %lld", path, key,
                    (long long)id);
            goto done;
        }
        if (id >= size) {
            mt_error(MT_ERR_INVALID, err, errlen,
                    "%s: piece \"%.60s\" has id %lld, not below the vocabulary size %lld (%s)",
                    path, key, (long long)id, (long long)size, limit_name);
            goto done;
        }
        if (key[0] == '\0') {
            mt_error(MT_ERR_INVALID, err, errlen, "%s: empty piece (id %lld)", path, (long long)id);
            goto done;
        }
        arena_bytes += strlen(key) + 1;
    }

    if (mt_tok_vocab_alloc(v, (int32_t)size, n, arena_bytes, path, err, errlen) != 0)
        goto done;
    char *at = v->arena;
    json_object_foreach(root, key, val) {
        int32_t id = (int32_t)json_integer_value(val);
        if (v->piece[id] != NULL) {
            mt_error(MT_ERR_INVALID, err, errlen, "%s: pieces \"%.60s\" and \"%.60s\" both have id %d", path,
                    v->piece[id], key, (int)id);
            goto done;
        }
        mt_tok_vocab_put(v, id, key, &at); /* keys are unique (JSON_REJECT_DUPLICATES) */
    }
    rc = 0;
done:
    json_decref(root);
    if (rc != 0)
        mt_tok_vocab_free(v);
    return rc;
}

/* ---- load ------------------------------------------------------------------------ */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int build_target_skip(mt_tokenizer *tok, const struct specials *sp, const char *tgt_path,
                             char *err, size_t errlen)
{
    const struct vocab *t = tok->tgt;
    tok->tgt_skip = calloc((size_t)t->size, 1);
    if (tok->tgt_skip == NULL) {
        mt_error(MT_ERR_INVALID, err, errlen, "%s: out of memory", tgt_path);
        return -1;
    }
    const char *names[3] = {sp->eos, sp->unk, sp->pad};
    for (int i = 0; i < 3; i++) {
        int32_t id = mt_tok_vocab_find(t, names[i], strlen(names[i]));
        if (id >= 0)
            tok->tgt_skip[id] = 1;
    }
    if (sp->eos_id >= 0 && sp->eos_id < t->size)
        tok->tgt_skip[sp->eos_id] = 1;
    if (sp->pad_id >= 0 && sp->pad_id < t->size)
        tok->tgt_skip[sp->pad_id] = 1;
    size_t i;
    const json_t *e;
    json_array_foreach(sp->extra, i, e) {
        if (json_is_object(e))
            e = json_object_get(e, "content");
        if (json_is_string(e)) {
            int32_t id = mt_tok_vocab_find(t, json_string_value(e), json_string_length(e));
            if (id >= 0)
                tok->tgt_skip[id] = 1;
        }
    }
    for (int32_t id = 0; id < t->size; id++) {
        if (t->piece[id] != NULL && is_lang_token(t->piece[id]))
            tok->tgt_skip[id] = 1;
    }
    return 0;
}

static int build_lang_list(mt_tokenizer *tok, const char *path, char *err, size_t errlen)
{
    int n = 0;
    for (int32_t id = 0; id < tok->src.size; id++)
        if (tok->src.piece[id] != NULL && is_lang_token(tok->src.piece[id]))
            n++;
    if (n == 0)
        return 0;
    tok->lang = malloc((size_t)n * sizeof(*tok->lang));
    if (tok->lang == NULL) {
        mt_error(MT_ERR_INVALID, err, errlen, "%s: out of memory", path);
        return -1;
    }
    for (int32_t id = 0; id < tok->src.size; id++)
        if (tok->src.piece[id] != NULL && is_lang_token(tok->src.piece[id]))
            tok->lang[tok->n_lang++] = tok->src.piece[id];
    qsort(tok->lang, (size_t)n, sizeof(*tok->lang), cmp_str);
    return 0;
}

/* Resolves the id of a special token: config.json's id when given (it must agree with
 * vocab.json's entry for the token, if any), else vocab.json's entry. */
static int special_id(const mt_tokenizer *tok, const char *name, const char *key,
                      int64_t config_id, const char *vocab_path, const char *config_path,
                      int32_t *out, char *err, size_t errlen)
{
    int32_t vid = mt_tok_vocab_find(&tok->src, name, strlen(name));
    if (config_id >= 0) {
        if (config_id >= tok->src.size) {
            mt_error(MT_ERR_INVALID, err, errlen, "%s: %s %lld is not below the vocabulary size %d of %s",
                    config_path, key, (long long)config_id, (int)tok->src.size, vocab_path);
            return -1;
        }
        if (vid >= 0 && vid != config_id) {
            mt_error(MT_ERR_INVALID, err, errlen, "%s: %s is %lld but %s gives \"%s\" id %d", config_path, key,
                    (long long)config_id, vocab_path, name, (int)vid);
            return -1;
        }
        *out = (int32_t)config_id;
        return 0;
    }
    if (vid < 0) {
        mt_error(MT_ERR_INVALID, err, errlen, "%s: token \"%s\" not found (and %s has no %s)", vocab_path, name,
                config_path, key);
        return -1;
    }
    *out = vid;
    return 0;
}

/* What both loaders do once the vocabularies are in: the unknown and eos ids, the tokens
 * decoding drops, the language tokens, the SentencePiece models. 0 or -1 with a message. */
int mt_tok_finish_load(mt_tokenizer *tok, const struct specials *sp, const char *vocab_path,
                       const char *tgt_vocab_path, const char *cfg_path, const char *src_spm, const char *tgt_spm,
                       char *err, size_t errlen)
{
    int32_t unk = mt_tok_vocab_find(&tok->src, sp->unk, strlen(sp->unk));
    if (unk < 0) {
        mt_error(MT_ERR_INVALID, err, errlen, "%s: unknown token \"%s\" not found", vocab_path, sp->unk);
        return -1;
    }
    tok->unk_id = unk;
    if (special_id(tok, sp->eos, "eos_token_id", sp->eos_id, vocab_path, cfg_path, &tok->eos_id,
                   err, errlen) != 0)
        return -1;
    if (sp->pad_id >= 0 && sp->pad_id >= tok->tgt->size) {
        mt_error(MT_ERR_INVALID, err, errlen, "%s: pad_token_id %lld is not below the vocabulary size %d",
                cfg_path, (long long)sp->pad_id, (int)tok->tgt->size);
        return -1;
    }

    if (build_target_skip(tok, sp, tgt_vocab_path, err, errlen) != 0 ||
        build_lang_list(tok, vocab_path, err, errlen) != 0)
        return -1;

    if ((tok->src_spm = mt_spm_load(src_spm, err, errlen)) == NULL ||
        (tok->tgt_spm = mt_spm_load(tgt_spm, err, errlen)) == NULL)
        return -1;
    return mt_tok_build_spelled(tok, vocab_path, err, errlen);
}

mt_tokenizer *mt_tokenizer_load(const char *dir, char *err, size_t errlen)
{
    if (dir == NULL || dir[0] == '\0') {
        mt_error(MT_ERR_INVALID, err, errlen, "no model directory given");
        return NULL;
    }
    char src_spm[4096], tgt_spm[4096], vocab_path[4096], tvocab_path[4096], cfg_path[4096],
        tcfg_path[4096];
    if (file_path(cfg_path, sizeof cfg_path, dir, "config.json", err, errlen) != 0 ||
        file_path(tcfg_path, sizeof tcfg_path, dir, "tokenizer_config.json", err, errlen) != 0 ||
        file_path(vocab_path, sizeof vocab_path, dir, "vocab.json", err, errlen) != 0 ||
        file_path(src_spm, sizeof src_spm, dir, "source.spm", err, errlen) != 0 ||
        file_path(tgt_spm, sizeof tgt_spm, dir, "target.spm", err, errlen) != 0)
        return NULL;

    mt_tokenizer *tok = calloc(1, sizeof(*tok));
    json_t *cfg = NULL, *tcfg = NULL;
    if (tok == NULL) {
        mt_error(MT_ERR_INVALID, err, errlen, "%s: out of memory", dir);
        return NULL;
    }

    /* config.json: ids and sizes. */
    int64_t vocab_size, dec_vocab_size;
    struct specials sp = {0};
    if ((cfg = load_json_object(cfg_path, err, errlen)) == NULL ||
        json_opt_id(cfg, "eos_token_id", &sp.eos_id, cfg_path, err, errlen) != 0 ||
        json_opt_id(cfg, "pad_token_id", &sp.pad_id, cfg_path, err, errlen) != 0 ||
        json_opt_id(cfg, "vocab_size", &vocab_size, cfg_path, err, errlen) != 0 ||
        json_opt_id(cfg, "decoder_vocab_size", &dec_vocab_size, cfg_path, err, errlen) != 0)
        goto fail;
    if (dec_vocab_size < 0)
        dec_vocab_size = vocab_size;

    /* tokenizer_config.json: token names, separate_vocabs. */
    if ((tcfg = load_json_object(tcfg_path, err, errlen)) == NULL ||
        json_token(tcfg, "eos_token", "</s>", &sp.eos, tcfg_path, err, errlen) != 0 ||
        json_token(tcfg, "unk_token", "<unk>", &sp.unk, tcfg_path, err, errlen) != 0 ||
        json_token(tcfg, "pad_token", "<pad>", &sp.pad, tcfg_path, err, errlen) != 0)
        goto fail;
    const json_t *sep = json_object_get(tcfg, "separate_vocabs");
    if (sep != NULL && !json_is_boolean(sep) && !json_is_null(sep)) {
        mt_error(MT_ERR_INVALID, err, errlen, "%s: \"separate_vocabs\" must be true or false", tcfg_path);
        goto fail;
    }
    bool separate = json_is_true(sep);
    sp.extra = json_object_get(tcfg, "additional_special_tokens");
    if (sp.extra != NULL && !json_is_array(sp.extra) && !json_is_null(sp.extra)) {
        mt_error(MT_ERR_INVALID, err, errlen, "%s: \"additional_special_tokens\" must be an array", tcfg_path);
        goto fail;
    }

    if (vocab_load(&tok->src, vocab_path, vocab_size, "config.json vocab_size", err,
                   errlen) != 0)
        goto fail;
    tok->tgt = &tok->src;
    if (separate) {
        if (file_path(tvocab_path, sizeof tvocab_path, dir, "target_vocab.json", err,
                      errlen) != 0 ||
            vocab_load(&tok->tgt_own, tvocab_path, dec_vocab_size,
                       "config.json decoder_vocab_size", err, errlen) != 0)
            goto fail;
        tok->tgt = &tok->tgt_own;
    }

    if (mt_tok_finish_load(tok, &sp, vocab_path, separate ? tvocab_path : vocab_path, cfg_path, src_spm, tgt_spm, err,
                    errlen) != 0)
        goto fail;

    json_decref(cfg);
    json_decref(tcfg);
    return tok;
fail:
    json_decref(cfg);
    json_decref(tcfg);
    mt_tokenizer_free(tok);
    return NULL;
}

void mt_tokenizer_free(mt_tokenizer *tok)
{
    if (tok == NULL)
        return;
    mt_spm_free(tok->src_spm);
    mt_spm_free(tok->tgt_spm);
    mt_tok_vocab_free(&tok->src);
    mt_tok_vocab_free(&tok->tgt_own);
    free(tok->tgt_skip);
    free(tok->lang);
    free(tok->spelled);
    free(tok);
}

/* ---- encode ---------------------------------------------------------------------- */

struct encode_ctx {
    const mt_tokenizer *tok;
    int32_t *ids;
    size_t cap;
    size_t n; /* ids of the full encoding so far */
};

static void emit(struct encode_ctx *c, int32_t id)
{
    if (c->n < c->cap)
        c->ids[c->n] = id;
    c->n++;
}

static int on_piece(void *ctx, const char *piece, size_t len)
{
    struct encode_ctx *c = ctx;
    if (c->n >= (size_t)INT_MAX - 1)
        return 1;
    int32_t id = mt_tok_vocab_find(&c->tok->src, piece, len);
    emit(c, id >= 0 ? id : c->tok->unk_id);
    return 0;
}

/* 0 when text[0, len) is valid UTF-8, else -1 with the byte where it is not. */
static int check_utf8(const char *text, size_t len, char *err, size_t errlen)
{
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t k = utf8_seq_len(s + i, len - i, &cp);
        if (k == 0) {
            mt_error(MT_ERR_INVALID, err, errlen, "invalid UTF-8 at byte %zu", i);
            return -1;
        }
        i += k;
    }
    return 0;
}

int mt_tokenizer_encode(const mt_tokenizer *tok, const char *text, size_t len, int32_t *ids,
                        int cap, char *err, size_t errlen)
{
    if (tok == NULL || (text == NULL && len > 0) || (ids == NULL && cap > 0)) {
        mt_error(MT_ERR_INVALID, err, errlen, "invalid arguments to mt_tokenizer_encode");
        return -1;
    }
    if (check_utf8(text, len, err, errlen))
        return -1;

    struct encode_ctx c = {tok, ids, cap > 0 ? (size_t)cap : 0, 0};
    /* A leading target-language token ">>xxx<<" (MarianTokenizer's ">>.+?<<" at the
     * start) stays one token when the vocabulary has it. */
    if (len >= 5 && text[0] == '>' && text[1] == '>') {
        for (size_t i = 3; i + 1 < len; i++) {
            if (text[i] == '<' && text[i + 1] == '<') {
                int32_t id = mt_tok_vocab_find(&tok->src, text, i + 2);
                if (id >= 0) {
                    emit(&c, id);
                    text += i + 2;
                    len -= i + 2;
                }
                break;
            }
        }
    }
    if (len > 0) {
        char spm_err[256];
        if (mt_spm_encode(tok->src_spm, text, len, on_piece, &c, spm_err, sizeof spm_err) != 0) {
            if (spm_err[0] != '\0')
                mt_error(MT_ERR_INVALID, err, errlen, "%s", spm_err);
            else
                mt_error(MT_ERR_INVALID, err, errlen, "text too long: more than %d tokens", INT_MAX - 1);
            return -1;
        }
    }
    emit(&c, tok->eos_id);
    return (int)c.n;
}

/* ---- decode ---------------------------------------------------------------------- */

int mt_tokenizer_decode(const mt_tokenizer *tok, const int32_t *ids, int n, char *out,
                        size_t cap, char *err, size_t errlen)
{
    if (tok == NULL || n < 0 || (ids == NULL && n > 0) || (out == NULL && cap > 0)) {
        mt_error(MT_ERR_INVALID, err, errlen, "invalid arguments to mt_tokenizer_decode");
        return -1;
    }
    const struct vocab *t = tok->tgt;
    const char **pieces = malloc((size_t)(n > 0 ? n : 1) * sizeof(*pieces));
    if (pieces == NULL) {
        mt_error(MT_ERR_INVALID, err, errlen, "out of memory");
        return -1;
    }
    size_t np = 0;
    for (int i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= t->size || t->piece[id] == NULL) {
            mt_error(MT_ERR_INVALID, err, errlen, "token id %ld at position %d is not in the target vocabulary "
                    "(size %d)", (long)id, i, (int)t->size);
            free(pieces);
            return -1;
        }
        if (!tok->tgt_skip[id])
            pieces[np++] = t->piece[id];
    }

    char *text = NULL;
    size_t tlen = 0;
    if (np > 0) {
        text = mt_spm_decode(tok->tgt_spm, pieces, np, &tlen, err, errlen);
        if (text == NULL) {
            free(pieces);
            return -1;
        }
    }
    free(pieces);

    /* Remaining U+2581 (from pieces target.spm does not know) -> ' ', in place. */
    size_t w = 0;
    for (size_t r = 0; r < tlen;) {
        if (r + 2 < tlen && (unsigned char)text[r] == 0xE2 && (unsigned char)text[r + 1] == 0x96 &&
            (unsigned char)text[r + 2] == 0x81) {
            text[w++] = ' ';
            r += 3;
        } else {
            text[w++] = text[r++];
        }
    }
    tlen = w;

    /* Strip leading and trailing whitespace as Python's str.strip() does. */
    const unsigned char *u = (const unsigned char *)text;
    size_t b = 0, e = tlen;
    while (b < e) {
        uint32_t cp;
        size_t k = utf8_seq_len(u + b, e - b, &cp);
        if (k == 0 || !is_py_space(cp))
            break;
        b += k;
    }
    while (e > b) {
        size_t s = e - 1;
        while (s > b && (u[s] & 0xC0) == 0x80 && e - s < 4)
            s--;
        uint32_t cp;
        size_t k = utf8_seq_len(u + s, e - s, &cp);
        if (k != e - s || !is_py_space(cp))
            break;
        e = s;
    }
    size_t len = e - b;
    if (len > (size_t)INT_MAX - 1) {
        mt_error(MT_ERR_INVALID, err, errlen, "decoded text too long (%zu bytes)", len);
        free(text);
        return -1;
    }
    if (cap > 0) {
        size_t k = len < cap ? len : cap - 1;
        if (k > 0)
            memcpy(out, text + b, k);
        out[k] = '\0';
    }
    free(text);
    return (int)len;
}

/* ---- queries --------------------------------------------------------------------- */

int mt_tokenizer_source_id(const mt_tokenizer *tok, const char *piece)
{
    if (tok == NULL || piece == NULL)
        return -1;
    return mt_tok_vocab_find(&tok->src, piece, strlen(piece));
}

static int on_target_piece(void *ctx, const char *piece, size_t len)
{
    struct encode_ctx *c = ctx;
    if (c->n >= (size_t)INT_MAX - 1)
        return 1;
    int32_t id = mt_tok_vocab_find(c->tok->tgt, piece, len);
    emit(c, id >= 0 ? id : c->tok->unk_id);
    return 0;
}

int mt_tokenizer_encode_target(const mt_tokenizer *tok, const char *text, size_t len, int32_t *ids, int cap,
                               char *err, size_t errlen)
{
    if (check_utf8(text, len, err, errlen))
        return -1;
    struct encode_ctx c = {tok, ids, cap > 0 ? (size_t)cap : 0, 0};
    char spm_err[256] = "";
    if (len > 0 && mt_spm_encode(tok->tgt_spm, text, len, on_target_piece, &c, spm_err, sizeof spm_err) != 0) {
        mt_error(MT_ERR_INVALID, err, errlen, "%s", spm_err[0] ? spm_err : "text too long");
        return -1;
    }
    return (int)c.n;
}

const char *mt_tokenizer_source_piece(const mt_tokenizer *tok, int32_t id)
{
    return id >= 0 && id < tok->src.size ? tok->src.piece[id] : NULL;
}

const char *mt_tokenizer_target_piece(const mt_tokenizer *tok, int32_t id)
{
    if (id < 0 || id >= tok->tgt->size || tok->tgt_skip[id])
        return NULL;
    return tok->tgt->piece[id];
}

int32_t mt_tokenizer_unk_id(const mt_tokenizer *tok) { return tok->unk_id; }

int mt_tokenizer_language_token_count(const mt_tokenizer *tok)
{
    return tok != NULL ? tok->n_lang : 0;
}

const char *mt_tokenizer_language_token(const mt_tokenizer *tok, int i)
{
    if (tok == NULL || i < 0 || i >= tok->n_lang)
        return NULL;
    return tok->lang[i];
}
