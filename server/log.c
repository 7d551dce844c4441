/* log.c: logfmt lines with an RFC 3339 UTC timestamp. */
#include "log.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"

struct mt_log {
    FILE *out;
    int level;
};

mt_log *mt_log_create(FILE *out, int level)
{
    mt_log *l = calloc(1, sizeof *l);
    if (!l) return NULL;
    l->out = out;
    l->level = level;
    return l;
}

void mt_log_free(mt_log *log) { free(log); }

int mt_log_enabled(const mt_log *log, int level) { return log && level <= log->level; }

void mt_log_write(mt_log *log, int level, const char *event, const char *fmt, ...)
{
    if (!mt_log_enabled(log, level)) return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[40];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    flockfile(log->out);
    fprintf(log->out, "ts=%s.%03ldZ level=%s event=%s", when, ts.tv_nsec / 1000000,
            mt_config_log_level_name(level), event);
    if (fmt && *fmt) {
        fputc(' ', log->out);
        va_list ap;
        va_start(ap, fmt);
        vfprintf(log->out, fmt, ap);
        va_end(ap);
    }
    fputc('\n', log->out);
    fflush(log->out);
    funlockfile(log->out);
}

const char *mt_log_quote(char *buf, size_t cap, const char *s)
{
    if (!cap) return buf;
    if (!s) s = "";
    int plain = *s != '\0';
    for (const char *p = s; *p && plain; p++)
        plain = (unsigned char)*p > 0x20 && *p != '"' && *p != '=' && *p != '\\' && (unsigned char)*p != 0x7f;
    if (plain) {
        snprintf(buf, cap, "%s", s);
        return buf;
    }
    size_t n = 0;
    if (n + 1 < cap) buf[n++] = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p && n + 7 < cap; p++) {
        if (*p == '"' || *p == '\\') {
            buf[n++] = '\\';
            buf[n++] = (char)*p;
        } else if (*p == '\n') {
            buf[n++] = '\\';
            buf[n++] = 'n';
        } else if (*p < 0x20 || *p == 0x7f) {
            n += (size_t)snprintf(buf + n, cap - n, "\\x%02x", *p);
        } else {
            buf[n++] = (char)*p;
        }
    }
    if (n + 1 < cap) buf[n++] = '"';
    buf[n] = '\0';
    return buf;
}
