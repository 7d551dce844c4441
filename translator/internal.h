/* internal.h: what the files of translator/ share. */
#ifndef MT_TRANSLATOR_INTERNAL_H
#define MT_TRANSLATOR_INTERNAL_H

#include "protect.h"
#include "translator.h"

struct mt_translator {
    mt_model *model;
    mt_tokenizer *tok;
    char *name, *source_lang, *target_lang;
    int target_token;   /* source id of ">>target<<" for multilingual models, else -1 */
    const char *format; /* mt_translator_format: a string constant */
};

#include <stdio.h>

/* html.c. End of the markup starting at s[i] (after any content it keeps from
 * translation: script, style, translate="no" ...), or i when s[i] starts text. */
size_t mt_html_markup_end(const char *s, size_t len, size_t i);
/* End of the tag, comment or declaration starting at s[i] (just after it, its content not
 * included), or i when s[i] starts text. */
size_t mt_html_tag_end(const char *s, size_t len, size_t i);
/* 1 when the start tag at s[i] closes itself ("<x/>", "<x a=1 />"): a '/' just before the
 * '>' outside any attribute value ("<a href=http://x/>" opens an element: its '/' is
 * part of the unquoted value, as HTML5 reads it). */
int mt_html_tag_self_closing(const char *s, size_t len, size_t i);
/* 1 when the start tag at s[i] says "do not translate": an attribute translate="no" or a
 * class attribute with the token notranslate (attributes parsed: name, '=', a quoted or
 * unquoted value; translate="nope" or title="translate=no" do not count). */
int mt_html_says_no_translate(const char *s, size_t len, size_t i);
/* s[0, len) with character references decoded (malloc'd, NUL-terminated); NULL: no memory. */
char *mt_html_unescape(const char *s, size_t len, size_t *out_len);
/* Writes s with & < > escaped to out (when not NULL); returns the length. */
size_t mt_html_escape(const char *s, char *out);

/* blocks.c. An HTML text cut at block-level tags (p, li, h1, td, div ...): segments
 * whose concatenation is the text; translate 1 marks a block with words (its inline
 * content, translated whole), 0 the tags between and blank blocks. Returns the count
 * (*out malloc'd) or -1 when out of memory. */
int mt_html_block_split(const char *s, size_t len, mt_segment **out);
/* The block with each protected span (protect.h kinds) of its text, and each <a> whose
 * whole text is one (a hashtag or URL link), wrapped in MT_HTML_KEEP_OPEN/CLOSE, an
 * element markup.c keeps verbatim; mt_html_unwrap_protected() removes the wrappers
 * afterwards (in place). malloc'd; NULL when out of memory. */
#define MT_HTML_KEEP_OPEN "<mt-keep-7a1 translate=\"no\">"
#define MT_HTML_KEEP_CLOSE "</mt-keep-7a1>"
char *mt_html_wrap_protected(const char *s, size_t len, unsigned kinds);
/* The same, MT_PROTECT_UNKNOWN spans found by spells (protect.h mt_protect_create_with). */
char *mt_html_wrap_protected_with(const char *s, size_t len, unsigned kinds, mt_protect_spells_fn spells,
                                  const void *ctx);
void mt_html_unwrap_protected(char *s);
/* Per id, the whitespace-separated word it belongs to (0-based; -1 for skip_id, a
 * language token and ids decoding drops), from the pieces' leading U+2581; target
 * selects the vocabulary. Returns the number of words. */
int mt_word_map(const mt_tokenizer *tok, int target, int32_t skip_id, const int32_t *ids, int n, int *map);

#include "status.h"
#include "utf8.h"

#endif
