/* protect.h: spans that must not be translated (URLs, e-mail addresses, @mentions,
 * #hashtags, printf/Python/brace format placeholders), cut out of a text before
 * translation and put back, byte for byte and each exactly once, after it.
 *
 * Thread-safety: an mt_protect is immutable after mt_protect_create(); functions
 * taking a const one may run concurrently. No global state.
 *
 * The cut text drops each span together with the whitespace on one side of it, so
 * its words (whitespace-separated) are the source words the model sees. Restoring
 * places a span before the first output word aligned to the cut-text word that followed
 * it, else after the last output word aligned to the word before it (a span glued to
 * the word on its left always goes there), else at the start
 * (a span that began the text) or at the end; spans meeting at one place keep their
 * source order. The alignment is [src_word, tgt_word] pairs as mt_search alignments
 * give them (translator's word-level pairs). */
#ifndef MT_PROTECT_H
#define MT_PROTECT_H

#include <stddef.h>

enum {
    MT_PROTECT_URL = 1,         /* http(s)://, ftp://, www. ... (trailing punctuation left out) */
    MT_PROTECT_EMAIL = 2,       /* local@domain.tld */
    MT_PROTECT_MENTION = 4,     /* @name or @name@instance.tld (not inside a word) */
    MT_PROTECT_HASHTAG = 8,     /* #tag (letters, digits, _; not all digits; not inside a word) */
    MT_PROTECT_FORMAT = 16,     /* %s %d %1$s %5.2f %(name)s {count} {0} {} */
    MT_PROTECT_ALL = 31,
    MT_PROTECT_LONG_WORD = 32   /* a run of more than MT_PROTECT_LONG_WORD_CHARS non-space
                                 * characters: no language has such words, and one would cost
                                 * the tokenizer and the search far more than real text (the
                                 * service always adds this kind) */
};

enum { MT_PROTECT_LONG_WORD_CHARS = 64 };

typedef struct {
    size_t start, len; /* bytes of the original text */
    int kind;          /* one MT_PROTECT_* bit */
    int word;          /* the cut-text word it precedes (= words before it), or, when
                        * glued_left, the word it is attached to */
    int glued_left;    /* no whitespace between it and the text before (e.g. "file:%s") */
    int glued_right;   /* no whitespace between it and the text after (e.g. "%s.") */
} mt_protect_span;

typedef struct mt_protect mt_protect;

/* Finds the spans of `kinds` in text[0..len) (UTF-8) and builds the cut text.
 * NULL only when out of memory. */
mt_protect *mt_protect_create(const char *text, size_t len, unsigned kinds);
void mt_protect_free(mt_protect *p);

/* The text with every span cut out (NUL-terminated, owned by p). */
const char *mt_protect_text(const mt_protect *p);
int mt_protect_count(const mt_protect *p);
const mt_protect_span *mt_protect_span_at(const mt_protect *p, int i);

/* The translation of mt_protect_text() with every span put back (see above); align
 * may be NULL (then every span goes to the start or end). Returns a malloc'd string,
 * NULL when out of memory. */
char *mt_protect_restore(const mt_protect *p, const char *translation, const int (*align)[2], int n_align);

#endif
