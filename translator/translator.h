/* translator.h: text in, text out. Joins a model, its tokenizer and its language pair,
 * and holds the pipeline that mt-translate and mt-server share: split a text into
 * lines and sentences, encode each sentence, search, decode, rejoin in order.
 *
 * Thread-safety: an mt_translator is read-only after load and shared by all threads;
 * the mt_state passed to mt_translator_translate belongs to the calling thread.
 */
#ifndef MT_TRANSLATOR_H
#define MT_TRANSLATOR_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "tokenizer.h"

typedef struct mt_translator mt_translator;

/* Loads the model and tokenizer in DIR. source_lang/target_lang may be NULL: they then
 * come from tokenizer_config.json ("source_lang"/"target_lang"). */
mt_translator *mt_translator_load(const char *dir, const char *source_lang,
                                  const char *target_lang, char *err, size_t errlen);
void mt_translator_free(mt_translator *tr);

const mt_model *mt_translator_model(const mt_translator *tr);
const mt_tokenizer *mt_translator_tokenizer(const mt_translator *tr);
const char *mt_translator_source_lang(const mt_translator *tr);
const char *mt_translator_target_lang(const mt_translator *tr);
const char *mt_translator_name(const mt_translator *tr); /* directory basename */

/* ---- segmentation: a text becomes an ordered list of pieces ---- */

/* Longest sentence, in source tokens, that segmentation lets through: half of what the
 * model can read and write (max positions, default max length), so that the translation
 * of a sentence is never cut short by the decoding limit. */
int mt_translator_max_source_tokens(const mt_translator *tr);

/* 1 when s[0, len) is valid UTF-8; else 0 with "invalid UTF-8 at byte N" in err. */
int mt_utf8_valid(const char *s, size_t len, char *err, size_t errlen);

typedef struct {
    size_t start, len;  /* byte range in the original text */
    int translate;      /* 1: a sentence to translate; 0: kept verbatim (newlines, spacing) */
} mt_segment;

/* Splits text into segments whose concatenation is exactly the text: every line
 * break and the whitespace between sentences are verbatim segments; sentences are
 * cut by rule (abbreviations, decimals, quotes) and further cut on a safe boundary so
 * none encodes to more than max_tokens source ids. Returns the segment count written
 * to *out (malloc'd, caller frees) or -1 with a message (invalid UTF-8, no memory). */
int mt_translator_segment(const mt_translator *tr, const char *text, size_t len,
                          int max_tokens, mt_segment **out, char *err, size_t errlen);

/* The same for an HTML fragment (format "html"): tags, comments and the content of
 * script, style, textarea and translate="no" / class="notranslate" elements are
 * verbatim segments; each text node is split into sentences as above (a newline inside
 * one is a space), and a node without words ("&nbsp;", " | ") stays verbatim. */
int mt_translator_segment_html(const mt_translator *tr, const char *html, size_t len,
                               int max_tokens, mt_segment **out, char *err, size_t errlen);

/* Encodes one sentence for this model (target-language token prepended when the
 * model is multilingual). ids: malloc'd, caller frees. Returns the count or -1. */
int mt_translator_encode(const mt_translator *tr, const char *sentence, size_t len,
                         int32_t **ids, char *err, size_t errlen);

/* Encodes a sentence of an HTML text node: character references ("&amp;", "&#233;")
 * are decoded first. */
int mt_translator_encode_html(const mt_translator *tr, const char *sentence, size_t len,
                              int32_t **ids, char *err, size_t errlen);

/* Decodes target ids to a malloc'd NUL-terminated string (caller frees); NULL on error. */
char *mt_translator_decode(const mt_translator *tr, const int32_t *ids, int n,
                           char *err, size_t errlen);

/* ---- rejoining: a text's translation from its sentences' hypotheses ---- */

/* One translated sentence: its hypotheses, best first, and their scores. */
typedef struct {
    char **texts;
    float *scores;
    int n;
} mt_sentence_hyps;

typedef enum {
    MT_JOIN_TEXT = 0,  /* hypotheses are inserted as they are */
    MT_JOIN_HTML = 1,  /* hypotheses are escaped (& < >) for an HTML text node */
    MT_JOIN_IDS = 2,   /* id lists: verbatim segments dropped, sentences joined by a space */
} mt_join_mode;

/* The k-th translation of a segmented text (the one rule every caller rejoins by):
 * verbatim segments are copied and the j-th segment to translate becomes sentences[j]'s
 * k-th hypothesis, or its last when it has fewer. *score: the mean of the used
 * hypotheses' scores (0 when none). Returns a malloc'd string (caller frees), or NULL
 * when out of memory. */
char *mt_translator_join(const char *text, const mt_segment *segs, int n_segs,
                         const mt_sentence_hyps *sentences, int k, mt_join_mode mode,
                         float *score);

/* ---- the whole pipeline, for callers that do not batch across requests ---- */

typedef struct {
    mt_search_options search;
    int max_batch;   /* sentences per search batch */
    int input_ids;   /* 1: each text is space-separated source ids (eos is appended), no splitting */
    int output_ids;  /* 1: results are the generated target ids ("12 7 9"), sentences joined by a space */
    int html;        /* 1: each text is an HTML fragment: markup kept, text nodes translated */
} mt_translate_options;

/* Defaults: the model's search defaults, batches of 32 sentences, text in and out. */
void mt_translate_options_default(const mt_translator *tr, mt_translate_options *opts);

typedef struct {
    int n_best;
    char **texts;   /* n_best translations, best first (malloc'd) */
    float *scores;  /* their normalised scores (mean over the text's sentences) */
} mt_translation;

/* Translates n texts: segments, sorts sentences by length into batches, searches,
 * rejoins. out[i] is filled for each text; free each with mt_translation_clear().
 * Returns 0 or -1 with a message (which text, what was wrong). */
int mt_translator_translate(const mt_translator *tr, mt_state *state, const mt_translate_options *opts, int n,
                            const char *const *texts, const size_t *lens, mt_translation *out, char *err,
                            size_t errlen);
void mt_translation_clear(mt_translation *t);

#endif
