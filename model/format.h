/* format.h: snprintf into a caller's message buffer (internal to model/). Kept apart from
 * internal.h so the safetensors reader depends on nothing else in model/. */
#ifndef MT_FORMAT_H
#define MT_FORMAT_H

#include <stddef.h>

/* Formats a message into buf[len] (vsnprintf), returns buf; NULL or 0-length buf: no-op. */
char *mt_format(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
