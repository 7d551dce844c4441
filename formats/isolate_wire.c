/* isolate_wire.c: the messages of the job socket between the caller and a reader child
 * (isolate_int.h; their layout is in isolate.c's opening comment). A socketpair rather
 * than a pipe: send(MSG_NOSIGNAL) turns a dead peer into an error instead of SIGPIPE. */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "isolate_int.h"

void fmt_iso_put_u64(fmt_buf *b, uint64_t v) { fmt_buf_put(b, &v, sizeof v); }

void fmt_iso_put_bytes(fmt_buf *b, const void *d, size_t n)
{
   fmt_iso_put_u64(b, n);
    fmt_buf_put(b, d, n);
}

long long fmt_iso_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until fd is ready for `events`, spending *budget_ms (NULL: no deadline). 0: ready;
 * -1: error; -2: the budget ran out. */
int fmt_iso_wait_fd(int fd, short events, long long *budget_ms)
{
    if (!budget_ms) return 0;
    for (;;) {
        if (*budget_ms <= 0) return -2;
        struct pollfd pf = {.fd = fd, .events = events};
        long long t0 = fmt_iso_now_ms();
        int r = poll(&pf, 1, *budget_ms > 1000000 ? 1000000 : (int)*budget_ms);
        *budget_ms -= fmt_iso_now_ms() - t0;
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r > 0) return 0;
    }
}

/* Sends type + b's bytes; 0, -1 (the peer is gone) or -2 (the budget ran out). */
int fmt_iso_send_msg(int fd, char type, const fmt_buf *b, long long *budget_ms)
{
    if (b->oom) return -1;
    unsigned char head[9];
    uint64_t n = b->n;
    head[0] = (unsigned char)type;
    memcpy(head + 1, &n, 8);
    const unsigned char *parts[2] = {head, b->p};
    size_t lens[2] = {sizeof head, b->n};
    for (int k = 0; k < 2; k++) {
        for (size_t off = 0; off < lens[k];) {
            int r = fmt_iso_wait_fd(fd, POLLOUT, budget_ms);
            if (r) return r;
            ssize_t w = send(fd, parts[k] + off, lens[k] - off,
                             MSG_NOSIGNAL | (budget_ms ? MSG_DONTWAIT : 0));
            if (w < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (w <= 0) return -1;
            off += (size_t)w;
        }
    }
    return 0;
}

/* Reads exactly n bytes. *budget_ms (NULL: no deadline) is the waiting time left, spent
 * here. -1: the peer is gone or failed; -2: the budget ran out. */
int fmt_iso_recv_all(int fd, void *dst, size_t n, long long *budget_ms)
{
    unsigned char *p = dst;
    for (size_t off = 0; off < n;) {
        int r = fmt_iso_wait_fd(fd, POLLIN, budget_ms);
        if (r) return r;
        ssize_t got = recv(fd, p + off, n - off, budget_ms ? MSG_DONTWAIT : 0);
        if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (got <= 0) return -1;
        off += (size_t)got;
    }
    return 0;
}

/* A received message: type and payload (malloc'd), read through a checked cursor. */

int fmt_iso_recv_msg(int fd, fmt_iso_msg *m, size_t max, long long *budget_ms)
{
    unsigned char head[9];
    memset(m, 0, sizeof *m);
    int rc = fmt_iso_recv_all(fd, head, sizeof head, budget_ms);
    if (rc) return rc;
    uint64_t n;
    memcpy(&n, head + 1, 8);
    if (n > max) return -1;
    m->type = (char)head[0];
    m->n = (size_t)n;
    m->p = malloc(m->n + 1);
    if (!m->p) return -1;
    if ((rc = fmt_iso_recv_all(fd, m->p, m->n, budget_ms)) != 0) {
        free(m->p);
        m->p = NULL;
    }
    return rc;
}

uint64_t fmt_iso_get_u64(fmt_iso_msg *m)
{
    uint64_t v = 0;
    if (m->n - m->at < 8) {
        m->bad = 1;
        return 0;
    }
    memcpy(&v, m->p + m->at, 8);
    m->at += 8;
    return v;
}

/* A pointer to the next (length, bytes) field, or NULL when it does not fit. */
const char *fmt_iso_get_bytes(fmt_iso_msg *m, size_t *len)
{
    uint64_t n = fmt_iso_get_u64(m);
    if (m->bad || n > m->n - m->at) {
        m->bad = 1;
        *len = 0;
        return NULL;
    }
    const char *p = (const char *)m->p + m->at;
    m->at += (size_t)n;
    *len = (size_t)n;
    return p;
}

/* The options field by field (the struct's padding is never sent). A field added to
 * mt_format_options must be added here too: the size check below says so. */
#if defined(__LP64__)
_Static_assert(sizeof(mt_format_options) == 112, "send the new mt_format_options field too");
#endif

void fmt_iso_put_options(fmt_buf *b, const mt_format_options *o)
{
   fmt_iso_put_u64(b, o->max_input_bytes);
   fmt_iso_put_u64(b, o->max_part_bytes);
   fmt_iso_put_u64(b, o->max_total_uncompressed);
   fmt_iso_put_u64(b, (uint64_t)o->max_entries);
   fmt_iso_put_u64(b, (uint64_t)o->max_ratio);
   fmt_iso_put_u64(b, (uint64_t)o->max_nodes);
   fmt_iso_put_u64(b, (uint64_t)o->max_depth);
   fmt_iso_put_u64(b, (uint64_t)o->max_attributes);
   fmt_iso_put_u64(b, o->max_attr_bytes);
   fmt_iso_put_u64(b, (uint64_t)o->max_units);
   fmt_iso_put_u64(b, (uint64_t)o->batch_units);
   fmt_iso_put_u64(b, (uint64_t)o->child_cpu_seconds);
   fmt_iso_put_u64(b, o->child_memory);
   fmt_iso_put_u64(b, (uint64_t)o->child_wall_ms);
}

mt_format_options fmt_iso_get_options(fmt_iso_msg *m)
{
    mt_format_options o = mt_format_options_default();
    o.max_input_bytes = (size_t)fmt_iso_get_u64(m);
    o.max_part_bytes = (size_t)fmt_iso_get_u64(m);
    o.max_total_uncompressed = (size_t)fmt_iso_get_u64(m);
    o.max_entries = (long)fmt_iso_get_u64(m);
    o.max_ratio = (int)fmt_iso_get_u64(m);
    o.max_nodes = (long)fmt_iso_get_u64(m);
    o.max_depth = (int)fmt_iso_get_u64(m);
    o.max_attributes = (int)fmt_iso_get_u64(m);
    o.max_attr_bytes = (size_t)fmt_iso_get_u64(m);
    o.max_units = (long)fmt_iso_get_u64(m);
    o.batch_units = (int)fmt_iso_get_u64(m);
    o.child_cpu_seconds = (int)fmt_iso_get_u64(m);
    o.child_memory = (size_t)fmt_iso_get_u64(m);
    o.child_wall_ms = (long)fmt_iso_get_u64(m);
    o.extracted = NULL;
    return o;
}
