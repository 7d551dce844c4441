/* internal.h: what the files of translator/ share. */
#ifndef MT_TRANSLATOR_INTERNAL_H
#define MT_TRANSLATOR_INTERNAL_H

#include "translator.h"

struct mt_translator {
    mt_model *model;
    mt_tokenizer *tok;
    char *name, *source_lang, *target_lang;
    int target_token;   /* source id of ">>target<<" for multilingual models, else -1 */
};

#include <stdio.h>

/* Error text into a caller buffer that may be NULL. */
#define tr_error(buf, len, ...) ((buf) && (len) ? (void)snprintf((buf), (len), __VA_ARGS__) : (void)0)

#endif
