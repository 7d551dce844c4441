/* status.c: see status.h. */
#include "status.h"

#include <stdarg.h>
#include <stdio.h>

const char *mt_status_str(int status)
{
    switch (status) {
    case MT_OK: return "ok";
    case MT_ERR_INVALID: return "invalid input";
    case MT_ERR_NOMEM: return "out of memory";
    case MT_ERR_CANCELLED: return "cancelled";
    default: return "unknown status";
    }
}

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

char *mt_strfmt(char *buf, size_t len, const char *fmt, ...)
{
    if (!buf || !len)
        return buf;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    return buf;
}
