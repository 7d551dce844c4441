/* conns.c: limits libmicrohttpd 0.9.75 does not have, kept per connection (its socket
 * context): a deadline for receiving each request whole (a slowloris client that sends a
 * byte now and then never trips an idle timeout), at most max_connections_per_ip
 * connections from one address, a 503 rather than silence for a connection over the
 * limits, and the client's address behind a trusted proxy.
 *
 * A connection waits for a request from its accept, and again after each answer; once
 * the request is whole (srv_conn_received) the clock stops until the answer has gone.
 * The watcher calls srv_conns_expire: a connection still receiving after receive_timeout
 * gets a 408 (if it never had an answer; an idle keep-alive one is just closed) and is
 * shut down (shutdown(2), never close: the descriptor stays
 * libmicrohttpd's, which then sees the end of the stream and cleans up).
 *
 * A full table does not lock newcomers out: before one is refused, the connection that
 * has waited longest for a request header (one that has sent none, or only part of one,
 * or an idle keep-alive one) is reclaimed the same way. Connections whose header is in
 * are never reclaimed: they are being served.
 *
 * Behind a proxy every client has the proxy's address: connections from an address in
 * server.trusted_proxies are not counted per address at accept; once a request's header
 * is in, its client is the address X-Forwarded-For / Forwarded name (walking from the
 * right over trusted hops), and that address is what the per-address limit, the rate
 * limits and the access log see. Those headers from anyone else are ignored. */
#include "internal.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

struct srv_conn {
    int fd;
    char peer[64];    /* the socket's address */
    char addr[64];    /* the client's: peer, or what a trusted proxy says */
    int trusted_peer; /* peer is a trusted proxy */
    double t_wait;    /* when the current request started to be awaited */
    int receiving;    /* 1 until the request is whole */
    int header_in;    /* the current request's header has arrived */
    int refused;      /* answered 503 at accept, reclaimed or expired: not served */
    int kept_alive;   /* it has had an answer: waiting now may be plain keep-alive idling */
    srv_conn *prev, *next;
};

/* ---------------------------------------------------------------- addresses */

/* The parsing and the walk over the hops are forwarded.c's; here, the glue to
 * libmicrohttpd. */

int srv_is_trusted_proxy(const mt_server *s, const char *addr)
{
    return srv_cidrs_contain(s->proxies, s->n_proxies, addr);
}

static enum MHD_Result collect_hops(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    srv_fwd_add_header(cls, key, value);
    return MHD_YES;
}

/* The client of a request that came through the trusted peer: stepping left over the
 * hops while the address reached so far is a trusted proxy. */
static void client_behind_proxy(mt_server *s, struct MHD_Connection *conn, const char *peer, char *out,
                                size_t cap)
{
    srv_fwd_hops h;
    srv_fwd_init(&h);
    MHD_get_connection_values(conn, MHD_HEADER_KIND, collect_hops, &h);
    srv_fwd_client(&h, s->proxies, s->n_proxies, peer, out, cap);
}

/* ---------------------------------------------------------------- the table */

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
    if (k->refused) s->n_refused--;
}

/* Not served any more (it no longer counts against the limits); conns_mu held. */
static void mark_refused_locked(mt_server *s, srv_conn *k)
{
    if (k->refused) return;
    k->refused = 1;
    s->n_refused++;
}

/* Connections of addr that count against the per-address limit (k excluded). */
static int count_addr_locked(mt_server *s, const srv_conn *k, const char *addr)
{
    int same = 0;
    for (srv_conn *o = s->conns; o; o = o->next)
        same += o != k && !o->refused && !(o->trusted_peer && !o->header_in) && strcmp(o->addr, addr) == 0;
    return same;
}

/* The table is full: reclaims the connection that has waited longest for a request
 * header; 1 when one was. */
static int reclaim_locked(mt_server *s, const srv_conn *except, char *who, size_t cap)
{
    srv_conn *victim = NULL;
    for (srv_conn *o = s->conns; o; o = o->next) {
        if (o == except || o->refused || o->header_in || !o->receiving || o->fd < 0) continue;
        if (!victim || o->t_wait < victim->t_wait) victim = o;
    }
    if (!victim) return 0;
    if (!victim->kept_alive)
        send_raw(victim->fd, 408, "request header not received: connection reclaimed for another client", "");
    shutdown(victim->fd, SHUT_RDWR);
    victim->receiving = 0;
    mark_refused_locked(s, victim);
    snprintf(who, cap, "%s", victim->addr);
    return 1;
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
    snprintf(k->peer, sizeof k->peer, "-");
    if (ai && ai->client_addr) {
        const struct sockaddr *sa = ai->client_addr;
        socklen_t len = sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
        char raw[64];
        if (getnameinfo(sa, len, raw, sizeof raw, NULL, 0, NI_NUMERICHOST) != 0 ||
            srv_fwd_canonical(raw, k->peer, sizeof k->peer) != 0)
            snprintf(k->peer, sizeof k->peer, "-");
    }
    snprintf(k->addr, sizeof k->addr, "%s", k->peer);
    k->trusted_peer = srv_is_trusted_proxy(s, k->peer);
    k->t_wait = mt_now();
    k->receiving = 1;
    const mt_config *cfg = s->cfg;
    char reclaimed[64] = "";
    pthread_mutex_lock(&s->conns_mu);
    /* a trusted proxy's connections are counted per client once their header is in */
    int over_ip = !k->trusted_peer && cfg->max_connections_per_ip > 0 &&
                  count_addr_locked(s, k, k->addr) >= cfg->max_connections_per_ip;
    int over_all = !over_ip && s->n_conns - s->n_refused >= cfg->max_connections &&
                   !reclaim_locked(s, k, reclaimed, sizeof reclaimed);
    k->next = s->conns;
    if (s->conns) s->conns->prev = k;
    s->conns = k;
    s->n_conns++;
    if ((over_all || over_ip) && k->fd >= 0) {
        mark_refused_locked(s, k);
        send_raw(k->fd, 503, over_ip ? "too many connections from this address" : "too many connections",
                 "Retry-After: 1\r\n");
        shutdown(k->fd, SHUT_WR);
    }
    pthread_mutex_unlock(&s->conns_mu);
    *socket_context = k;
    if (reclaimed[0])
        mt_log_write(s->log, MT_LOG_WARN, "connection_reclaimed", "remote=%s reason=no_request_header", reclaimed);
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
    char client[64] = "";
    if (k->trusted_peer) client_behind_proxy(s, conn, k->peer, client, sizeof client);
    pthread_mutex_lock(&s->conns_mu);
    int refused = k->refused, over_ip = 0;
    k->header_in = 1; /* being served: never reclaimed */
    if (!refused && k->trusted_peer) {
        snprintf(k->addr, sizeof k->addr, "%s", client);
        over_ip = s->cfg->max_connections_per_ip > 0 && strcmp(k->addr, k->peer) != 0 &&
                  count_addr_locked(s, k, k->addr) >= s->cfg->max_connections_per_ip;
        if (over_ip && k->fd >= 0) {
            mark_refused_locked(s, k);
            send_raw(k->fd, 503, "too many connections from this address", "Retry-After: 1\r\n");
            shutdown(k->fd, SHUT_WR);
            refused = 1;
        }
    }
    pthread_mutex_unlock(&s->conns_mu);
    if (over_ip)
        mt_log_write(s->log, MT_LOG_WARN, "connection_refused", "remote=%s via=%s reason=per_ip_limit",
                     client, k->peer);
    return refused;
}

void srv_conn_client(mt_server *s, struct MHD_Connection *conn, char *out, size_t cap)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    srv_conn *k = ci ? ci->socket_context : NULL;
    snprintf(out, cap, "-");
    if (k) {
        pthread_mutex_lock(&s->conns_mu);
        snprintf(out, cap, "%s", k->addr);
        pthread_mutex_unlock(&s->conns_mu);
        return;
    }
    const union MHD_ConnectionInfo *ai = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!ai || !ai->client_addr) return;
    const struct sockaddr *sa = ai->client_addr;
    socklen_t len = sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    char raw[64];
    if (getnameinfo(sa, len, raw, sizeof raw, NULL, 0, NI_NUMERICHOST) == 0 &&
        srv_fwd_canonical(raw, out, cap) != 0)
        snprintf(out, cap, "%s", raw);
    if (srv_is_trusted_proxy(s, out)) {
        char peer[64];
        snprintf(peer, sizeof peer, "%s", out);
        client_behind_proxy(s, conn, peer, out, cap);
    }
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
    k->header_in = 0;
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
        k->receiving = 0;         /* once */
        mark_refused_locked(s, k); /* whatever arrives after this is not served */
    }
    pthread_mutex_unlock(&s->conns_mu);
}
