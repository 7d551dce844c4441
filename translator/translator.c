/* translator.c: a model with its tokenizer and language pair, and the whole-text pipeline. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

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
        tr_error(err, errlen, "%s: %s (line %d); give the language pair explicitly", path, jerr.text, jerr.line);
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
        tr_error(err, errlen, "%s has no source_lang/target_lang; give the language pair explicitly", path);
        return -1;
    }
    return 0;
}

mt_translator *mt_translator_load(const char *dir, const char *source_lang, const char *target_lang, char *err,
                                  size_t errlen)
{
    mt_translator *tr = calloc(1, sizeof *tr);
    if (!tr) {
        tr_error(err, errlen, "out of memory");
        return NULL;
    }
    tr->target_token = -1;
    /* the model's name is its directory's basename: "models/en-de/" -> "en-de" */
    size_t end = strlen(dir);
    while (end > 1 && dir[end - 1] == '/')
        end--;
    size_t start = end;
    while (start > 0 && dir[start - 1] != '/')
        start--;
    tr->name = strndup(dir + start, end - start);
    tr->source_lang = dup_str(source_lang);
    tr->target_lang = dup_str(target_lang);
    if (!tr->name || ((!tr->source_lang || !tr->target_lang) &&
                          read_languages(dir, &tr->source_lang, &tr->target_lang, err, errlen))) {
        mt_translator_free(tr);
        return NULL;
    }
    tr->model = mt_model_load(dir, err, errlen);
    if (!tr->model) {
        mt_translator_free(tr);
        return NULL;
    }
    tr->tok = mt_tokenizer_load(dir, err, errlen);
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

int mt_translator_max_source_tokens(const mt_translator *tr)
{
    const mt_model_info *in = mt_model_get_info(tr->model);
    int limit = in->max_positions < in->default_max_length ? in->max_positions : in->default_max_length;
    limit /= 2;
    return limit < 16 ? 16 : limit;
}

int mt_translator_encode(const mt_translator *tr, const char *sentence, size_t len, int32_t **ids, char *err,
                         size_t errlen)
{
    int lead = tr->target_token >= 0 ? 1 : 0, cap = 64;
    *ids = NULL;
    for (;;) {
        int32_t *buf = malloc(sizeof *buf * (size_t)(cap + lead));
        if (!buf) {
            tr_error(err, errlen, "out of memory");
            return -1;
        }
        int n = mt_tokenizer_encode(tr->tok, sentence, len, buf + lead, cap, err, errlen);
        if (n < 0) {
            free(buf);
            return -1;
        }
        if (n <= cap) {
            if (lead)
                buf[0] = tr->target_token;
            *ids = buf;
            return n + lead;
        }
        free(buf);
        cap = n;
    }
}

int mt_translator_encode_html(const mt_translator *tr, const char *sentence, size_t len, int32_t **ids,
                              char *err, size_t errlen)
{
    size_t plain_len;
    char *plain = mt_html_unescape(sentence, len, &plain_len);
    if (!plain) {
        *ids = NULL;
        tr_error(err, errlen, "out of memory");
        return -1;
    }
    int n = mt_translator_encode(tr, plain, plain_len, ids, err, errlen);
    free(plain);
    return n;
}

char *mt_translator_decode(const mt_translator *tr, const int32_t *ids, int n, char *err, size_t errlen)
{
    size_t cap = 256;
    for (;;) {
        char *out = malloc(cap);
        if (!out) {
            tr_error(err, errlen, "out of memory");
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

/* ---- the whole pipeline ---- */

/* A sentence to translate; its hypotheses are in a parallel array (mt_sentence_hyps),
 * so that each text's run of them can be handed to mt_translator_join as it is. */
typedef struct {
    int text, segment;
    int32_t *ids;
    int len;
} sentence;

static int by_length_desc(const void *a, const void *b)
{
    const sentence *x = *(const sentence *const *)a, *y = *(const sentence *const *)b;
    if (x->len != y->len)
        return y->len - x->len;
    return (x->text - y->text) ? x->text - y->text : x->segment - y->segment;
}

static void free_sentences(sentence *s, mt_sentence_hyps *hyps, int n)
{
    for (int i = 0; s && i < n; i++)
        free(s[i].ids);
    for (int i = 0; hyps && i < n; i++) {
        for (int k = 0; k < hyps[i].n; k++)
            free(hyps[i].texts[k]);
        free(hyps[i].texts);
        free(hyps[i].scores);
    }
    free(s);
    free(hyps);
}

/* Searches the sentences (sorted by length) in batches and decodes their hypotheses. */
static char *format_ids(const int32_t *ids, int n)
{
    char *out = malloc((size_t)n * 12 + 1), *p = out;
    if (!out)
        return NULL;
    *p = 0;
    for (int i = 0; i < n; i++)
        p += sprintf(p, i ? " %d" : "%d", ids[i]);
    return out;
}

static int search_all(const mt_translator *tr, mt_state *state, const mt_translate_options *topts,
                      const sentence *sents, sentence **order, mt_sentence_hyps *hyps, int n, char *err,
                      size_t errlen)
{
    const mt_search_options *opts = &topts->search;
    int max_batch = topts->max_batch > 0 ? topts->max_batch : 1;
    const int32_t **src = malloc(sizeof *src * (size_t)(max_batch ? max_batch : 1));
    int *lens = malloc(sizeof *lens * (size_t)(max_batch ? max_batch : 1));
    mt_result *res = malloc(sizeof *res * (size_t)(max_batch ? max_batch : 1));
    int rc = 0;
    if (!src || !lens || !res) {
        tr_error(err, errlen, "out of memory");
        rc = -1;
    }
    for (int b = 0; !rc && b < n; b += max_batch) {
        int nb = n - b < max_batch ? n - b : max_batch;
        for (int i = 0; i < nb; i++) {
            src[i] = order[b + i]->ids;
            lens[i] = order[b + i]->len;
        }
        if (mt_translate_ids(state, opts, nb, src, lens, res)) {
            tr_error(err, errlen, "%s", mt_state_error(state));
            rc = -1;
            break;
        }
        for (int i = 0; i < nb && !rc; i++)
            if (res[i].status != MT_OK) {
                tr_error(err, errlen, "translation of text %d was cancelled", order[b + i]->text);
                rc = -1;
            }
        for (int i = 0; i < nb && !rc; i++) {
            mt_sentence_hyps *s = &hyps[order[b + i] - sents];
            s->texts = calloc((size_t)res[i].n_hyps + 1, sizeof *s->texts);
            s->scores = calloc((size_t)res[i].n_hyps + 1, sizeof *s->scores);
            if (!s->texts || !s->scores) {
                tr_error(err, errlen, "out of memory");
                rc = -1;
                break;
            }
            for (int k = 0; k < res[i].n_hyps; k++) {
                const mt_hypothesis *h = &res[i].hyps[k];
                s->texts[k] = topts->output_ids ? format_ids(h->ids, h->length)
                                                : mt_translator_decode(tr, h->ids, h->length, err, errlen);
                if (!s->texts[k]) {
                    if (topts->output_ids)
                        tr_error(err, errlen, "out of memory");
                    rc = -1;
                    break;
                }
                s->scores[k] = res[i].hyps[k].score;
                s->n = k + 1;
            }
        }
    }
    free(src);
    free(lens);
    free(res);
    return rc;
}

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

/* --input ids: the whole line is one sentence given as ids; eos is appended. */
static int parse_source_ids(const mt_translator *tr, const char *text, size_t len, int32_t **ids, char *err,
                            size_t errlen)
{
    const mt_model_info *in = mt_model_get_info(tr->model);
    int32_t *buf = malloc(sizeof *buf * (len / 2 + 2));
    int n = 0;
    if (!buf) {
        tr_error(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < len;) {
        if (text[i] == ' ' || text[i] == '\t') {
            i++;
            continue;
        }
        long v = 0;
        size_t start = i;
        while (i < len && text[i] >= '0' && text[i] <= '9' && v <= in->src_vocab_size)
            v = v * 10 + (text[i++] - '0');
        if (i == start || (i < len && text[i] != ' ' && text[i] != '\t') || v >= in->src_vocab_size) {
            tr_error(err, errlen, "bad source id at byte %zu: expected integers below %d", start, in->src_vocab_size);
            free(buf);
            return -1;
        }
        buf[n++] = (int32_t)v;
    }
    buf[n++] = in->eos_id;
    *ids = buf;
    return n;
}

void mt_translate_options_default(const mt_translator *tr, mt_translate_options *opts)
{
    memset(opts, 0, sizeof *opts);
    mt_search_options_default(tr->model, &opts->search);
    opts->max_batch = 32;
}

int mt_translator_translate(const mt_translator *tr, mt_state *state, const mt_translate_options *opts, int n,
                            const char *const *texts, const size_t *lens, mt_translation *out, char *err,
                            size_t errlen)
{
    memset(out, 0, sizeof *out * (size_t)n);
    mt_segment **segs = calloc((size_t)n + 1, sizeof *segs);
    int *n_segs = calloc((size_t)n + 1, sizeof *n_segs), *first = calloc((size_t)n + 1, sizeof *first);
    sentence *sents = NULL;
    sentence **order = NULL;
    mt_sentence_hyps *hyps = NULL;
    int n_sents = 0, rc = -1, max_tokens = mt_translator_max_source_tokens(tr);
    int n_best = opts->search.n_best;
    if (!segs || !n_segs || !first) {
        tr_error(err, errlen, "out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        if (opts->input_ids) { /* one sentence per non-empty line */
            n_segs[i] = lens[i] > 0;
            segs[i] = calloc(1, sizeof *segs[i]);
            if (!segs[i]) {
                tr_error(err, errlen, "out of memory");
                goto done;
            }
            segs[i][0] = (mt_segment){0, lens[i], 1};
        } else if (opts->html) {
            n_segs[i] = mt_translator_segment_html(tr, texts[i], lens[i], max_tokens, &segs[i], err, errlen);
        } else {
            n_segs[i] = mt_translator_segment(tr, texts[i], lens[i], max_tokens, &segs[i], err, errlen);
        }
        if (n_segs[i] < 0)
            goto done;
        first[i] = n_sents;
        for (int j = 0; j < n_segs[i]; j++)
            n_sents += segs[i][j].translate;
    }
    sents = calloc((size_t)n_sents + 1, sizeof *sents);
    order = calloc((size_t)n_sents + 1, sizeof *order);
    hyps = calloc((size_t)n_sents + 1, sizeof *hyps);
    if (!sents || !order || !hyps) {
        tr_error(err, errlen, "out of memory");
        goto done;
    }
    for (int i = 0, si = 0; i < n; i++)
        for (int j = 0; j < n_segs[i]; j++) {
            if (!segs[i][j].translate)
                continue;
            sentence *s = &sents[si];
            order[si++] = s;
            s->text = i;
            s->segment = j;
            s->len = opts->input_ids
                         ? parse_source_ids(tr, texts[i], lens[i], &s->ids, err, errlen)
                         : (opts->html ? mt_translator_encode_html : mt_translator_encode)(
                               tr, texts[i] + segs[i][j].start, segs[i][j].len, &s->ids, err, errlen);
            if (s->len < 0)
                goto done;
        }
    /* Similar lengths batch together: less padding work in attention, fewer idle rows. */
    qsort(order, (size_t)n_sents, sizeof *order, by_length_desc);
    if (search_all(tr, state, opts, sents, order, hyps, n_sents, err, errlen))
        goto done;
    for (int i = 0; i < n; i++) {
        out[i].n_best = n_best;
        out[i].texts = calloc((size_t)n_best, sizeof *out[i].texts);
        out[i].scores = calloc((size_t)n_best, sizeof *out[i].scores);
        if (!out[i].texts || !out[i].scores) {
            tr_error(err, errlen, "out of memory");
            goto done;
        }
        for (int k = 0; k < n_best; k++) {
            mt_join_mode mode = opts->output_ids ? MT_JOIN_IDS : opts->html ? MT_JOIN_HTML : MT_JOIN_TEXT;
            out[i].texts[k] = mt_translator_join(texts[i], segs[i], n_segs[i], hyps + first[i], k, mode,
                                                 &out[i].scores[k]);
            if (!out[i].texts[k]) {
                tr_error(err, errlen, "out of memory");
                goto done;
            }
        }
    }
    rc = 0;
done:
    if (rc)
        for (int i = 0; i < n; i++)
            mt_translation_clear(&out[i]);
    for (int i = 0; segs && i < n; i++)
        free(segs[i]);
    free(segs);
    free(n_segs);
    free(first);
    free_sentences(sents, hyps, n_sents);
    free(order);
    return rc;
}

void mt_translation_clear(mt_translation *t)
{
    for (int k = 0; t->texts && k < t->n_best; k++)
        free(t->texts[k]);
    free(t->texts);
    free(t->scores);
    memset(t, 0, sizeof *t);
}
