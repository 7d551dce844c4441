/* utf8.h: the one UTF-8 validator and encoder of the tree (the tokenizer, the request
 * parser, segmentation, the config reader, HTML and file formats all use it): strict
 * UTF-8, no overlong forms, no surrogates, nothing above U+10FFFF.
 *
 * Thread-safety: pure functions.
 */
#ifndef MT_UTIL_UTF8_H
#define MT_UTIL_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length (1..4) of the valid UTF-8 sequence at s[0, n), with its code point in *cp
 * (may be NULL); 0 when s does not start with one (or n is 0). */
int mt_utf8_len(const char *s, size_t n, uint32_t *cp);
/* 1 when s[0, len) is valid UTF-8; else 0 and *bad_at (may be NULL) is the offset of the
 * first byte that does not start a valid sequence. */
int mt_utf8_check(const char *s, size_t len, size_t *bad_at);
/* Code points in valid UTF-8 text. */
size_t mt_utf8_chars(const char *s, size_t len);
/* Writes the UTF-8 bytes of code point cp (at most U+10FFFF; the caller keeps surrogates
 * out) to out[0, 4); returns their count, 1..4. */
size_t mt_utf8_put(uint32_t cp, char *out);

#endif
