/* ct2_layout.h: the files of a CTranslate2 model directory and of an argos-translate
 * package (LibreTranslate's models), read where they lie: which directory holds model.bin,
 * which SentencePiece model(s) cut the text, the language pair of the package's
 * metadata.json, the vocabularies (shared_vocabulary, or source_ and target_vocabulary;
 * .json or .txt) and the special tokens of config.json with CTranslate2's defaults.
 *
 * One reading for everyone that needs it: the engine's CTranslate2 loader (model/ct2.c),
 * the tokenizer of a model loaded in place (mt_tokenizer_load_ct2), the translator that
 * tells the layouts apart, and `mt-models install` (hub/argos.c), which writes the same
 * mapping into vocab.json: a package loaded in place and the same package installed map
 * pieces to ids alike.
 *
 * Layouts (mt_ct2_layout_find):
 *   an argos-translate package: DIR/metadata.json, DIR/sentencepiece.model, DIR/model/
 *     (model.bin, config.json, the vocabularies; model/source.spm and target.spm, when
 *     present, take the place of sentencepiece.model);
 *   a CTranslate2 directory: DIR/model.bin beside its vocabularies and a SentencePiece
 *     model (source.spm [+ target.spm], or sentencepiece.model), DIR/metadata.json
 *     optional (an unpacked package flattened into one directory, as hub/argos.c does).
 *
 * Nothing here writes: a read-only package loads. Thread-safety: no state; each call fills
 * the caller's structs. Errors: -1 with a message naming the file in err[errlen]; the
 * vocabulary readers return 1 (no message) where neither file exists. */
#ifndef MT_CT2_LAYOUT_H
#define MT_CT2_LAYOUT_H

#include <stddef.h>

enum { MT_CT2_PATH = 4096 };

/* A CTranslate2 vocabulary: token i is id i (a token may be listed twice; CTranslate2 maps
 * a string to its first id). */
typedef struct {
    char **tok;
    int n;
    char name[64];            /* "shared_vocabulary.json": the file's name, for messages */
} mt_ct2_vocab;

void mt_ct2_vocab_free(mt_ct2_vocab *v);
/* The first id of token s, or -1 (a linear search: for the few special tokens). */
int mt_ct2_vocab_find(const mt_ct2_vocab *v, const char *s);
/* dir/NAME.json (a list of strings) or dir/NAME.txt (one token a line), as CTranslate2
 * reads them: 0, 1 when neither file exists, -1 with a message (invalid, empty). */
int mt_ct2_vocab_read(const char *dir, const char *name, mt_ct2_vocab *v, char *err, size_t errlen);
/* The source and target vocabularies of dir: shared_vocabulary (*shared = 1, in src only),
 * or source_ and target_vocabulary (*shared = 0). -1 with a message naming what is
 * missing or broken; the caller frees both with mt_ct2_vocab_free. */
int mt_ct2_vocabs_load(const char *dir, mt_ct2_vocab *src, mt_ct2_vocab *tgt, int *shared, char *err,
                       size_t errlen);

/* The tokens of dir/config.json, with CTranslate2's defaults where it (or the whole file,
 * which CTranslate2 before 3.0 did not write) is absent. */
typedef struct {
    char eos[64], unk[64], start[64]; /* eos_token, unk_token, decoder_start_token */
    int has_start;                    /* 0: decoder_start_token is null */
    int add_source_bos, add_source_eos;
    int has_config;                   /* 0: no config.json */
} mt_ct2_tokens;
int mt_ct2_tokens_load(const char *dir, mt_ct2_tokens *t, char *err, size_t errlen);

typedef enum {
    MT_CT2_DIRECTORY = 1,      /* model.bin in DIR itself */
    MT_CT2_ARGOS_PACKAGE = 2,  /* DIR/metadata.json with DIR/model/model.bin */
} mt_ct2_kind;

typedef struct {
    mt_ct2_kind kind;
    char model_dir[MT_CT2_PATH];  /* model.bin, config.json and the vocabularies */
    char source_spm[MT_CT2_PATH]; /* encodes the source text */
    char target_spm[MT_CT2_PATH]; /* decodes the output (often the same file) */
    char from[16], to[16];        /* metadata.json's from_code / to_code; "" without one */
} mt_ct2_layout;

/* 1 when dir looks like one of the two layouts (model.bin, or an argos-translate package's
 * metadata.json, complete or not: mt_ct2_layout_find names what it lacks): cheap, no
 * message. */
int mt_ct2_layout_probe(const char *dir);
/* Fills *l for dir. -1 with a message when dir has no model.bin, no SentencePiece model, or
 * a metadata.json without valid from_code / to_code (letters, digits, '-', '_'). */
int mt_ct2_layout_find(const char *dir, mt_ct2_layout *l, char *err, size_t errlen);

#endif
