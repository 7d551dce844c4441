/* strbuf.h: a growable NUL-terminated string for the pipeline's steps that rebuild a text
 * piece by piece (blocks.c, protect.c). Private to translator/.
 *
 * Ownership: the caller owns b->s (free() it); a zeroed mt_strbuf is empty.
 * Thread-safety: none needed; one buffer per call.
 */
#ifndef MT_TRANSLATOR_STRBUF_H
#define MT_TRANSLATOR_STRBUF_H

#include <stddef.h>

typedef struct {
    char *s;       /* the text, NUL-terminated once anything was put (NULL before) */
    size_t n, cap; /* bytes used (without the NUL) and allocated */
} mt_strbuf;

/* Appends s[0..n) and keeps the text NUL-terminated; 0, or -1 out of memory (b unchanged). */
int mt_strbuf_put(mt_strbuf *b, const char *s, size_t n);

#endif
