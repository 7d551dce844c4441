/* format.c: mt_format (format.h). */
#include "format.h"

#include <stdarg.h>
#include <stdio.h>

char *mt_format(char *buf, size_t len, const char *fmt, ...)
{
    if (!buf || !len)
        return buf;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    return buf;
}
