/* error.c: see error.h. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>

int mt_error(int status, char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return status;
}
