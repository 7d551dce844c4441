/* error.h: the one way library code outside model/ reports an error: a message into a
 * caller's buffer (err, errlen), which may be NULL, and a status returned.
 *
 * Thread-safety: pure functions.
 */
#ifndef MT_UTIL_ERROR_H
#define MT_UTIL_ERROR_H

#include <stddef.h>

/* Formats the message into err[errlen] (when err is not NULL and errlen > 0) and
 * returns `status`, so that a failure reads `return mt_error(-1, err, errlen, ...)`. */
int mt_error(int status, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
