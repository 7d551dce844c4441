/* translator.c: a model with its tokenizer and language pair, and the whole-text pipeline. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

static char *dup_str(const char *s)
{
    char *d = s ? strdup(s) : NULL;
    return d;
}

/* source_lang / target_lang from tokenizer_config.json, when the caller gave none. */
static int read_languages(const char *dir, char **src, char **tgt, char *err, size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    json_error_t jerr;
    json_t *j = json_load_file(path, 0, &jerr);
    if (!j) {
        mt_error(-1, err, errlen, "%s: %s (line %d); give the language pair explicitly", path, jerr.text, jerr.line);
        return -1;
    }
    const char *s = json_string_value(json_object_get(j, "source_lang"));
    const char *t = json_string_value(json_object_get(j, "target_lang"));
    if (!*src && s)
        *src = dup_str(s);
    if (!*tgt && t)
        *tgt = dup_str(t);
    json_decref(j);
    if (!*src || !*tgt) {
        mt_error(-1, err, errlen, "%s has no source_lang/target_lang; give the language pair explicitly", path);
        return -1;
    }
    return 0;
}

/* The caller's pair against the one the model names (when it names one): its
 * tokenizer_config.json, or an argos-translate package's metadata.json (layout). */
static int check_pair(const mt_translator *tr, const char *dir, const mt_ct2_layout *layout, char *err,
                      size_t errlen)
{
    char *src = NULL, *tgt = NULL, e[8];
    if (layout && layout->from[0]) {
        src = dup_str(layout->from);
        tgt = dup_str(layout->to);
    } else if (layout || read_languages(dir, &src, &tgt, e, sizeof e)) { /* no pair named: any is taken */
        free(src), free(tgt);
        return 0;
    }
    if (!src || !tgt) {
        free(src), free(tgt);
        return mt_error(-1, err, errlen, "out of memory");
    }
    int bad = strcasecmp(src, tr->source_lang) != 0 || strcasecmp(tgt, tr->target_lang) != 0;
    if (bad)
        mt_error(-1, err, errlen, "model %s translates %s -> %s (its %s), not %s -> %s; "
                 "drop the language override or pick a model for that pair", dir, src, tgt,
                 layout ? "metadata.json" : "tokenizer_config.json", tr->source_lang, tr->target_lang);
    free(src), free(tgt);
    return bad ? -1 : 0;
}

/* Which loader reads dir: 0 a Marian directory (its tokenizer files all there; the weights
 * model.safetensors, or a CTranslate2 model.bin as `mt-models install` leaves it), 1 a
 * CTranslate2 directory or an argos-translate package read in place (ct2_layout.h), or -1
 * naming the files a directory lacks before any loader reads it: a folder that is not a
 * model would otherwise be reported as a JSON error in its tokenizer_config.json. The
 * weights are left to the model loader (it knows the formats); the loaders still check
 * every file they read. */
static int missing_files(const char *dir, char *err, size_t errlen)
{
    static const char *const files[] = {"config.json", "tokenizer_config.json", "vocab.json", "source.spm",
                                        "target.spm"};
    enum { N = sizeof files / sizeof *files };
    char path[4096], list[256] = "";
    int missing = 0;
    for (int i = 0; i < N; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        if (access(path, F_OK) == 0)
            continue;
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, "%s%s", missing ? ", " : "", files[i]);
        missing++;
    }
    /* The two layouts LibreTranslate users have on disk: read in place */
    if (missing && mt_ct2_layout_probe(dir))
        return 1;
    if (missing == N)
        return mt_error(-1, err, errlen, "%s is not a model directory: it has none of %s (the files of a Hugging "
                        "Face MarianMT / OPUS-MT model)", dir, list);
    if (missing)
        return mt_error(-1, err, errlen, "%s is not a complete model directory: %s missing", dir, list);
    return 0;
}

mt_translator *mt_translator_load(const char *dir, const char *source_lang, const char *target_lang, char *err,
                                  size_t errlen)
{
    return mt_translator_load_ex(dir, source_lang, target_lang, NULL, err, errlen);
}

mt_translator *mt_translator_load_ex(const char *dir, const char *source_lang, const char *target_lang,
                                     const mt_model_options *opts, char *err, size_t errlen)
{
    /* Said first: otherwise a mistyped path reads as a missing tokenizer_config.json. */
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        mt_error(-1, err, errlen, "model directory %s does not exist%s", dir,
                 stat(dir, &st) == 0 ? " (it is not a directory)" : "");
        return NULL;
    }
    int in_place = missing_files(dir, err, errlen);
    mt_ct2_layout layout;
    if (in_place < 0 || (in_place && mt_ct2_layout_find(dir, &layout, err, errlen)))
        return NULL;
    mt_translator *tr = calloc(1, sizeof *tr);
    if (!tr) {
        mt_error(-1, err, errlen, "out of memory");
        return NULL;
    }
    tr->target_token = -1;
    tr->format = !in_place ? "marian" : layout.kind == MT_CT2_ARGOS_PACKAGE ? "argos-package" : "ctranslate2";
    /* the model's name is its directory's basename: "models/en-de/" -> "en-de" */
    size_t end = strlen(dir);
    while (end > 1 && dir[end - 1] == '/')
        end--;
    size_t start = end;
    while (start > 0 && dir[start - 1] != '/')
        start--;
    tr->name = strndup(dir + start, end - start);
    tr->source_lang = dup_str(source_lang ? source_lang : in_place && layout.from[0] ? layout.from : NULL);
    tr->target_lang = dup_str(target_lang ? target_lang : in_place && layout.to[0] ? layout.to : NULL);
    if (in_place && (!tr->source_lang || !tr->target_lang)) {
        mt_error(-1, err, errlen, "%s is a CTranslate2 model without metadata.json naming its languages: give the "
                 "pair (--model %s:SRC:TGT, or --source-lang and --target-lang)", dir, dir);
        mt_translator_free(tr);
        return NULL;
    }
    if (!tr->name || ((!tr->source_lang || !tr->target_lang) &&
                          read_languages(dir, &tr->source_lang, &tr->target_lang, err, errlen))) {
        mt_translator_free(tr);
        return NULL;
    }
    tr->model = mt_model_load_ex(in_place ? layout.model_dir : dir, opts, err, errlen);
    if (!tr->model) {
        mt_translator_free(tr);
        return NULL;
    }
    tr->tok = in_place ? mt_tokenizer_load_ct2(&layout, err, errlen) : mt_tokenizer_load(dir, err, errlen);
    if (!tr->tok) {
        mt_translator_free(tr);
        return NULL;
    }
    /* Multilingual models pick their output language from a ">>xxx<<" source token. A
     * target the caller names must be one of them; the directory's own default target
     * may be a plain code ("pt" for >>por<</>>pob<<), which then selects no token. */
    int n_langs = mt_tokenizer_language_token_count(tr->tok);
    if (n_langs > 0) {
        char piece[64];
        snprintf(piece, sizeof piece, ">>%s<<", tr->target_lang);
        tr->target_token = mt_tokenizer_source_id(tr->tok, piece);
        if (tr->target_token < 0 && target_lang) {
            size_t used = (size_t)snprintf(err, errlen, "target language '%s' is not offered by this model; valid targets:",
                                           target_lang);
            for (int i = 0; i < n_langs && err && used < errlen; i++) {
                const char *t = mt_tokenizer_language_token(tr->tok, i); /* ">>xxx<<" */
                used += (size_t)snprintf(err + used, errlen - used, "%s %.*s", i ? "," : "", (int)strlen(t) - 4, t + 2);
            }
            mt_translator_free(tr);
            return NULL;
        }
    }
    /* A bilingual model translates the pair its tokenizer_config.json names: a pair the
     * caller gives (--target-lang, --model DIR:SRC:TGT) must agree with it, or the model
     * would silently output its own language under another name (issue 14). */
    if (n_langs == 0 && (source_lang || target_lang) && check_pair(tr, dir, in_place ? &layout : NULL, err, errlen)) {
        mt_translator_free(tr);
        return NULL;
    }
    return tr;
}

void mt_translator_free(mt_translator *tr)
{
    if (!tr)
        return;
    mt_tokenizer_free(tr->tok);
    mt_model_free(tr->model);
    free(tr->name);
    free(tr->source_lang);
    free(tr->target_lang);
    free(tr);
}

const mt_model *mt_translator_model(const mt_translator *tr) { return tr->model; }
const mt_tokenizer *mt_translator_tokenizer(const mt_translator *tr) { return tr->tok; }
const char *mt_translator_source_lang(const mt_translator *tr) { return tr->source_lang; }
const char *mt_translator_target_lang(const mt_translator *tr) { return tr->target_lang; }
const char *mt_translator_name(const mt_translator *tr) { return tr->name; }
const char *mt_translator_format(const mt_translator *tr) { return tr->format; }
const mt_model_info *mt_translator_model_info(const mt_translator *tr) { return mt_model_get_info(tr->model); }
const char *mt_translator_blas_name(void) { return mt_blas_core_name(); }

int mt_translator_max_source_tokens(const mt_translator *tr)
{
    const mt_model_info *in = mt_model_get_info(tr->model);
    int limit = in->max_positions < in->default_max_length ? in->max_positions : in->default_max_length;
    limit /= 2;
    return limit < 16 ? 16 : limit;
}

int mt_translator_target_count(const mt_translator *tr)
{
    return mt_tokenizer_language_token_count(tr->tok);
}

int mt_translator_target_code(const mt_translator *tr, int k, char *code, size_t cap)
{
    const char *t = mt_tokenizer_language_token(tr->tok, k);
    size_t tl = t ? strlen(t) : 0;
    if (tl < 5 || tl - 4 >= cap || strncmp(t, ">>", 2) != 0 || strcmp(t + tl - 2, "<<") != 0)
        return -1;
    snprintf(code, cap, "%.*s", (int)(tl - 4), t + 2);
    return 0;
}

int32_t mt_translator_target_token(const mt_translator *tr, const char *lang)
{
    if (!lang)
        return tr->target_token;
    char piece[64];
    snprintf(piece, sizeof piece, ">>%s<<", lang);
    return mt_translator_target_count(tr) > 0 ? mt_tokenizer_source_id(tr->tok, piece) : -1;
}

/* sentence[0, len) tokenized after target_token (when >= 0), growing the buffer until it fits. */
static int encode_plain(const mt_translator *tr, int32_t target_token, const char *sentence, size_t len,
                        int32_t **ids, char *err, size_t errlen)
{
    int lead = target_token >= 0 ? 1 : 0, cap = 64;
    *ids = NULL;
    for (;;) {
        int32_t *buf = malloc(sizeof *buf * (size_t)(cap + lead));
        if (!buf) {
            mt_error(-1, err, errlen, "out of memory");
            return -1;
        }
        int n = mt_tokenizer_encode(tr->tok, sentence, len, buf + lead, cap, err, errlen);
        if (n < 0) {
            free(buf);
            return -1;
        }
        if (n <= cap) {
            if (lead)
                buf[0] = target_token;
            *ids = buf;
            return n + lead;
        }
        free(buf);
        cap = n;
    }
}

int mt_translator_encode_to(const mt_translator *tr, int32_t target_token, int html, const char *sentence,
                            size_t len, int32_t **ids, char *err, size_t errlen)
{
    if (!html)
        return encode_plain(tr, target_token, sentence, len, ids, err, errlen);
    size_t plain_len;
    char *plain = mt_html_unescape(sentence, len, &plain_len);
    if (!plain) {
        *ids = NULL;
        mt_error(-1, err, errlen, "out of memory");
        return -1;
    }
    int n = encode_plain(tr, target_token, plain, plain_len, ids, err, errlen);
    free(plain);
    return n;
}

int mt_translator_encode(const mt_translator *tr, const char *sentence, size_t len, int32_t **ids, char *err,
                         size_t errlen)
{
    return mt_translator_encode_to(tr, tr->target_token, 0, sentence, len, ids, err, errlen);
}

int mt_translator_encode_html(const mt_translator *tr, const char *sentence, size_t len, int32_t **ids,
                              char *err, size_t errlen)
{
    return mt_translator_encode_to(tr, tr->target_token, 1, sentence, len, ids, err, errlen);
}

char *mt_translator_decode(const mt_translator *tr, const int32_t *ids, int n, char *err, size_t errlen)
{
    size_t cap = 256;
    for (;;) {
        char *out = malloc(cap);
        if (!out) {
            mt_error(-1, err, errlen, "out of memory");
            return NULL;
        }
        int len = mt_tokenizer_decode(tr->tok, ids, n, out, cap, err, errlen);
        if (len < 0) {
            free(out);
            return NULL;
        }
        if ((size_t)len < cap)
            return out;
        free(out);
        cap = (size_t)len + 1;
    }
}

/* ---- rejoining ---- */

char *mt_translator_join(const char *text, const mt_segment *segs, int n_segs,
                         const mt_sentence_hyps *sentences, int k, mt_join_mode mode, float *score)
{
    size_t len = 1;
    int n_scored = 0;
    *score = 0.0f;
    for (int j = 0, si = 0; j < n_segs; j++) {
        if (!segs[j].translate) {
            if (mode != MT_JOIN_IDS)
                len += segs[j].len;
            continue;
        }
        const mt_sentence_hyps *s = &sentences[si++];
        int h = k < s->n ? k : s->n - 1;
        len += mode == MT_JOIN_IDS; /* the space before it */
        if (h >= 0) {
            len += mode == MT_JOIN_HTML ? mt_html_escape(s->texts[h], NULL) : strlen(s->texts[h]);
            *score += s->scores[h];
            n_scored++;
        }
    }
    if (n_scored)
        *score /= (float)n_scored; /* a multi-sentence text scores the mean of its sentences */
    char *out = malloc(len), *p = out;
    if (!out)
        return NULL;
    for (int j = 0, si = 0; j < n_segs; j++) {
        if (!segs[j].translate) {
            if (mode != MT_JOIN_IDS) {
                memcpy(p, text + segs[j].start, segs[j].len);
                p += segs[j].len;
            }
            continue;
        }
        const mt_sentence_hyps *s = &sentences[si++];
        int h = k < s->n ? k : s->n - 1;
        if (mode == MT_JOIN_IDS && si > 1)
            *p++ = ' ';
        if (h >= 0 && mode == MT_JOIN_HTML) {
            p += mt_html_escape(s->texts[h], p);
        } else if (h >= 0) {
            size_t l = strlen(s->texts[h]);
            memcpy(p, s->texts[h], l);
            p += l;
        }
    }
    *p = 0;
    return out;
}
