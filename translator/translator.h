/* translator.h: a model with its tokenizer and language pair, and the steps of the text
 * pipeline: split a text into lines and sentences, encode a sentence (target-language
 * token included), decode ids, rejoin a text from its sentences' hypotheses. The
 * pipeline that runs these steps with batching and workers is the service (service.h),
 * which mt-translate and mt-server both use.
 *
 * Thread-safety: an mt_translator is read-only after load and shared by all threads;
 * every function here may be called from any thread.
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
/* The same with model options (compute type); opts NULL: the defaults. */
mt_translator *mt_translator_load_ex(const char *dir, const char *source_lang, const char *target_lang,
                                     const mt_model_options *opts, char *err, size_t errlen);
void mt_translator_free(mt_translator *tr);

const mt_model *mt_translator_model(const mt_translator *tr);
const mt_tokenizer *mt_translator_tokenizer(const mt_translator *tr);
const char *mt_translator_source_lang(const mt_translator *tr);
const char *mt_translator_target_lang(const mt_translator *tr);
const char *mt_translator_name(const mt_translator *tr); /* directory basename */
/* How the directory was read: "marian" (the Marian tokenizer files, the weights
 * model.safetensors or an installed CTranslate2 model.bin), "argos-package" or
 * "ctranslate2" (read in place: ct2_layout.h). A string constant. */
const char *mt_translator_format(const mt_translator *tr);
const mt_model_info *mt_translator_model_info(const mt_translator *tr); /* dimensions, defaults */
const char *mt_translator_blas_name(void); /* the BLAS kernels in use ("SkylakeX") */

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

/* The text as one sentence: its leading and trailing whitespace verbatim, the rest one
 * segment whose line breaks are rewritten as spaces in text (the bytes change, not the
 * length). When that sentence encodes to more than max_tokens source ids, the text is left
 * as it is and segmented as mt_translator_segment does. Same result convention. */
int mt_translator_segment_whole(const mt_translator *tr, char *text, size_t len, int max_tokens,
                                mt_segment **out, char *err, size_t errlen);

/* The same for an HTML fragment (format "html"): tags, comments and the content of
 * script, style, textarea and translate="no" / class="notranslate" elements are
 * verbatim segments; each text node is split into sentences as above (a newline inside
 * one is a space), and a node without words ("&nbsp;", " | ") stays verbatim. */
int mt_translator_segment_html(const mt_translator *tr, const char *html, size_t len,
                               int max_tokens, mt_segment **out, char *err, size_t errlen);

/* ---- multilingual models: targets selected by a ">>xxx<<" source token ---- */

/* Number of target languages selected by a language token (0: not multilingual). */
int mt_translator_target_count(const mt_translator *tr);
/* The k-th such target's code ("fra" for ">>fra<<") into code[cap]; 0, or -1 when the
 * token is not of that form or does not fit. */
int mt_translator_target_code(const mt_translator *tr, int k, char *code, size_t cap);
/* Source id of ">>lang<<", or -1. lang NULL: the token of the translator's own target
 * (the one mt_translator_encode prepends), or -1 when it has none. */
int32_t mt_translator_target_token(const mt_translator *tr, const char *lang);

/* Encodes one sentence (html: of an HTML text node, character references decoded first)
 * with target_token prepended when >= 0: the one place a language token is added.
 * ids: malloc'd, caller frees. Returns the count or -1. */
int mt_translator_encode_to(const mt_translator *tr, int32_t target_token, int html,
                            const char *sentence, size_t len, int32_t **ids, char *err,
                            size_t errlen);

/* Encodes one sentence for this model (the own target's token prepended when the
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

#endif
