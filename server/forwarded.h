/* forwarded.h: the client behind a trusted proxy, from the untrusted X-Forwarded-For and
 * Forwarded (RFC 7239) request headers and the server.trusted_proxies CIDR list. Pure
 * code (no libmicrohttpd, no server state), so that tests/fuzz_forwarded.c can drive it;
 * conns.c feeds it each header of a request and asks for the client.
 *
 * Thread-safety: no global state; a srv_cidr list is read-only once parsed and may be
 * shared by every thread; a srv_fwd_hops belongs to one caller.
 * Errors: srv_cidrs_parse returns -1 with a message; header values are never errors (an
 * unparsable hop is kept as "" and stops the walk: the proxy before it is the client).
 * Ownership: srv_cidrs_parse's list is malloc'd and the caller's (free()); the rest
 * writes into the caller's buffers only. */
#ifndef MT_SERVER_FORWARDED_H
#define MT_SERVER_FORWARDED_H

#include <stddef.h>

typedef struct srv_cidr srv_cidr;

enum {
    SRV_FWD_MAX_HOPS = 32, /* hops kept per request: the rightmost, those nearest to us */
    SRV_FWD_ADDR_LEN = 64, /* bytes of one hop's text, NUL included (INET6_ADDRSTRLEN = 46) */
};

/* The hops one request names, leftmost first. A plain value (on the caller's stack):
 * start it with srv_fwd_init. */
typedef struct {
    char hops[SRV_FWD_MAX_HOPS][SRV_FWD_ADDR_LEN]; /* canonical addresses; "" for an unparsable one */
    int n;                                         /* 0..SRV_FWD_MAX_HOPS */
    int forwarded;                                 /* they came from Forwarded headers */
} srv_fwd_hops;

/* Parses a comma-separated list of addresses and CIDRs (server.trusted_proxies) into
 * *out (malloc'd, *n entries; NULL and 0 for an empty list); 0 or -1 with a message. */
int srv_cidrs_parse(const char *list, srv_cidr **out, int *n, char *err, size_t errlen);
/* 1 when addr (numeric text; IPv4-mapped IPv6 counts as IPv4) is in one of the n
 * networks, else 0. */
int srv_cidrs_contain(const srv_cidr *v, int n, const char *addr);

/* Writes the canonical text of a numeric address (inet_ntop's; IPv4-mapped IPv6 shown
 * as IPv4) into out; 0, or -1 when s is no address or cap is too small. */
int srv_fwd_canonical(const char *s, char *out, size_t cap);

void srv_fwd_init(srv_fwd_hops *h);
/* One request header: X-Forwarded-For and Forwarded (case-insensitive key) add their
 * hops; any other key is ignored. Forwarded wins: its first occurrence drops the
 * X-Forwarded-For hops so far, and later X-Forwarded-For headers are ignored. */
void srv_fwd_add_header(srv_fwd_hops *h, const char *key, const char *value);
/* The client of a request that arrived from peer: stepping left over the hops while the
 * address reached so far is in the trusted list, stopping at an unparsable hop. Writes
 * peer itself when peer is not trusted. */
void srv_fwd_client(const srv_fwd_hops *h, const srv_cidr *trusted, int n_trusted, const char *peer, char *out,
                    size_t cap);

#endif
