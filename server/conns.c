/* conns.c: limits libmicrohttpd 0.9.75 does not have, kept per connection (its socket
 * context): a deadline for receiving each request whole (a slowloris client that sends a
 * byte now and then never trips an idle timeout), at most max_connections_per_ip
 * connections from one address, and a 503 rather than silence for a connection over the
 * limits.
 *
 * A connection waits for a request from its accept, and again after each answer; once
 * the request is whole (srv_conn_received) the clock stops until the answer has gone.
 * The watcher calls srv_conns_expire: a connection still receiving after receive_timeout
 * gets a 408 (if it never had an answer; an idle keep-alive one is just closed) and is
 * shut down (shutdown(2), never close: the descriptor stays
 * libmicrohttpd's, which then sees the end of the stream and cleans up). */
#include "internal.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct srv_conn {
    int fd;
    char addr[64];
    double t_wait;    /* when the current request started to be awaited */
    int receiving;    /* 1 until the request is whole */
    int refused;      /* answered 503 at accept: its request is not served */
    int kept_alive;   /* it has had an answer: waiting now may be plain keep-alive idling */
    srv_conn *prev, *next;
};

/* Writes a complete minimal answer straight to the socket; only while libmicrohttpd has
 * nothing to send on it (before a request is whole). */
static void send_raw(int fd, int status, const char *reason, const char *extra)
{
    char msg[512];
    int n = snprintf(msg, sizeof msg,
                     "HTTP/1.1 %d %s\r\nConnection: close\r\nContent-Type: application/json\r\n%s"
                     "Content-Length: %zu\r\n\r\n{\"error\":\"%s\"}",
                     status, reason, extra, strlen(reason) + 12, reason);
    if (n > 0 && (size_t)n < sizeof msg) {
        ssize_t w = send(fd, msg, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
        (void)w; /* best effort: the connection is being dropped anyway */
    }
}

static void unlink_conn(mt_server *s, srv_conn *k)
{
    if (k->prev) k->prev->next = k->next;
    else s->conns = k->next;
    if (k->next) k->next->prev = k->prev;
    s->n_conns--;
}

void srv_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                       enum MHD_ConnectionNotificationCode code)
{
    mt_server *s = cls;
    if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        srv_conn *k = *socket_context;
        if (!k) return;
        pthread_mutex_lock(&s->conns_mu);
        unlink_conn(s, k);
        pthread_mutex_unlock(&s->conns_mu);
        free(k);
        *socket_context = NULL;
        return;
    }
    srv_conn *k = calloc(1, sizeof *k);
    if (!k) return; /* untracked: served without these limits */
    const union MHD_ConnectionInfo *fi = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    const union MHD_ConnectionInfo *ai = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    k->fd = fi ? fi->connect_fd : -1;
    snprintf(k->addr, sizeof k->addr, "-");
    if (ai && ai->client_addr) {
        const struct sockaddr *sa = ai->client_addr;
        socklen_t len = sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
        if (getnameinfo(sa, len, k->addr, sizeof k->addr, NULL, 0, NI_NUMERICHOST) != 0)
            snprintf(k->addr, sizeof k->addr, "-");
    }
    k->t_wait = mt_now();
    k->receiving = 1;
    const mt_config *cfg = s->cfg;
    pthread_mutex_lock(&s->conns_mu);
    int same = 0;
    for (srv_conn *o = s->conns; o; o = o->next) same += !o->refused && strcmp(o->addr, k->addr) == 0;
    int over_all = s->n_conns - s->n_refused >= cfg->max_connections;
    int over_ip = cfg->max_connections_per_ip > 0 && same >= cfg->max_connections_per_ip;
    k->next = s->conns;
    if (s->conns) s->conns->prev = k;
    s->conns = k;
    s->n_conns++;
    if ((over_all || over_ip) && k->fd >= 0) {
        k->refused = 1;
        s->n_refused++;
        send_raw(k->fd, 503, over_ip ? "too many connections from this address" : "too many connections",
                 "Retry-After: 1\r\n");
        shutdown(k->fd, SHUT_WR);
    }
    pthread_mutex_unlock(&s->conns_mu);
    *socket_context = k;
    if (k->refused) mt_log_write(s->log, MT_LOG_WARN, "connection_refused", "remote=%s reason=%s", k->addr,
                                 over_ip ? "per_ip_limit" : "max_connections");
}

static srv_conn *conn_of(req_ctx *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c->conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

int srv_conn_refused(mt_server *s, struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    srv_conn *k = ci ? ci->socket_context : NULL;
    if (!k) return 0;
    pthread_mutex_lock(&s->conns_mu);
    int refused = k->refused;
    pthread_mutex_unlock(&s->conns_mu);
    return refused;
}

void srv_conn_received(req_ctx *c)
{
    srv_conn *k = conn_of(c);
    if (!k) return;
    pthread_mutex_lock(&c->srv->conns_mu);
    k->receiving = 0;
    pthread_mutex_unlock(&c->srv->conns_mu);
}

void srv_conn_answered(mt_server *s, struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    srv_conn *k = ci ? ci->socket_context : NULL;
    if (!k) return;
    pthread_mutex_lock(&s->conns_mu);
    k->receiving = 1; /* keep-alive: the next request's clock starts now */
    k->kept_alive = 1;
    k->t_wait = mt_now();
    pthread_mutex_unlock(&s->conns_mu);
}

void srv_conns_expire(mt_server *s)
{
    double limit = s->cfg->receive_timeout;
    if (limit <= 0) return;
    double now = mt_now();
    pthread_mutex_lock(&s->conns_mu);
    for (srv_conn *k = s->conns; k; k = k->next) {
        if (!k->receiving || k->fd < 0 || now - k->t_wait <= limit) continue;
        /* A 408 for a request that did not arrive in time; an idle keep-alive connection is
         * just closed (a 408 there could cross a request the client is sending). */
        if (!k->refused && !k->kept_alive) send_raw(k->fd, 408, "request not received in time", "");
        shutdown(k->fd, SHUT_RDWR);
        k->receiving = 0; /* once */
        k->refused = 1;   /* whatever arrives after this is not served */
    }
    pthread_mutex_unlock(&s->conns_mu);
}
