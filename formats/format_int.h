/* format_int.h: what the files of formats/ share and nobody else includes: error
 * setting, the list of units to translate, a growable byte buffer, the text readers and
 * the docx/odt reader. Not thread-safe objects: each belongs to one call. */
#ifndef MT_FORMAT_INT_H
#define MT_FORMAT_INT_H

#include <stddef.h>

#include "formats.h"

/* Writes the message into err and returns code (an mt_format_status). */
int fmt_fail(int code, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The texts of one file, translated in batches. texts[] point into memory the reader
 * keeps alive; out[] is filled by fmt_units_translate. */
typedef struct {
    const char **texts;
    size_t *lens;
    char **out;
    long n, cap;
} fmt_units;

int fmt_units_add(fmt_units *u, const char *text, size_t len, const mt_format_options *opt,
                  char *err, size_t errlen);
void fmt_units_free(fmt_units *u);
/* Reports the extracted size (opt->extracted), then translates all units into u->out,
 * batch by batch, reporting progress. */
int fmt_units_translate(fmt_units *u, int html, const mt_format_options *opt,
                        mt_format_translate_fn translate, mt_format_progress_fn progress,
                        void *user, char *err, size_t errlen);

/* Growable output; oom is sticky and reported by fmt_buf_finish. p is NUL-terminated. */
typedef struct {
    unsigned char *p;
    size_t n, cap;
    int oom;
} fmt_buf;

void fmt_buf_put(fmt_buf *b, const void *data, size_t len);
/* Hands b's bytes to *out / *out_len: 0, or MT_FORMAT_FAILED when memory ran out. */
int fmt_buf_finish(fmt_buf *b, unsigned char **out, size_t *out_len, char *err, size_t errlen);

int fmt_is_blank(const char *s, size_t len);

/* The readers behind mt_format_translate; data is valid UTF-8 without NUL for the text
 * formats. Same contract as mt_format_translate. */
int fmt_do_txt(const char *s, size_t len, const mt_format_options *opt,
               mt_format_translate_fn tr, mt_format_progress_fn pr, void *user,
               unsigned char **out, size_t *out_len, char *err, size_t errlen);
int fmt_do_srt(const char *s, size_t len, const mt_format_options *opt,
               mt_format_translate_fn tr, mt_format_progress_fn pr, void *user,
               unsigned char **out, size_t *out_len, char *err, size_t errlen);
int fmt_do_html(const char *s, size_t len, const mt_format_options *opt,
                mt_format_translate_fn tr, mt_format_progress_fn pr, void *user,
                unsigned char **out, size_t *out_len, char *err, size_t errlen);
int fmt_do_office(mt_file_format fmt, const unsigned char *data, size_t len,
                  const mt_format_options *opt, mt_format_translate_fn tr,
                  mt_format_progress_fn pr, void *user, unsigned char **out, size_t *out_len,
                  char *err, size_t errlen);

#endif
