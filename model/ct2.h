/* ct2.h: CTranslate2 model directories (internal to model/; ct2.c). */
#ifndef MT_CT2_H
#define MT_CT2_H

#include <stddef.h>

#include "ct2_file.h"
#include "model.h"

/* Loads DIR/model.bin with DIR/config.json and DIR's vocabularies
 * (shared_vocabulary.json/.txt, or source_ and target_vocabulary); mt_model_load_ex calls
 * it for a directory that has model.bin and no model.safetensors. */
mt_model *mt_ct2_load(const char *dir, const mt_model_options *opts, char *err, size_t errlen);

/* The checks of the spec that need only model.bin (flags, shapes of the embeddings and
 * layers): 0, or -1 with a message. For the fuzzer and tests. */
int mt_ct2_check(const mt_ct2_file *f, char *err, size_t errlen);

#endif
