/* isolate.c: mt_format_translate_isolated, the readers in a child process with limits.
 * See formats.h for the contract.
 *
 * Messages on the socketpair (a socketpair rather than a pipe: send(MSG_NOSIGNAL) turns
 * a dead peer into an error instead of SIGPIPE in the caller's process): one type byte,
 * a 64-bit payload length, the payload.
 *   child -> parent  'T' n, html, n x (length, bytes)      units to translate
 *                    'P' done, total                       progress
 *                    'X' units, chars                      extracted size
 *                    'D' status, (length, message), (length, output)   the end
 *   parent -> child  'R' status, n x (length, bytes) | (length, message)  translations
 *                    'Y' status, (length, message)         the extracted callback's answer
 * The child is untrusted once it has read the document: every length it sends is checked
 * against what the caller's limits allow. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "format_int.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

/* ---- messages ------------------------------------------------------------------------- */

static void put_u64(fmt_buf *b, uint64_t v) { fmt_buf_put(b, &v, sizeof v); }

static void put_bytes(fmt_buf *b, const void *d, size_t n)
{
    put_u64(b, n);
    fmt_buf_put(b, d, n);
}

/* Sends type + b's bytes; 0 or -1. */
static int send_msg(int fd, char type, const fmt_buf *b)
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
            ssize_t w = send(fd, parts[k] + off, lens[k] - off, MSG_NOSIGNAL);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) return -1;
            off += (size_t)w;
        }
    }
    return 0;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads exactly n bytes. *budget_ms (NULL: no deadline) is the waiting time left, spent
 * here. -1: the peer is gone or failed; -2: the budget ran out. */
static int recv_all(int fd, void *dst, size_t n, long long *budget_ms)
{
    unsigned char *p = dst;
    for (size_t off = 0; off < n;) {
        if (budget_ms) {
            if (*budget_ms <= 0) return -2;
            struct pollfd pf = {.fd = fd, .events = POLLIN};
            long long t0 = now_ms();
            int r = poll(&pf, 1, *budget_ms > 1000000 ? 1000000 : (int)*budget_ms);
            *budget_ms -= now_ms() - t0;
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) return -1;
            if (r == 0) continue; /* the budget is checked again */
        }
        ssize_t got = recv(fd, p + off, n - off, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return -1;
        off += (size_t)got;
    }
    return 0;
}

/* A received message: type and payload (malloc'd), read through a checked cursor. */
typedef struct {
    char type;
    unsigned char *p;
    size_t n, at;
    int bad; /* read past the end */
} msg;

static int recv_msg(int fd, msg *m, size_t max, long long *budget_ms)
{
    unsigned char head[9];
    memset(m, 0, sizeof *m);
    int rc = recv_all(fd, head, sizeof head, budget_ms);
    if (rc) return rc;
    uint64_t n;
    memcpy(&n, head + 1, 8);
    if (n > max) return -1;
    m->type = (char)head[0];
    m->n = (size_t)n;
    m->p = malloc(m->n + 1);
    if (!m->p) return -1;
    if ((rc = recv_all(fd, m->p, m->n, budget_ms)) != 0) {
        free(m->p);
        m->p = NULL;
    }
    return rc;
}

static uint64_t get_u64(msg *m)
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
static const char *get_bytes(msg *m, size_t *len)
{
    uint64_t n = get_u64(m);
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

/* ---- the child -------------------------------------------------------------------------- */

typedef struct {
    int fd;
} child_ctx;

enum { CHILD_MAX_REPLY = 1 << 30 };

static int child_translate(void *user, const char *const *texts, const size_t *lens, int n,
                           int html, char **out, char *err, size_t errlen)
{
    child_ctx *c = user;
    fmt_buf b = {0};
    put_u64(&b, (uint64_t)n);
    put_u64(&b, (uint64_t)html);
    for (int i = 0; i < n; i++) put_bytes(&b, texts[i], lens[i]);
    msg m;
    int rc = send_msg(c->fd, 'T', &b);
    free(b.p);
    if (rc || recv_msg(c->fd, &m, CHILD_MAX_REPLY, NULL) || m.type != 'R') {
        snprintf(err, errlen, "lost the caller");
        return -1;
    }
    rc = (int)get_u64(&m);
    size_t len;
    const char *s;
    if (rc == 0) {
        for (int i = 0; i < n; i++) {
            s = get_bytes(&m, &len);
            out[i] = s ? malloc(len + 1) : NULL;
            if (!out[i]) {
                for (int j = 0; j < i; j++) free(out[j]), out[j] = NULL;
                snprintf(err, errlen, s ? "out of memory" : "bad reply from the caller");
                free(m.p);
                return -1;
            }
            memcpy(out[i], s, len);
            out[i][len] = '\0';
        }
    } else {
        s = get_bytes(&m, &len);
        snprintf(err, errlen, "%.*s", s ? (int)(len > 1000 ? 1000 : len) : 0, s ? s : "");
    }
    free(m.p);
    return rc ? -1 : 0;
}

static void child_progress(void *user, long done, long total)
{
    child_ctx *c = user;
    fmt_buf b = {0};
    put_u64(&b, (uint64_t)done);
    put_u64(&b, (uint64_t)total);
    send_msg(c->fd, 'P', &b);
    free(b.p);
}

static int child_extracted(void *user, long units, long long chars, char *err, size_t errlen)
{
    child_ctx *c = user;
    fmt_buf b = {0};
    put_u64(&b, (uint64_t)units);
    put_u64(&b, (uint64_t)chars);
    msg m;
    int rc = send_msg(c->fd, 'X', &b);
    free(b.p);
    if (rc || recv_msg(c->fd, &m, CHILD_MAX_REPLY, NULL) || m.type != 'Y') {
        snprintf(err, errlen, "lost the caller");
        return -1;
    }
    rc = (int)get_u64(&m);
    size_t len;
    const char *s = get_bytes(&m, &len);
    if (rc) snprintf(err, errlen, "%.*s", s ? (int)(len > 1000 ? 1000 : len) : 0, s ? s : "");
    free(m.p);
    return rc;
}

/* Pages of address space in use now (the child inherits the caller's mappings: models,
 * thread stacks; its limit is this plus opt->child_memory). */
static size_t vm_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (f) {
        if (fscanf(f, "%lu", &pages) != 1) pages = 0;
        fclose(f);
    }
    return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
}

static void set_limit(int what, rlim_t soft, rlim_t hard)
{
    struct rlimit rl = {soft, hard};
    setrlimit(what, &rl);
}

/* Runs in the forked child: never returns. */
static void child_main(int fd, mt_file_format fmt, const unsigned char *data, size_t len,
                       const mt_format_options *opt, int with_extracted)
{
    /* Signals as a fresh process has them: the caller's handlers and masks (a server's
     * threads often block signals) must not hide SIGXCPU. */
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP) signal(s, SIG_DFL);
    size_t vm = vm_bytes();
    /* Only the socket stays open, as fd 0, and no other can be opened (no file, no
     * network): RLIMIT_NOFILE 1. */
    if (fd != 0 && dup2(fd, 0) < 0) _exit(125);
    syscall(SYS_close_range, 1u, ~0u, 0);
    set_limit(RLIMIT_NOFILE, 1, 1);
    set_limit(RLIMIT_FSIZE, 0, 0);
    set_limit(RLIMIT_CORE, 0, 0);
    rlim_t cpu = opt->child_cpu_seconds > 0 ? (rlim_t)opt->child_cpu_seconds : 1;
    set_limit(RLIMIT_CPU, cpu, cpu + 1);
#ifndef UNDER_ASAN
    set_limit(RLIMIT_AS, vm + opt->child_memory, vm + opt->child_memory);
#else
    (void)vm;
#endif
    child_ctx c = {.fd = 0};
    mt_format_options o = *opt;
    o.extracted = with_extracted ? child_extracted : NULL;
    unsigned char *out = NULL;
    size_t out_len = 0;
    char err[512] = "";
    int rc = mt_format_translate(fmt, data, len, &o, child_translate, child_progress, &c, &out,
                                 &out_len, err, sizeof err);
    fmt_buf b = {0};
    put_u64(&b, (uint64_t)(int64_t)rc);
    put_bytes(&b, err, strlen(err));
    put_bytes(&b, out, rc == 0 ? out_len : 0);
    _exit(send_msg(c.fd, 'D', &b) == 0 ? 0 : 124);
}

/* ---- the parent --------------------------------------------------------------------------- */

static int reply_translate(int fd, msg *m, int n_max, mt_format_translate_fn translate,
                           void *user)
{
    uint64_t n = get_u64(m), html = get_u64(m);
    if (m->bad || n == 0 || n > (uint64_t)n_max) return -1;
    const char **texts = calloc((size_t)n, sizeof *texts);
    size_t *lens = calloc((size_t)n, sizeof *lens);
    char **out = calloc((size_t)n, sizeof *out);
    fmt_buf b = {0};
    int rc = -1;
    if (!texts || !lens || !out) goto done;
    for (uint64_t i = 0; i < n; i++)
        if (!(texts[i] = get_bytes(m, &lens[i]))) goto done;
    char err[512] = "";
    int st = translate(user, texts, lens, (int)n, html != 0, out, err, sizeof err);
    put_u64(&b, st ? 1 : 0);
    if (st) {
        put_bytes(&b, err, strlen(err));
    } else {
        for (uint64_t i = 0; i < n; i++)
            put_bytes(&b, out[i] ? out[i] : "", out[i] ? strlen(out[i]) : 0);
    }
    for (uint64_t i = 0; i < n && !st; i++) free(out[i]);
    rc = send_msg(fd, 'R', &b);
done:
    free(b.p);
    free(texts);
    free(lens);
    free(out);
    return rc;
}

static const char *signal_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "segmentation fault";
    case SIGABRT: return "abort";
    case SIGBUS: return "bus error";
    case SIGFPE: return "arithmetic exception";
    case SIGILL: return "illegal instruction";
    case SIGKILL: return "killed";
    case SIGXFSZ: return "file size limit";
    default: return "signal";
    }
}

int mt_format_translate_isolated(mt_file_format fmt, const unsigned char *data, size_t len,
                                 const mt_format_options *opt, mt_format_translate_fn translate,
                                 mt_format_progress_fn progress, void *user, unsigned char **out,
                                 size_t *out_len, char *err, size_t errlen)
{
    mt_format_options def = mt_format_options_default();
    if (!opt) opt = &def;
    if (!translate || !out || !out_len || (!data && len))
        return fmt_fail(MT_FORMAT_FAILED, err, errlen, "bad arguments");
    *out = NULL;
    *out_len = 0;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return fmt_fail(MT_FORMAT_FAILED, err, errlen, "cannot start the document reader: %s",
                        strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(sv[0]);
        close(sv[1]);
        return fmt_fail(MT_FORMAT_FAILED, err, errlen, "cannot start the document reader: %s",
                        strerror(errno));
    }
    if (pid == 0) child_main(sv[1], fmt, data, len, opt, opt->extracted != NULL);
    close(sv[1]);
    int fd = sv[0], rc = MT_FORMAT_FAILED, stopped = 0, done = 0;
    long long budget = opt->child_wall_ms > 0 ? opt->child_wall_ms : 1;
    /* Nothing the child may send is larger than the output of a document within the
     * limits: the file and its XML parts, grown by their translations. */
    size_t max = opt->max_input_bytes * 4 + opt->max_part_bytes * 4 + (1u << 20);
    while (!done) {
        msg m;
        int r = recv_msg(fd, &m, max, &budget);
        if (r == -2) {
            stopped = 1;
            break;
        }
        if (r) break;
        if (m.type == 'T') {
            r = reply_translate(fd, &m, opt->batch_units > 0 ? opt->batch_units : 1, translate,
                                user);
        } else if (m.type == 'P') {
            uint64_t d = get_u64(&m), t = get_u64(&m);
            if (!m.bad && progress && d <= t) progress(user, (long)d, (long)t);
        } else if (m.type == 'X' && opt->extracted) {
            uint64_t units = get_u64(&m), chars = get_u64(&m);
            char msgbuf[512] = "";
            int st = m.bad ? -1 : opt->extracted(user, (long)units, (long long)chars, msgbuf,
                                                  sizeof msgbuf);
            fmt_buf b = {0};
            put_u64(&b, st ? 1 : 0);
            put_bytes(&b, msgbuf, strlen(msgbuf));
            r = m.bad ? -1 : send_msg(fd, 'Y', &b);
            free(b.p);
        } else if (m.type == 'D') {
            int64_t st = (int64_t)get_u64(&m);
            size_t elen, olen;
            const char *e = get_bytes(&m, &elen);
            const char *o = get_bytes(&m, &olen);
            if (!m.bad && st <= 0 && st >= MT_FORMAT_REFUSED) {
                if (st == 0) {
                    *out = malloc(olen + 1);
                    if (*out) {
                        memcpy(*out, o, olen);
                        (*out)[olen] = '\0';
                        *out_len = olen;
                        rc = MT_FORMAT_OK;
                    } else {
                        rc = fmt_fail(MT_FORMAT_FAILED, err, errlen, "out of memory");
                    }
                } else {
                    rc = fmt_fail((int)st, err, errlen, "%.*s", (int)(elen > 1000 ? 1000 : elen),
                                  e);
                }
                done = 1;
            } else {
                r = -1;
            }
        } else {
            r = -1;
        }
        free(m.p);
        if (r) break;
    }
    close(fd);
    /* The child has nothing left to do once it sent its end: stop it either way. */
    kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (done) return rc;
    if (stopped)
        return fmt_fail(MT_FORMAT_INVALID, err, errlen,
                        "%s: the document reader took longer than %ld ms and was stopped",
                        mt_format_name(fmt), opt->child_wall_ms);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU)
        return fmt_fail(MT_FORMAT_INVALID, err, errlen,
                        "%s: the document reader exceeded its CPU time limit of %d s",
                        mt_format_name(fmt), opt->child_cpu_seconds);
    if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)
        return fmt_fail(MT_FORMAT_INVALID, err, errlen,
                        "%s: the document reader crashed (%s, signal %d)", mt_format_name(fmt),
                        signal_name(WTERMSIG(status)), WTERMSIG(status));
    return fmt_fail(MT_FORMAT_INVALID, err, errlen,
                    "%s: the document reader stopped without an answer (killed at its CPU or "
                    "memory limit, or sent something malformed)", mt_format_name(fmt));
}
