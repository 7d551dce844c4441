/* markup.h: one HTML block (the content of a paragraph, list item, heading, table cell...)
 * as plain text to translate whole, with its inline elements put back around the aligned
 * output words afterwards.
 *
 * Thread-safety: an mt_markup is immutable after mt_markup_split(); functions taking a
 * const one may run concurrently. No global state.
 *
 * Split: every element with a closing tag (b, i, em, strong, a, span, code, sub, sup, u,
 * mark, small, abbr, or any other) is taken out and remembers the plain-text words it
 * covered; void elements (br, img, wbr, hr, input), comments, stray closing tags and
 * opaque elements (script, style, and any element with translate="no" or
 * class="notranslate", attributes parsed as html.c does; content included)
 * are kept verbatim as markers between words. Opaque elements and void elements other
 * than line breaks (img, input, <x id="0"/> placeholders) stand in the text as a mask
 * "{N}" (N above every number of the block followed by '}' or '&'), which the bundled
 * models copy through: the text around them (quotes, brackets) goes to the model as
 * written. Entities in text are decoded (&amp; &lt; &gt; &quot; &apos; &#39; &nbsp;
 * &#N; &#xH;); others stay as written.
 * Restore: given the translation of mt_markup_text() and [src_word, tgt_word] alignment
 * pairs over whitespace-separated words, each element wraps the output words aligned to
 * the words it covered (their hull, clipped to its parent and after its previous sibling,
 * so the result nests); the first copy of a mask in the translation is replaced by its
 * element (further copies are dropped); an element with no aligned word, and each other
 * marker (a mask the model dropped included), goes to the output position after the word
 * aligned to the source word before it (else the start of its parent). Tags are written byte for byte; an element left unclosed in the input gets
 * a closing tag. Output text is escaped (& < >). The result is well-formed.
 * Cost: split and restore are linear in the block, its words and the alignment (restore:
 * times log(words)); no recursion, whatever the nesting depth. */
#ifndef MT_MARKUP_H
#define MT_MARKUP_H

#include <stddef.h>

typedef struct mt_markup mt_markup;

/* Parses html[0..len); NULL only when out of memory. */
mt_markup *mt_markup_split(const char *html, size_t len);
void mt_markup_free(mt_markup *m);

/* The plain text (NUL-terminated, owned by m). */
const char *mt_markup_text(const mt_markup *m);
/* Elements and markers taken out, in document order. */
int mt_markup_count(const mt_markup *m);

/* The block's HTML for `translation`; align may be NULL. malloc'd, NULL when out of memory. */
char *mt_markup_restore(const mt_markup *m, const char *translation, const int (*align)[2], int n_align);

/* For tests of the cost: units of work (bytes scanned, nodes and words visited) of the
 * split, and of a restore (as mt_markup_restore; *steps set when not NULL). */
size_t mt_markup_split_steps(const mt_markup *m);
char *mt_markup_restore_steps(const mt_markup *m, const char *translation, const int (*align)[2], int n_align,
                              size_t *steps);

#endif
