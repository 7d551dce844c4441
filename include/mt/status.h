/* status.h: the one error type of the components (model/, tokenizer/, config/ and, as
 * they adopt it, translator/ and server/): a call returns an mt_status and writes a
 * message for a person into the caller's buffer (char *err, size_t errlen; either may be
 * NULL / 0: no message). Constructors return NULL instead of a status and fill the
 * buffer the same way.
 *
 *     if (n < 1)
 *         return mt_error(MT_ERR_INVALID, err, errlen, "batch of %d sentences", n);
 *
 * The status says what kind of failure it was (for an HTTP code or an exit status); the
 * message says exactly what and where. MT_OK is 0 and every error is negative, so
 * `if (call(...))` tests for failure and old code that returned -1 means MT_ERR_INVALID.
 * For a new front end or component: return these codes, turn them into text with
 * mt_status_str() where no message was written, and map them to a response in one place
 * (e.g. INVALID -> 400, NOMEM -> 503, CANCELLED -> 499/504).
 *
 * Thread-safety: pure functions; the strings are constants.
 */
#ifndef MT_UTIL_STATUS_H
#define MT_UTIL_STATUS_H

#include <stddef.h>

typedef enum {
    MT_OK = 0,
    MT_ERR_INVALID = -1,   /* bad input, file or setting: the caller's to fix */
    MT_ERR_NOMEM = -2,     /* out of memory (or another resource: threads, oneDNN objects) */
    MT_ERR_CANCELLED = -3, /* the caller asked to stop (a search's cancel callback) */
} mt_status;

/* A short description of status, e.g. "invalid input"; "unknown status" for others. */
const char *mt_status_str(int status);

/* Formats the message into err[errlen] (when err is not NULL and errlen > 0) and returns
 * `status`, so that a failure reads `return mt_error(MT_ERR_INVALID, err, errlen, ...)`. */
int mt_error(int status, char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Formats into buf[len] (vsnprintf) and returns buf; NULL or 0-length buf: no-op. For
 * names and messages built in place, e.g. `find(w, mt_strfmt(name, sizeof name, ...))`. */
char *mt_strfmt(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
