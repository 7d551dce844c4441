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

/* html.c. End of the markup starting at s[i] (after any content it keeps from
 * translation: script, style, translate="no" ...), or i when s[i] starts text. */
size_t mt_html_markup_end(const char *s, size_t len, size_t i);
/* s[0, len) with character references decoded (malloc'd, NUL-terminated); NULL: no memory. */
char *mt_html_unescape(const char *s, size_t len, size_t *out_len);
/* Writes s with & < > escaped to out (when not NULL); returns the length. */
size_t mt_html_escape(const char *s, char *out);

#include "error.h"
#include "utf8.h"

#endif
