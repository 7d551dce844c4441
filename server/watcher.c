/* watcher.c: every WATCH_INTERVAL_MS, cancels the service tasks of suspended /translate
 * connections whose client hung up or whose deadline passed, and has the service drop
 * their queued sentences. */
#include "internal.h"

#include <poll.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <time.h>

#define WATCH_INTERVAL_MS 50

void srv_watch_add(mt_server *s, req_ctx *c)
{
    pthread_mutex_lock(&s->watch_mu);
    c->wprev = NULL;
    c->wnext = s->watched;
    if (s->watched) s->watched->wprev = c;
    s->watched = c;
    s->n_watched++;
    c->watched = 1;
    pthread_mutex_unlock(&s->watch_mu);
}

void srv_watch_remove_locked(mt_server *s, req_ctx *c)
{
    if (!c->watched) return;
    if (c->wprev) c->wprev->wnext = c->wnext;
    else s->watched = c->wnext;
    if (c->wnext) c->wnext->wprev = c->wprev;
    c->wnext = c->wprev = NULL;
    c->watched = 0;
    s->n_watched--;
    if (s->n_watched == 0) pthread_cond_broadcast(&s->watch_cond);
}

/* Every WATCH_INTERVAL_MS: cancels jobs whose client hung up or whose deadline passed,
 * then has the service drop their queued sentences. */
void *srv_watcher_main(void *arg)
{
    mt_server *s = arg;
    struct pollfd *fds = NULL;
    req_ctx **who = NULL;
    int cap = 0;
    pthread_mutex_lock(&s->watch_mu);
    while (!s->watch_stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += WATCH_INTERVAL_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&s->watch_cond, &s->watch_mu, &ts);
        if (s->watch_stop) break;
        srv_conns_expire(s); /* takes conns_mu only */
        if (s->n_watched > cap) {
            int ncap = s->n_watched * 2;
            struct pollfd *nf = realloc(fds, sizeof *nf * (size_t)ncap);
            if (nf) fds = nf;
            req_ctx **nw = realloc(who, sizeof *nw * (size_t)ncap);
            if (nw) who = nw;
            if (!nf || !nw) continue;
            cap = ncap;
        }
        int n = 0, cancelled = 0;
        double now = mt_now();
        for (req_ctx *c = s->watched; c; c = c->wnext) {
            if (!c->stopped && mt_service_task_expire(c->task, now)) {
                c->stopped = 1;
                cancelled++;
            }
            if (c->fd >= 0 && !c->stopped) {
                fds[n].fd = c->fd;
                fds[n].events = POLLRDHUP;
                fds[n].revents = 0;
                who[n++] = c;
            }
        }
        if (n > 0 && poll(fds, (nfds_t)n, 0) > 0) {
            for (int i = 0; i < n; i++) {
                /* The client sent its FIN: either it closed the connection, or it only
                 * half-closed it (shutdown(SHUT_WR), nc -N, some proxies) and still reads.
                 * TCP cannot tell them apart until we send data: an HTTP/1.1 client is sent
                 * an interim "100 Continue" (RFC 9110 15.2: clients parse 1xx answers before
                 * the final one); a closed socket answers it with a reset, seen below as
                 * POLLHUP/POLLERR on the next round, a half-closed one reads it and gets its
                 * answer. An HTTP/1.0 client is not probed: its job runs to its deadline. */
                if ((fds[i].revents & POLLRDHUP) && !(fds[i].revents & (POLLHUP | POLLERR)) &&
                    who[i]->http11 && !who[i]->probed) {
                    static const char interim[] = "HTTP/1.1 100 Continue\r\n\r\n";
                    who[i]->probed = 1;
                    ssize_t w = send(fds[i].fd, interim, sizeof interim - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
                    if (w >= 0) continue;
                }
                if (fds[i].revents & (POLLHUP | POLLERR | POLLNVAL) ||
                    ((fds[i].revents & POLLRDHUP) && !who[i]->http11)) {
                    who[i]->stopped = 1;
                    if (mt_service_task_cancel(who[i]->task, MT_SERVICE_CLIENT_GONE))
                        cancelled++;
                }
            }
        }
        if (cancelled && s->svc) {
            /* The purge may finish jobs, whose callbacks take watch_mu. */
            pthread_mutex_unlock(&s->watch_mu);
            mt_service_purge(s->svc);
            pthread_mutex_lock(&s->watch_mu);
        }
    }
    pthread_mutex_unlock(&s->watch_mu);
    free(fds);
    free(who);
    return NULL;
}

/* Service callback: the task is finished (worker or watcher thread). */
void srv_job_done(mt_service_task *task, void *user)
{
    (void)task;
    req_ctx *c = user;
    mt_server *s = c->srv;
    pthread_mutex_lock(&s->watch_mu);
    srv_watch_remove_locked(s, c);
    pthread_mutex_unlock(&s->watch_mu);
    MHD_resume_connection(c->conn);
}
