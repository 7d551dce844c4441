/* protect.h: spans that must not be translated (URLs, e-mail addresses, @mentions,
 * #hashtags, software placeholders, code in backticks, emoji, file paths and qualified
 * names, and characters the model cannot spell), replaced by masks before translation and put back, byte for byte and
 * each exactly once, after it.
 *
 * Thread-safety: an mt_protect is immutable after mt_protect_create(); functions
 * taking a const one may run concurrently. No global state: what the model can spell
 * comes from the caller's mt_protect_spells_fn (e.g. over mt_tokenizer_spells).
 *
 * The text the model reads has span k replaced by the brace field "{B+k}" (B above every
 * "{N}" the text itself keeps), everything around it as written: the quotes, brackets and
 * punctuation next to a span stay in the text, so the model puts them where its language
 * wants them, and the mask comes back on the right side of them. Restoring replaces the
 * first copy of each mask in the translation with its span (a space added where the
 * source had whitespace and the model glued the mask to a word) and drops further copies;
 * a span whose mask the model dropped goes after the output word aligned to the source
 * word before its mask's word, else before the one aligned to the word after it, else at
 * the start (a span that began the text) or the end. The alignment is [src_word,
 * tgt_word] pairs over whitespace-separated words, as mt_search alignments give them
 * (translator's word-level pairs). */
#ifndef MT_PROTECT_H
#define MT_PROTECT_H

#include <stddef.h>

enum {
    MT_PROTECT_URL = 1,         /* http(s)://, ftp://, www. ... (trailing punctuation left out) */
    MT_PROTECT_EMAIL = 2,       /* local@domain.tld */
    MT_PROTECT_MENTION = 4,     /* @name or @name@instance.tld (not inside a word) */
    MT_PROTECT_HASHTAG = 8,     /* #tag (letters, digits, _; not all digits; not inside a word) */
    MT_PROTECT_FORMAT = 16,     /* %s %d %1$s %5.2f %(name)s {count} {0} {} $NAME ${name}
                                 * and XML placeholders <x id="0"/> */
    MT_PROTECT_LONG_WORD = 32,  /* a run of more than MT_PROTECT_LONG_WORD_CHARS non-space
                                 * characters: no language has such words, and one would cost
                                 * the tokenizer and the search far more than real text (the
                                 * service always adds this kind) */
    MT_PROTECT_CODE = 64,       /* `code` in backticks (one line; not the `gettext' quotes) */
    MT_PROTECT_EMOJI = 128,     /* pictographs with their modifiers and joins, flags */
    MT_PROTECT_UNKNOWN = 256,   /* a run of characters the model cannot spell, which it would
                                 * turn into random text ("€" -> "665"): only with
                                 * mt_protect_create_with()'s spells; other kinds win where
                                 * they overlap */
    MT_PROTECT_PATH = 512,      /* file paths /etc/apt/sources.list, /tmp/ (not "/etc" alone),
                                 * ~/.bashrc, ./configure, ../x, and names qualified with "::"
                                 * (Class::Accessor::Grouped, std::vector); at a word's start,
                                 * so "and/or", "km/h", "1/2", "HTTP/1.1" are text */
    MT_PROTECT_ALL = 1 | 2 | 4 | 8 | 16 | 64 | 128 | 256 | 512
};

enum { MT_PROTECT_LONG_WORD_CHARS = 64 };

typedef struct {
    size_t start, len; /* bytes of the original text */
    int kind;          /* one MT_PROTECT_* bit */
    int word;          /* the word of mt_protect_text() that holds its mask */
    int glued_left;    /* no whitespace between it and the text before (e.g. "file:%s") */
    int glued_right;   /* no whitespace between it and the text after (e.g. "%s.") */
} mt_protect_span;

typedef struct mt_protect mt_protect;

/* Whether the model spells the one UTF-8 character ch[0, n): 1 yes, 0 no (it reads it as
 * unknown), anything else as 1. Must be safe to call from the threads that create
 * mt_protects at once (mt_tokenizer_spells is). */
typedef int (*mt_protect_spells_fn)(const void *ctx, const char *ch, size_t n);

/* Finds the spans of `kinds` in text[0..len) (UTF-8) and builds the cut text.
 * NULL only when out of memory. Finds no MT_PROTECT_UNKNOWN span (no spells function). */
mt_protect *mt_protect_create(const char *text, size_t len, unsigned kinds);
/* The same, MT_PROTECT_UNKNOWN spans being the maximal runs of valid characters for which
 * spells(ctx, ...) says 0 (spells may be NULL: none). Bytes that are not valid UTF-8 are
 * never in one. */
mt_protect *mt_protect_create_with(const char *text, size_t len, unsigned kinds, mt_protect_spells_fn spells,
                                   const void *ctx);
void mt_protect_free(mt_protect *p);

/* The text with every span replaced by its mask (NUL-terminated, owned by p). */
const char *mt_protect_text(const mt_protect *p);
int mt_protect_count(const mt_protect *p);
const mt_protect_span *mt_protect_span_at(const mt_protect *p, int i);

/* The translation of mt_protect_text() with every span put back (see above); align
 * may be NULL (then a span whose mask was dropped goes to the start or end). Returns a malloc'd string,
 * NULL when out of memory. */
char *mt_protect_restore(const mt_protect *p, const char *translation, const int (*align)[2], int n_align);

#endif
