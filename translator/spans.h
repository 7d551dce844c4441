/* spans.h: where a span of each protect.h kind starts and ends in a text, and the
 * character classes protect.c's restoring shares with the recognisers. Private to
 * translator/ (protect.c). Pure functions over bytes; s[0..n) need not be NUL-terminated.
 */
#ifndef MT_TRANSLATOR_SPANS_H
#define MT_TRANSLATOR_SPANS_H

#include <stddef.h>

#include "protect.h"

static inline int mt_span_is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* What the model can spell (MT_PROTECT_UNKNOWN); fn NULL: everything. */
typedef struct {
    mt_protect_spells_fn fn;
    const void *ctx;
} mt_span_spells;

/* The span of the first of `kinds` (MT_PROTECT_* bits, tried code, URL, e-mail, mention,
 * hashtag, placeholder, path or qualified name, emoji, long word, unknown characters) that starts at s[i]: its
 * length and *kind, or 0. An unknown run ends where a span of another of `kinds` starts. */
size_t mt_span_find(unsigned kinds, const mt_span_spells *sp, const char *s, size_t i, size_t n, int *kind);
/* The length of a placeholder (MT_PROTECT_FORMAT) at s[i], or 0. In a translation a
 * printf placeholder may take a suffix ("%ss"): strict 0 reads those too. */
size_t mt_span_placeholder_len(const char *s, size_t i, size_t n, int strict);
/* 1 when the character at s[i] (before: the one ending at s[i]) is a letter or digit. */
int mt_span_is_word_char(const char *s, size_t i, size_t n, int before);

#endif
