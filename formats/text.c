/* text.c: the text formats: .txt (a unit per non-blank line), .srt (a unit per cue's
 * text) and .html (the whole document one unit). See formats.h. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "format_int.h"

/* ---- .txt ---------------------------------------------------------------------------- */

/* Splits [p, end) into lines: *tlen is the line's length without "\r\n"/"\n". */
static const char *next_line(const char *p, const char *end, size_t *tlen)
{
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *stop = nl ? nl : end;
    size_t n = (size_t)(stop - p);
    if (n && p[n - 1] == '\r') n--;
    *tlen = n;
    return nl ? nl + 1 : end;
}

int fmt_do_txt(const char *s, size_t len, const mt_format_options *opt,
               mt_format_translate_fn tr, mt_format_progress_fn pr, void *user,
               unsigned char **out, size_t *out_len, char *err, size_t errlen)
{
    fmt_units u = {0};
    int rc = MT_FORMAT_FAILED;
    const char *end = s + len;
    for (const char *p = s; p < end;) {
        size_t n;
        const char *next = next_line(p, end, &n);
        if (!fmt_is_blank(p, n) && (rc = fmt_units_add(&u, p, n, opt, err, errlen)) != 0)
            goto done;
        p = next;
    }
    if ((rc = fmt_units_translate(&u, 0, opt, tr, pr, user, err, errlen)) != 0) goto done;
    fmt_buf b = {0};
    long k = 0;
    for (const char *p = s; p < end;) {
        size_t n;
        const char *next = next_line(p, end, &n);
        if (!fmt_is_blank(p, n)) {
            fmt_buf_put(&b, u.out[k], strlen(u.out[k]));
            k++;
        } else {
            fmt_buf_put(&b, p, n);
        }
        fmt_buf_put(&b, p + n, (size_t)(next - (p + n))); /* the line ending as it was */
        p = next;
    }
    rc = fmt_buf_finish(&b, out, out_len, err, errlen);
done:
    fmt_units_free(&u);
    return rc;
}

/* ---- .srt ---------------------------------------------------------------------------- */

typedef struct {
    const char *start;  /* first text line of the cue */
    size_t len;         /* bytes up to the end of the last text line (no line end) */
    char *joined;       /* the lines joined with "\n" (CRLF -> LF), owned */
} srt_cue;

int fmt_do_srt(const char *s, size_t len, const mt_format_options *opt,
               mt_format_translate_fn tr, mt_format_progress_fn pr, void *user,
               unsigned char **out, size_t *out_len, char *err, size_t errlen)
{
    fmt_units u = {0};
    srt_cue *cues = NULL;
    long n_cues = 0, cap = 0, line_no = 0;
    int rc = MT_FORMAT_FAILED;
    const char *end = s + len, *p = s;
    if (len >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0) p += 3;
    /* States: 0 = before a cue number, 1 = expecting timing, 2 = in cue text. */
    int state = 0;
    for (; p < end;) {
        size_t n;
        const char *next = next_line(p, end, &n);
        line_no++;
        if (state == 0) {
            if (fmt_is_blank(p, n)) { p = next; continue; }
            for (size_t i = 0; i < n; i++) {
                /* Digits then blanks: the blank tail is checked once, not per byte. */
                if (i > 0 && !isdigit((unsigned char)p[i]) && fmt_is_blank(p + i, n - i)) break;
                if (!isdigit((unsigned char)p[i])) {
                    rc = fmt_fail(MT_FORMAT_INVALID, err, errlen,
                                  "srt: line %ld: expected a cue number, found '%.*s'", line_no,
                                  (int)(n > 40 ? 40 : n), p);
                    goto done;
                }
            }
            state = 1;
        } else if (state == 1) {
            const char *arrow = n >= 3 ? memmem(p, n, "-->", 3) : NULL;
            if (!arrow) {
                rc = fmt_fail(MT_FORMAT_INVALID, err, errlen,
                              "srt: line %ld: expected a timing line "
                              "'00:00:01,000 --> 00:00:02,000', found '%.*s'", line_no,
                              (int)(n > 40 ? 40 : n), p);
                goto done;
            }
            if (n_cues == cap) {
                cap = cap ? cap * 2 : 64;
                srt_cue *c = realloc(cues, (size_t)cap * sizeof *c);
                if (!c) {
                    rc = fmt_fail(MT_FORMAT_FAILED, err, errlen, "out of memory");
                    goto done;
                }
                cues = c;
            }
            cues[n_cues++] = (srt_cue){next, 0, NULL};
            state = 2;
        } else {
            if (fmt_is_blank(p, n)) {
                state = 0;
            } else {
                srt_cue *c = &cues[n_cues - 1];
                c->len = (size_t)(p + n - c->start);
            }
        }
        p = next;
    }
    if (state == 1) {
        rc = fmt_fail(MT_FORMAT_INVALID, err, errlen,
                      "srt: line %ld: the file ends before the cue's timing line", line_no);
        goto done;
    }
    for (long i = 0; i < n_cues; i++) {
        srt_cue *c = &cues[i];
        if (c->len == 0) continue;
        c->joined = malloc(c->len + 1);
        if (!c->joined) {
            rc = fmt_fail(MT_FORMAT_FAILED, err, errlen, "out of memory");
            goto done;
        }
        size_t k = 0;
        for (size_t j = 0; j < c->len; j++)
            if (!(c->start[j] == '\r' && j + 1 < c->len && c->start[j + 1] == '\n'))
                c->joined[k++] = c->start[j];
        c->joined[k] = '\0';
        if ((rc = fmt_units_add(&u, c->joined, k, opt, err, errlen)) != 0) goto done;
    }
    if ((rc = fmt_units_translate(&u, 0, opt, tr, pr, user, err, errlen)) != 0) goto done;
    /* Copy the file, replacing each cue's text span by its translation. */
    fmt_buf b = {0};
    const char *q = s;
    long k = 0;
    int crlf = memmem(s, len, "\r\n", 2) != NULL;
    for (long i = 0; i < n_cues; i++) {
        srt_cue *c = &cues[i];
        if (c->len == 0) continue;
        fmt_buf_put(&b, q, (size_t)(c->start - q));
        for (const char *t = u.out[k]; *t; t++) {
            if (*t == '\n' && crlf) fmt_buf_put(&b, "\r\n", 2);
            else fmt_buf_put(&b, t, 1);
        }
        k++;
        q = c->start + c->len;
    }
    fmt_buf_put(&b, q, (size_t)(end - q));
    rc = fmt_buf_finish(&b, out, out_len, err, errlen);
done:
    for (long i = 0; i < n_cues; i++) free(cues[i].joined);
    free(cues);
    fmt_units_free(&u);
    return rc;
}

/* ---- .html --------------------------------------------------------------------------- */

int fmt_do_html(const char *s, size_t len, const mt_format_options *opt,
                mt_format_translate_fn tr, mt_format_progress_fn pr, void *user,
                unsigned char **out, size_t *out_len, char *err, size_t errlen)
{
    fmt_units u = {0};
    fmt_buf b = {0};
    int rc;
    if (!fmt_is_blank(s, len) && (rc = fmt_units_add(&u, s, len, opt, err, errlen)) != 0)
        goto done;
    if ((rc = fmt_units_translate(&u, 1, opt, tr, pr, user, err, errlen)) != 0) goto done;
    if (u.n) fmt_buf_put(&b, u.out[0], strlen(u.out[0]));
    else fmt_buf_put(&b, s, len);
    rc = fmt_buf_finish(&b, out, out_len, err, errlen);
done:
    fmt_units_free(&u);
    return rc;
}
