/* isolate.c: mt_format_translate_isolated, the readers in a child process with limits:
 * the caller's side (the isolator, starting and replacing the zygote, submitting a job,
 * answering the child's requests). See formats.h for the contract; isolate_zygote.c is
 * what runs in the helper processes, isolate_wire.c the messages between them.
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

#include "isolate_int.h"

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
        fmt_iso_zygote_main();
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

static int reply_translate(int fd, fmt_iso_msg *m, int n_max, mt_format_translate_fn translate,
                           void *user, long long *budget)
{
    uint64_t n = fmt_iso_get_u64(m), html = fmt_iso_get_u64(m);
    if (m->bad || n == 0 || n > (uint64_t)n_max) return -1;
    const char **texts = calloc((size_t)n, sizeof *texts);
    size_t *lens = calloc((size_t)n, sizeof *lens);
    char **out = calloc((size_t)n, sizeof *out);
    fmt_buf b = {0};
    int rc = -1;
    if (!texts || !lens || !out) goto done;
    for (uint64_t i = 0; i < n; i++)
        if (!(texts[i] = fmt_iso_get_bytes(m, &lens[i]))) goto done;
    char err[512] = "";
    int st = translate(user, texts, lens, (int)n, html != 0, out, err, sizeof err);
    fmt_iso_put_u64(&b, st ? 1 : 0);
    if (st) {
        fmt_iso_put_bytes(&b, err, strlen(err));
    } else {
        for (uint64_t i = 0; i < n; i++)
            fmt_iso_put_bytes(&b, out[i] ? out[i] : "", out[i] ? strlen(out[i]) : 0);
    }
    for (uint64_t i = 0; i < n && !st; i++) free(out[i]);
    rc = fmt_iso_send_msg(fd, 'R', &b, budget);
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
        int r = fmt_iso_recv_all(sv[0], &pid, sizeof pid, &pid_budget);
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
        fmt_iso_put_u64(&b, (uint64_t)fmt);
        fmt_iso_put_u64(&b, opt->extracted != NULL);
        fmt_iso_put_options(&b, opt);
        fmt_iso_put_bytes(&b, data, len);
        /* a child that fails to read it is told apart below by how it ended */
        sub = fmt_iso_send_msg(jv[0], 'I', &b, &budget);
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
        fmt_iso_msg m;
        int r = fmt_iso_recv_msg(fd, &m, max, &budget);
        if (r == -2) {
            stopped = 1;
            break;
        }
        if (r) break;
        if (m.type == 'T') {
            r = reply_translate(fd, &m, opt->batch_units > 0 ? opt->batch_units : 1, translate,
                                user, &budget);
        } else if (m.type == 'P') {
            uint64_t d = fmt_iso_get_u64(&m), t = fmt_iso_get_u64(&m);
            if (!m.bad && progress && d <= t) progress(user, (long)d, (long)t);
        } else if (m.type == 'X' && opt->extracted) {
            uint64_t units = fmt_iso_get_u64(&m), chars = fmt_iso_get_u64(&m);
            char msgbuf[512] = "";
            int st = m.bad ? -1 : opt->extracted(user, (long)units, (long long)chars, msgbuf,
                                                  sizeof msgbuf);
            fmt_buf b = {0};
            fmt_iso_put_u64(&b, st ? 1 : 0);
            fmt_iso_put_bytes(&b, msgbuf, strlen(msgbuf));
            r = m.bad ? -1 : fmt_iso_send_msg(fd, 'Y', &b, &budget);
            free(b.p);
        } else if (m.type == 'D') {
            int64_t st = (int64_t)fmt_iso_get_u64(&m);
            size_t elen, olen;
            const char *e = fmt_iso_get_bytes(&m, &elen);
            const char *o = fmt_iso_get_bytes(&m, &olen);
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
    if (fmt_iso_recv_all(sv[0], &status, sizeof status, &wait_budget) != 0) status = -1;
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
