/* log.h: structured log lines (logfmt: ts=... level=... event=... key=value ...) on a stream.
 *
 * Thread-safety: an mt_log may be used from any number of threads; each line is written
 * whole (the stream is locked while it is formatted).
 */
#ifndef MT_SERVER_LOG_H
#define MT_SERVER_LOG_H

#include <stdio.h>

typedef struct mt_log mt_log;

/* Logs to `out` (not closed by mt_log_free) lines at `level` (MT_LOG_*) or more severe. */
mt_log *mt_log_create(FILE *out, int level);
void mt_log_free(mt_log *log);
int mt_log_enabled(const mt_log *log, int level);

/* One line: ts, level, event, then `fmt` (more key=value pairs; may be NULL). */
void mt_log_write(mt_log *log, int level, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Writes s as a logfmt value into buf[cap] (quoted and escaped when needed). */
const char *mt_log_quote(char *buf, size_t cap, const char *s);

#endif
