/* models_dir.h: the models of a models directory, as mt-server --models-dir serves them,
 * mt-translate --models-dir picks one of them and `mt-models list` shows them: every
 * subdirectory that is a model, in name order, with its language pair.
 *
 * A model is a subdirectory with config.json (as mt-models install puts them there: Marian,
 * or a CTranslate2 directory) or an unpacked argos-translate package (metadata.json and
 * model/model.bin, as ~/.local/share/argos-translate/packages/ holds them; the engine reads
 * it in place). Its pair: tokenizer_config.json's source_lang / target_lang, else
 * metadata.json's from_code / to_code ("" where neither says).
 *
 * Only reads. Thread-safety: no state; each call fills the caller's list. Errors: -1 with a
 * message in err[errlen] (a directory that cannot be read; out of memory). Ownership: the
 * caller frees the list with mt_models_dir_free. */
#ifndef MT_MODELS_DIR_H
#define MT_MODELS_DIR_H

#include <stddef.h>

typedef enum {
    MT_MODELS_INSTALLED = 1,     /* DIR/NAME/config.json */
    MT_MODELS_ARGOS_PACKAGE = 2, /* DIR/NAME/metadata.json and DIR/NAME/model/model.bin, used in place */
} mt_models_kind;

typedef struct {
    char *name;                  /* the subdirectory's name */
    char *path;                  /* DIR/NAME */
    mt_models_kind kind;
    char source[16], target[16]; /* the pair, "" where the model's files do not say */
} mt_models_entry;

/* The models of dir (see above) into *out[*n], sorted by name; *n may be 0. 0, or -1 with
 * "DIR: strerror" / "out of memory". */
int mt_models_dir_list(const char *dir, mt_models_entry **out, int *n, char *err, size_t errlen);
void mt_models_dir_free(mt_models_entry *list, int n);

#endif
