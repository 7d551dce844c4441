/* isolate.c: mt_format_translate_isolated, the readers in a child process with limits.
 * See formats.h for the contract.
 *
 * The children are forked by a helper process (the "zygote") that mt_format_isolator_create
 * forks while its caller is still single-threaded and that never runs anything else, so a
 * child never inherits a lock another thread held (libxml2's, a library's, the model's).
 * Per call the caller makes two socketpairs, a job socket and a status socket, and hands
 * their far ends to the zygote in one SOCK_SEQPACKET message (SCM_RIGHTS). The zygote
 * forks a child that keeps only the job socket and answers on the status socket with the
 * child's pid and, once it reaped the child, its wait status. The caller shutting its end
 * of the status socket makes the zygote SIGKILL the child (the zygote owns the pid until
 * it reaps it, so no other process can be hit by a reused pid). The zygote exits when its
 * control socket closes (the caller's process is gone or freed the isolator), taking its
 * children with it (PR_SET_PDEATHSIG).
 *
 * Messages on the job socket (a socketpair rather than a pipe: send(MSG_NOSIGNAL) turns
 * a dead peer into an error instead of SIGPIPE in the caller's process): one type byte,
 * a 64-bit payload length, the payload.
 *   parent -> child  'I' fmt, with_extracted, 13 option fields, (length, document)
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
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
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

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until fd is ready for `events`, spending *budget_ms (NULL: no deadline). 0: ready;
 * -1: error; -2: the budget ran out. */
static int wait_fd(int fd, short events, long long *budget_ms)
{
    if (!budget_ms) return 0;
    for (;;) {
        if (*budget_ms <= 0) return -2;
        struct pollfd pf = {.fd = fd, .events = events};
        long long t0 = now_ms();
        int r = poll(&pf, 1, *budget_ms > 1000000 ? 1000000 : (int)*budget_ms);
        *budget_ms -= now_ms() - t0;
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r > 0) return 0;
    }
}

/* Sends type + b's bytes; 0, -1 (the peer is gone) or -2 (the budget ran out). */
static int send_msg(int fd, char type, const fmt_buf *b, long long *budget_ms)
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
            int r = wait_fd(fd, POLLOUT, budget_ms);
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
static int recv_all(int fd, void *dst, size_t n, long long *budget_ms)
{
    unsigned char *p = dst;
    for (size_t off = 0; off < n;) {
        int r = wait_fd(fd, POLLIN, budget_ms);
        if (r) return r;
        ssize_t got = recv(fd, p + off, n - off, budget_ms ? MSG_DONTWAIT : 0);
        if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
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

/* The options field by field (the struct's padding is never sent). A field added to
 * mt_format_options must be added here too: the size check below says so. */
#if defined(__LP64__)
_Static_assert(sizeof(mt_format_options) == 112, "send the new mt_format_options field too");
#endif

static void put_options(fmt_buf *b, const mt_format_options *o)
{
    put_u64(b, o->max_input_bytes);
    put_u64(b, o->max_part_bytes);
    put_u64(b, o->max_total_uncompressed);
    put_u64(b, (uint64_t)o->max_entries);
    put_u64(b, (uint64_t)o->max_ratio);
    put_u64(b, (uint64_t)o->max_nodes);
    put_u64(b, (uint64_t)o->max_depth);
    put_u64(b, (uint64_t)o->max_attributes);
    put_u64(b, o->max_attr_bytes);
    put_u64(b, (uint64_t)o->max_units);
    put_u64(b, (uint64_t)o->batch_units);
    put_u64(b, (uint64_t)o->child_cpu_seconds);
    put_u64(b, o->child_memory);
    put_u64(b, (uint64_t)o->child_wall_ms);
}

static mt_format_options get_options(msg *m)
{
    mt_format_options o = mt_format_options_default();
    o.max_input_bytes = (size_t)get_u64(m);
    o.max_part_bytes = (size_t)get_u64(m);
    o.max_total_uncompressed = (size_t)get_u64(m);
    o.max_entries = (long)get_u64(m);
    o.max_ratio = (int)get_u64(m);
    o.max_nodes = (long)get_u64(m);
    o.max_depth = (int)get_u64(m);
    o.max_attributes = (int)get_u64(m);
    o.max_attr_bytes = (size_t)get_u64(m);
    o.max_units = (long)get_u64(m);
    o.batch_units = (int)get_u64(m);
    o.child_cpu_seconds = (int)get_u64(m);
    o.child_memory = (size_t)get_u64(m);
    o.child_wall_ms = (long)get_u64(m);
    o.extracted = NULL;
    return o;
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
    int rc = send_msg(c->fd, 'T', &b, NULL);
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
    send_msg(c->fd, 'P', &b, NULL);
    free(b.p);
}

static int child_extracted(void *user, long units, long long chars, char *err, size_t errlen)
{
    child_ctx *c = user;
    fmt_buf b = {0};
    put_u64(&b, (uint64_t)units);
    put_u64(&b, (uint64_t)chars);
    msg m;
    int rc = send_msg(c->fd, 'X', &b, NULL);
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

static void set_signals(void)
{
    /* Signals as a fresh process has them: the caller's handlers and masks (a server's
     * threads often block signals) must not hide SIGXCPU. A stop signal sent to the whole
     * process group or cgroup (Ctrl-C, systemd's stop) is ignored: the caller decides when
     * its jobs end (it drains them, or its exit closes their sockets). */
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP) signal(s, SIG_DFL);
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
}

/* Runs in the child the zygote forked, with the job socket: never returns. */
static void child_main(int fd)
{
    set_signals();
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* the zygote is single-threaded: its only thread */
    size_t vm = vm_bytes();
    /* Only the job socket stays open, as fd 0, and no other can be opened (no file, no
     * network): RLIMIT_NOFILE 1. */
    if (fd != 0 && dup2(fd, 0) < 0) _exit(125);
    syscall(SYS_close_range, 1u, ~0u, 0);
    set_limit(RLIMIT_NOFILE, 1, 1);
    set_limit(RLIMIT_FSIZE, 0, 0);
    set_limit(RLIMIT_CORE, 0, 0);
    msg m;
    if (recv_msg(0, &m, CHILD_MAX_REPLY, NULL) || m.type != 'I') _exit(123);
    uint64_t fmt = get_u64(&m), with_extracted = get_u64(&m);
    size_t len;
    mt_format_options o = get_options(&m);
    const unsigned char *data = (const unsigned char *)get_bytes(&m, &len);
    if (m.bad) _exit(123);
    rlim_t cpu = o.child_cpu_seconds > 0 ? (rlim_t)o.child_cpu_seconds : 1;
    set_limit(RLIMIT_CPU, cpu, cpu + 1);
#ifndef UNDER_ASAN
    /* the document is already in (m), counted in vm's growth: what the caller allows */
    set_limit(RLIMIT_AS, vm + o.child_memory, vm + o.child_memory);
#else
    (void)vm;
#endif
    child_ctx c = {.fd = 0};
    o.extracted = with_extracted ? child_extracted : NULL;
    unsigned char *out = NULL;
    size_t out_len = 0;
    char err[512] = "";
    int rc = mt_format_translate((mt_file_format)fmt, data, len, &o, child_translate,
                                 child_progress, &c, &out, &out_len, err, sizeof err);
    fmt_buf b = {0};
    put_u64(&b, (uint64_t)(int64_t)rc);
    put_bytes(&b, err, strlen(err));
    put_bytes(&b, out, rc == 0 ? out_len : 0);
    _exit(send_msg(c.fd, 'D', &b, NULL) == 0 ? 0 : 124);
}

/* ---- the zygote --------------------------------------------------------------------------- */

typedef struct {
    pid_t pid;
    int st;     /* the status socket; -1 once the caller hung up */
    int killed; /* SIGKILL sent */
} zchild;

static void send_int(int fd, int64_t v)
{
    if (fd >= 0) (void)send(fd, &v, sizeof v, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* The zygote's loop: fd 3 is the control socket. Never returns. */
static void zygote_main(void)
{
    set_signals();
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0) _exit(2);
    zchild *kids = NULL;
    size_t n = 0, cap = 0;
    struct pollfd *pf = NULL;
    for (;;) {
        struct pollfd *np = realloc(pf, (n + 2) * sizeof *pf);
        if (!np) _exit(2);
        pf = np;
        pf[0] = (struct pollfd){.fd = 3, .events = POLLIN};
        pf[1] = (struct pollfd){.fd = sfd, .events = POLLIN};
        for (size_t i = 0; i < n; i++)
            pf[2 + i] = (struct pollfd){.fd = kids[i].killed ? -1 : kids[i].st, .events = POLLIN};
        if (poll(pf, (nfds_t)(n + 2), -1) < 0) {
            if (errno == EINTR) continue;
            _exit(2);
        }
        /* A caller that hung up its status socket is done with its child (or gave up on
         * it): kill it now; it is reaped below when SIGCHLD comes. */
        for (size_t i = 0; i < n; i++) {
            if (pf[2 + i].fd >= 0 && pf[2 + i].revents) {
                kill(kids[i].pid, SIGKILL);
                kids[i].killed = 1;
            }
        }
        if (pf[1].revents) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) > 0) {}
            int status;
            pid_t pid;
            while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
                for (size_t i = 0; i < n; i++) {
                    if (kids[i].pid != pid) continue;
                    send_int(kids[i].st, status);
                    close(kids[i].st);
                    kids[i] = kids[--n];
                    break;
                }
            }
        }
        if (pf[0].revents) {
            char byte;
            union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(2 * sizeof(int))];
            } cm;
            struct iovec iov = {.iov_base = &byte, .iov_len = 1};
            struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
                                .msg_controllen = sizeof cm.buf};
            ssize_t got = recvmsg(3, &mh, MSG_CMSG_CLOEXEC);
            if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (got <= 0) {
                /* the caller's process is gone or freed the isolator */
                for (size_t i = 0; i < n; i++) kill(kids[i].pid, SIGKILL);
                _exit(0);
            }
            struct cmsghdr *h = CMSG_FIRSTHDR(&mh);
            if (!h || h->cmsg_type != SCM_RIGHTS || h->cmsg_len != CMSG_LEN(2 * sizeof(int)))
                continue;
            int fds[2];
            memcpy(fds, CMSG_DATA(h), sizeof fds);
            if (n == cap) {
                size_t nc = cap ? cap * 2 : 16;
                zchild *nk = realloc(kids, nc * sizeof *kids);
                if (!nk) {
                    close(fds[0]);
                    close(fds[1]);
                    continue;
                }
                kids = nk;
                cap = nc;
            }
            pid_t pid = fork();
            if (pid == 0) child_main(fds[0]);
            close(fds[0]);
            send_int(fds[1], pid > 0 ? pid : -1);
            if (pid < 0) {
                close(fds[1]);
                continue;
            }
            kids[n++] = (zchild){.pid = pid, .st = fds[1]};
        }
    }
}

struct mt_format_isolator {
    pthread_mutex_t mu; /* guards ctl and pid when the zygote is replaced */
    int ctl;            /* the control socket (SOCK_SEQPACKET) */
    pid_t pid;          /* the zygote */
    long gen;           /* bumped when the zygote is replaced */
    long restarts;
};

/* Forks the zygote: 0 or -1 with errno. */
static int zygote_start(mt_format_isolator *iso)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return -1;
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(sv[0]);
        close(sv[1]);
        errno = e;
        return -1;
    }
    if (pid == 0) {
        /* nothing of the caller's stays open but stdin/out/err (sanitizer reports) */
        if (dup2(sv[1], 3) < 0) _exit(2);
        syscall(SYS_close_range, 4u, ~0u, 0);
        zygote_main();
    }
    close(sv[1]);
    iso->ctl = sv[0];
    iso->pid = pid;
    return 0;
}

mt_format_isolator *mt_format_isolator_create(char *err, size_t errlen)
{
    mt_format_isolator *iso = calloc(1, sizeof *iso);
    if (!iso) {
        fmt_fail(MT_FORMAT_FAILED, err, errlen, "out of memory");
        return NULL;
    }
    if (zygote_start(iso)) {
        fmt_fail(MT_FORMAT_FAILED, err, errlen, "cannot start the document reader process: %s",
                 strerror(errno));
        free(iso);
        return NULL;
    }
    pthread_mutex_init(&iso->mu, NULL);
    return iso;
}

void mt_format_isolator_free(mt_format_isolator *iso)
{
    if (!iso) return;
    close(iso->ctl); /* the zygote kills its children and exits */
    while (waitpid(iso->pid, NULL, 0) < 0 && errno == EINTR) {}
    pthread_mutex_destroy(&iso->mu);
    free(iso);
}

long mt_format_isolator_restarts(mt_format_isolator *iso)
{
    pthread_mutex_lock(&iso->mu);
    long r = iso->restarts;
    pthread_mutex_unlock(&iso->mu);
    return r;
}

/* Replaces the zygote of generation gen when it died (a caller found its socket closed);
 * another thread may have done it already. Called with iso->mu held. 0 or -1. */
static int zygote_replace(mt_format_isolator *iso, long gen, char *why, size_t whylen)
{
    if (iso->gen != gen) return 0;
    /* This fork happens in a thread of a process that may have others; the new zygote runs
     * no library code, and its children only this module, libxml2 and libzip, which the
     * caller's process does not run itself when it sends its documents here. */
    kill(iso->pid, SIGKILL);
    while (waitpid(iso->pid, NULL, 0) < 0 && errno == EINTR) {}
    if (iso->ctl >= 0) close(iso->ctl);
    iso->ctl = -1;
    if (zygote_start(iso)) {
        snprintf(why, whylen, "the reader process had exited and could not be restarted: %s",
                 strerror(errno));
        return -1;
    }
    iso->gen++;
    iso->restarts++;
    return 0;
}

/* Hands the far ends of a job to the zygote; replaces a zygote that died (once). 0 with
 * *gen the zygote's generation, or -1 with the reason in why. */
static int zygote_submit(mt_format_isolator *iso, int job, int st, long *gen, char *why,
                         size_t whylen)
{
    for (int attempt = 0;; attempt++) {
        pthread_mutex_lock(&iso->mu);
        *gen = iso->gen;
        char byte = 'J';
        union {
            struct cmsghdr h;
            char buf[CMSG_SPACE(2 * sizeof(int))];
        } cm;
        memset(&cm, 0, sizeof cm);
        struct iovec iov = {.iov_base = &byte, .iov_len = 1};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
                            .msg_controllen = sizeof cm.buf};
        struct cmsghdr *h = CMSG_FIRSTHDR(&mh);
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_RIGHTS;
        h->cmsg_len = CMSG_LEN(2 * sizeof(int));
        int fds[2] = {job, st};
        memcpy(CMSG_DATA(h), fds, sizeof fds);
        ssize_t w;
        do {
            w = sendmsg(iso->ctl, &mh, MSG_NOSIGNAL);
        } while (w < 0 && errno == EINTR);
        int e = errno;
        if (w == 1) {
            pthread_mutex_unlock(&iso->mu);
            return 0;
        }
        if (attempt > 0 || (e != EPIPE && e != ECONNRESET && e != ENOTCONN && e != EBADF)) {
            pthread_mutex_unlock(&iso->mu);
            snprintf(why, whylen, "%s", strerror(e));
            return -1;
        }
        int rc = zygote_replace(iso, *gen, why, whylen);
        pthread_mutex_unlock(&iso->mu);
        if (rc) return -1;
    }
}

/* ---- the parent --------------------------------------------------------------------------- */

static int reply_translate(int fd, msg *m, int n_max, mt_format_translate_fn translate,
                           void *user, long long *budget)
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
    rc = send_msg(fd, 'R', &b, budget);
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

int mt_format_translate_isolated(mt_format_isolator *iso, mt_file_format fmt,
                                 const unsigned char *data, size_t len,
                                 const mt_format_options *opt, mt_format_translate_fn translate,
                                 mt_format_progress_fn progress, void *user, unsigned char **out,
                                 size_t *out_len, char *err, size_t errlen)
{
    mt_format_options def = mt_format_options_default();
    if (!opt) opt = &def;
    if (!iso || !translate || !out || !out_len || (!data && len))
        return fmt_fail(MT_FORMAT_FAILED, err, errlen, "bad arguments");
    *out = NULL;
    *out_len = 0;
    int jv[2], sv[2], sub = -1;
    char why[200] = "";
    int64_t pid = -1;
    /* Twice at most: a zygote that died after taking the job (its socket closed before it
     * answered) is replaced and asked again. */
    for (int attempt = 0; attempt < 2; attempt++) {
        why[0] = '\0';
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, jv) != 0)
            return fmt_fail(MT_FORMAT_FAILED, err, errlen, "cannot start the document reader: %s",
                            strerror(errno));
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
            close(jv[0]);
            close(jv[1]);
            return fmt_fail(MT_FORMAT_FAILED, err, errlen, "cannot start the document reader: %s",
                            strerror(errno));
        }
        long gen = 0;
        sub = zygote_submit(iso, jv[1], sv[1], &gen, why, sizeof why);
        close(jv[1]);
        close(sv[1]);
        if (sub) break;
        /* the zygote answers at once; a few seconds cover a loaded machine */
        long long pid_budget = 10000;
        int r = recv_all(sv[0], &pid, sizeof pid, &pid_budget);
        if (r == 0 && pid > 0) break;
        close(jv[0]);
        close(sv[0]);
        jv[0] = sv[0] = -1;
        sub = -1;
        snprintf(why, sizeof why, "the reader process did not start a child");
        if (r != -1 || attempt > 0) break;
        pthread_mutex_lock(&iso->mu);
        int rr = zygote_replace(iso, gen, why, sizeof why);
        pthread_mutex_unlock(&iso->mu);
        if (rr) break;
    }
    long long budget = opt->child_wall_ms > 0 ? opt->child_wall_ms : 1;
    if (!sub) {
        fmt_buf b = {0};
        put_u64(&b, (uint64_t)fmt);
        put_u64(&b, opt->extracted != NULL);
        put_options(&b, opt);
        put_bytes(&b, data, len);
        /* a child that fails to read it is told apart below by how it ended */
        sub = send_msg(jv[0], 'I', &b, &budget);
        free(b.p);
    }
    if (why[0]) {
        if (jv[0] >= 0) close(jv[0]);
        if (sv[0] >= 0) close(sv[0]);
        return fmt_fail(MT_FORMAT_FAILED, err, errlen, "cannot start the document reader: %s",
                        why);
    }
    int fd = jv[0], rc = MT_FORMAT_FAILED, stopped = 0, done = 0;
    /* Nothing the child may send is larger than the output of a document within the
     * limits: the file and its XML parts, grown by their translations. */
    size_t max = opt->max_input_bytes * 4 + opt->max_part_bytes * 4 + (1u << 20);
    while (!done && !sub) {
        msg m;
        int r = recv_msg(fd, &m, max, &budget);
        if (r == -2) {
            stopped = 1;
            break;
        }
        if (r) break;
        if (m.type == 'T') {
            r = reply_translate(fd, &m, opt->batch_units > 0 ? opt->batch_units : 1, translate,
                                user, &budget);
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
            r = m.bad ? -1 : send_msg(fd, 'Y', &b, &budget);
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
        if (r == -2) stopped = 1;
        if (r) break;
    }
    if (sub == -2) stopped = 1;
    close(fd);
    /* The child has nothing left to do once it sent its end: hanging up the status socket
     * makes the zygote kill it either way, then tell how it ended. */
    if (done) {
        close(sv[0]);
        return rc;
    }
    shutdown(sv[0], SHUT_WR);
    int64_t status = -1;
    long long wait_budget = 10000;
    if (recv_all(sv[0], &status, sizeof status, &wait_budget) != 0) status = -1;
    close(sv[0]);
    if (status == -1)
        return fmt_fail(MT_FORMAT_FAILED, err, errlen,
                        "%s: the document reader's helper process is gone", mt_format_name(fmt));
    int ws = (int)status;
    if (stopped)
        return fmt_fail(MT_FORMAT_INVALID, err, errlen,
                        "%s: the document reader took longer than %ld ms and was stopped",
                        mt_format_name(fmt), opt->child_wall_ms);
    if (WIFSIGNALED(ws) && WTERMSIG(ws) == SIGXCPU)
        return fmt_fail(MT_FORMAT_INVALID, err, errlen,
                        "%s: the document reader exceeded its CPU time limit of %d s",
                        mt_format_name(fmt), opt->child_cpu_seconds);
    if (WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL)
        return fmt_fail(MT_FORMAT_INVALID, err, errlen,
                        "%s: the document reader was killed (SIGKILL: its memory limit, or from "
                        "outside) before it answered", mt_format_name(fmt));
    if (WIFSIGNALED(ws))
        return fmt_fail(MT_FORMAT_INVALID, err, errlen,
                        "%s: the document reader crashed (%s, signal %d)", mt_format_name(fmt),
                        signal_name(WTERMSIG(ws)), WTERMSIG(ws));
    return fmt_fail(MT_FORMAT_INVALID, err, errlen,
                    "%s: the document reader stopped without an answer (killed at its CPU or "
                    "memory limit, or sent something malformed)", mt_format_name(fmt));
}
