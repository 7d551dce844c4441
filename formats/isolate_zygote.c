/* isolate_zygote.c: what runs in the helper processes of isolate.c: the zygote, forked
 * before the caller's threads, which forks one child per job, reports its pid and wait
 * status and kills it when the caller hangs up; and the child, which reads the document
 * under resource limits and asks the caller over the job socket for each batch of
 * translations. The child trusts nothing but its own document. */
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

#include "isolate_int.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

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
    fmt_iso_put_u64(&b, (uint64_t)n);
    fmt_iso_put_u64(&b, (uint64_t)html);
    for (int i = 0; i < n; i++) fmt_iso_put_bytes(&b, texts[i], lens[i]);
    fmt_iso_msg m;
    int rc = fmt_iso_send_msg(c->fd, 'T', &b, NULL);
    free(b.p);
    if (rc || fmt_iso_recv_msg(c->fd, &m, CHILD_MAX_REPLY, NULL) || m.type != 'R') {
        snprintf(err, errlen, "lost the caller");
        return -1;
    }
    rc = (int)fmt_iso_get_u64(&m);
    size_t len;
    const char *s;
    if (rc == 0) {
        for (int i = 0; i < n; i++) {
            s = fmt_iso_get_bytes(&m, &len);
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
        s = fmt_iso_get_bytes(&m, &len);
        snprintf(err, errlen, "%.*s", s ? (int)(len > 1000 ? 1000 : len) : 0, s ? s : "");
    }
    free(m.p);
    return rc ? -1 : 0;
}

static void child_progress(void *user, long done, long total)
{
    child_ctx *c = user;
    fmt_buf b = {0};
    fmt_iso_put_u64(&b, (uint64_t)done);
    fmt_iso_put_u64(&b, (uint64_t)total);
    fmt_iso_send_msg(c->fd, 'P', &b, NULL);
    free(b.p);
}

static int child_extracted(void *user, long units, long long chars, char *err, size_t errlen)
{
    child_ctx *c = user;
    fmt_buf b = {0};
    fmt_iso_put_u64(&b, (uint64_t)units);
    fmt_iso_put_u64(&b, (uint64_t)chars);
    fmt_iso_msg m;
    int rc = fmt_iso_send_msg(c->fd, 'X', &b, NULL);
    free(b.p);
    if (rc || fmt_iso_recv_msg(c->fd, &m, CHILD_MAX_REPLY, NULL) || m.type != 'Y') {
        snprintf(err, errlen, "lost the caller");
        return -1;
    }
    rc = (int)fmt_iso_get_u64(&m);
    size_t len;
    const char *s = fmt_iso_get_bytes(&m, &len);
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
    fmt_iso_msg m;
    if (fmt_iso_recv_msg(0, &m, CHILD_MAX_REPLY, NULL) || m.type != 'I') _exit(123);
    uint64_t fmt = fmt_iso_get_u64(&m), with_extracted = fmt_iso_get_u64(&m);
    size_t len;
    mt_format_options o = fmt_iso_get_options(&m);
    const unsigned char *data = (const unsigned char *)fmt_iso_get_bytes(&m, &len);
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
    fmt_iso_put_u64(&b, (uint64_t)(int64_t)rc);
    fmt_iso_put_bytes(&b, err, strlen(err));
    fmt_iso_put_bytes(&b, out, rc == 0 ? out_len : 0);
    _exit(fmt_iso_send_msg(c.fd, 'D', &b, NULL) == 0 ? 0 : 124);
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
void fmt_iso_zygote_main(void)
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
