/* tokenizer.h: MarianTokenizer-compatible text <-> ids for an OPUS-MT model directory, and
 * the same over a CTranslate2 directory or argos-translate package read in place
 * (mt_tokenizer_load_ct2).
 *
 * Source side: SentencePiece (source.spm) splits text into pieces, vocab.json maps
 * pieces to ids (unknown piece -> unk id), eos is appended; a leading ">>xxx<<"
 * target-language token is kept as one token. Target side: ids -> pieces through the
 * target vocabulary (target_vocab.json when separate_vocabs), special tokens dropped,
 * pieces decoded by target.spm, remaining "\u2581" turned into spaces, result stripped.
 *
 * Thread-safety: an mt_tokenizer is read-only after load; encode/decode may be
 * called from any number of threads at once.
 *
 * Errors (status.h): mt_tokenizer_load returns NULL and the other calls a negative
 * mt_status (MT_ERR_INVALID), with a message in err[errlen] where they take one.
 */
#ifndef MT_TOKENIZER_H
#define MT_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "ct2_layout.h"

typedef struct mt_tokenizer mt_tokenizer;

/* Loads DIR/source.spm, DIR/target.spm, DIR/vocab.json (+ target_vocab.json) and
 * the special token ids from DIR/config.json and DIR/tokenizer_config.json. */
mt_tokenizer *mt_tokenizer_load(const char *dir, char *err, size_t errlen);

/* Loads the tokenizer of a CTranslate2 model where it lies (an argos-translate package or a
 * bare CTranslate2 directory, its files found by mt_ct2_layout_find); reads, never writes.
 * SentencePiece pieces map to the CTranslate2 vocabulary by string, as CTranslate2 and
 * argos-translate map them: a piece listed twice takes its first id, a piece not listed
 * config.json's unk_token. Encoding appends config.json's eos_token (the model drops it
 * when config.json's add_source_eos is false, so the source reads as CTranslate2 builds
 * it); decoding drops eos, unk, "<pad>" and ">>xx<<" tokens. This is the mapping `mt-models
 * install` writes into vocab.json and tokenizer_config.json, so a package loaded in place
 * and the same package installed give the same ids and the same text. Errors name the file
 * (a missing or invalid vocabulary, config.json or SentencePiece model). */
mt_tokenizer *mt_tokenizer_load_ct2(const mt_ct2_layout *layout, char *err, size_t errlen);
void mt_tokenizer_free(mt_tokenizer *tok);

/* Encodes UTF-8 text (len bytes) to source ids ending in eos. Writes at most cap ids;
 * returns the number of ids the full encoding has (may exceed cap: call again with a
 * bigger buffer), or -1 with a message in err (e.g. invalid UTF-8 at byte N). */
int mt_tokenizer_encode(const mt_tokenizer *tok, const char *text, size_t len,
                        int32_t *ids, int cap, char *err, size_t errlen);

/* Decodes target ids to UTF-8 text into out[cap] (NUL-terminated). Returns the text's
 * length in bytes (may be >= cap: call again bigger), or -1 with a message in err. */
int mt_tokenizer_decode(const mt_tokenizer *tok, const int32_t *ids, int n,
                        char *out, size_t cap, char *err, size_t errlen);

/* Id of a source-vocabulary token such as ">>deu<<", or -1 if absent. */
int mt_tokenizer_source_id(const mt_tokenizer *tok, const char *piece);

/* Encodes text with the target side (target.spm, target vocabulary), no eos: a
 * target_prefix. Same contract as mt_tokenizer_encode. */
int mt_tokenizer_encode_target(const mt_tokenizer *tok, const char *text, size_t len,
                               int32_t *ids, int cap, char *err, size_t errlen);

/* The piece of a source id, or of a target id that decoding keeps (NULL: none, or a
 * special token decoding drops); borrowed. Word boundaries of alignments come from the
 * pieces' leading "\u2581". */
const char *mt_tokenizer_source_piece(const mt_tokenizer *tok, int32_t id);
const char *mt_tokenizer_target_piece(const mt_tokenizer *tok, int32_t id);
/* The source id of pieces missing from the vocabulary (replace_unknowns). */
int32_t mt_tokenizer_unk_id(const mt_tokenizer *tok);

/* 1 when the source side spells the one UTF-8 character ch[0, n): encoding it alone gives
 * no unk id (after SentencePiece's normalisation: "ﬁ" reads as "fi"); 0 when the model
 * reads it as unknown: it encodes to the unk id ("✓", CJK in the shipped models), or it
 * is a symbol (currency, letterlike, number forms, arrows, maths, technical, shapes,
 * dingbats, super/subscripts, the Latin-1 signs and fractions) that normalisation turns
 * into other characters ("™" -> "TM", "²" -> "2": the model cannot write it back) or, in a
 * vocabulary without byte fallback, whose piece is rarer than log-probability -12.5, which
 * the model barely saw ("€", "£", "≤": the shipped en-de writes "665" for "€"). -1 when
 * ch[0, n) is not exactly one valid character. ASCII is always 1. Cheap: the characters
 * of the source vocabulary's pieces are judged at load; only others pay an encode. */
int mt_tokenizer_spells(const mt_tokenizer *tok, const char *ch, size_t n);

/* Target-language tokens (">>xxx<<") present in the source vocabulary, for
 * multilingual models: count, and the i-th token's text (borrowed). */
int mt_tokenizer_language_token_count(const mt_tokenizer *tok);
const char *mt_tokenizer_language_token(const mt_tokenizer *tok, int i);

#endif
