/* forwarded.c: the client behind a trusted proxy (forwarded.h). The headers are the
 * client's to write, hence hostile: every hop is copied into fixed buffers with its
 * length checked, the hop list keeps at most SRV_FWD_MAX_HOPS (the rightmost), and only
 * a hop that inet_pton accepts, written back by inet_ntop, can become the client.
 * Fuzzed by tests/fuzz_forwarded.c. */
#include "forwarded.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

struct srv_cidr {
    int family;            /* AF_INET or AF_INET6 */
    unsigned char net[16]; /* network bytes (4 used for AF_INET) */
    int bits;
};

/* ---------------------------------------------------------------- addresses */

/* Parses an address ("1.2.3.4", "::1", an IPv4-mapped IPv6 one is taken as IPv4) into
 * family and bytes; 0, or -1 when it is none. */
static int parse_ip(const char *s, int *family, unsigned char out[16])
{
    struct in6_addr a6;
    if (inet_pton(AF_INET, s, out) == 1) {
        *family = AF_INET;
        return 0;
    }
    if (inet_pton(AF_INET6, s, &a6) != 1) return -1;
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (memcmp(a6.s6_addr, mapped, 12) == 0) {
        memcpy(out, a6.s6_addr + 12, 4);
        *family = AF_INET;
    } else {
        memcpy(out, a6.s6_addr, 16);
        *family = AF_INET6;
    }
    return 0;
}

int srv_cidrs_parse(const char *list, srv_cidr **out, int *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    if (!list || !*list) return 0;
    srv_cidr *v = NULL;
    int count = 0;
    const char *p = list;
    while (*p) {
        while (*p == ',' || *p == ' ' || *p == '\t') p++;
        if (!*p) break;
        size_t len = strcspn(p, ", \t");
        char item[80];
        if (len >= sizeof item) {
            snprintf(err, errlen, "server.trusted_proxies: '%.40s...' is not an address or CIDR", p);
            free(v);
            return -1;
        }
        memcpy(item, p, len);
        item[len] = '\0';
        p += len;
        srv_cidr c = {0};
        char *slash = strchr(item, '/');
        if (slash) *slash = '\0';
        int ok = parse_ip(item, &c.family, c.net) == 0;
        int maxbits = c.family == AF_INET ? 32 : 128;
        c.bits = maxbits;
        if (ok && slash) {
            char *end;
            long b = strtol(slash + 1, &end, 10);
            /* an IPv4-mapped network given in IPv6 bits ("::ffff:10.0.0.0/104") */
            if (c.family == AF_INET && strchr(item, ':') && b >= 96) b -= 96;
            ok = *(slash + 1) && !*end && b >= 0 && b <= maxbits;
            c.bits = (int)b;
        }
        if (!ok) {
            if (slash) *slash = '/';
            snprintf(err, errlen, "server.trusted_proxies: '%s' is not an address or CIDR "
                     "(e.g. 10.0.0.0/8, 127.0.0.1, fd00::/8)", item);
            free(v);
            return -1;
        }
        srv_cidr *nv = realloc(v, (size_t)(count + 1) * sizeof *nv);
        if (!nv) {
            free(v);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        v = nv;
        v[count++] = c;
    }
    *out = v;
    *n = count;
    return 0;
}

int srv_cidrs_contain(const srv_cidr *v, int n, const char *addr)
{
    int family;
    unsigned char a[16];
    if (n <= 0 || parse_ip(addr, &family, a)) return 0;
    for (int i = 0; i < n; i++) {
        if (v[i].family != family) continue;
        int full = v[i].bits / 8, rest = v[i].bits % 8;
        if (memcmp(a, v[i].net, (size_t)full) != 0) continue;
        if (rest && ((a[full] ^ v[i].net[full]) & (0xff << (8 - rest)) & 0xff)) continue;
        return 1;
    }
    return 0;
}

int srv_fwd_canonical(const char *s, char *out, size_t cap)
{
    int family;
    unsigned char a[16];
    if (parse_ip(s, &family, a)) return -1;
    return inet_ntop(family, a, out, (socklen_t)cap) ? 0 : -1;
}

/* ---------------------------------------------------------------- hops */

void srv_fwd_init(srv_fwd_hops *h)
{
    h->n = 0;
    h->forwarded = 0;
}

/* One hop's text (len bytes at s: "1.2.3.4", "1.2.3.4:80", "\"[2001:db8::1]:4711\"",
 * "unknown", "_hidden"): its canonical address, or "" when it names none. */
static void add_hop(srv_fwd_hops *h, const char *s, size_t len)
{
    while (len && (*s == ' ' || *s == '\t')) s++, len--;
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t')) len--;
    if (len >= 2 && s[0] == '"' && s[len - 1] == '"') s++, len -= 2;
    char tmp[80] = "";
    if (len < sizeof tmp) {
        memcpy(tmp, s, len);
        tmp[len] = '\0';
    }
    char *a = tmp;
    if (*a == '[') { /* "[2001:db8::1]:4711" */
        a++;
        char *e = strchr(a, ']');
        if (e) *e = '\0';
    } else if (strchr(a, '.') && strchr(a, ':')) { /* "1.2.3.4:80" */
        *strchr(a, ':') = '\0';
    }
    if (h->n == SRV_FWD_MAX_HOPS) { /* keep the rightmost hops: those nearest to us */
        memmove(h->hops[0], h->hops[1], sizeof h->hops[0] * (SRV_FWD_MAX_HOPS - 1));
        h->n = SRV_FWD_MAX_HOPS - 1;
    }
    if (srv_fwd_canonical(a, h->hops[h->n], sizeof h->hops[0])) h->hops[h->n][0] = '\0';
    h->n++;
}

void srv_fwd_add_header(srv_fwd_hops *h, const char *key, const char *value)
{
    if (!key || !value) return;
    int fwd = strcasecmp(key, "Forwarded") == 0;
    if (!fwd && strcasecmp(key, "X-Forwarded-For") != 0) return;
    if (fwd && !h->forwarded) h->n = 0, h->forwarded = 1; /* Forwarded wins over X-Forwarded-For */
    if (!fwd && h->forwarded) return;
    for (const char *p = value; *p;) {
        size_t len = strcspn(p, ",");
        if (!fwd) {
            add_hop(h, p, len);
        } else {
            /* an element: pairs "for=...;proto=..."; only for= names a hop */
            int found = 0;
            for (const char *q = p; q < p + len;) {
                size_t plen = strcspn(q, ";,");
                if (plen > (size_t)(p + len - q)) plen = (size_t)(p + len - q);
                const char *k = q;
                while (k < q + plen && (*k == ' ' || *k == '\t')) k++;
                if (q + plen - k > 4 && strncasecmp(k, "for=", 4) == 0) {
                    add_hop(h, k + 4, (size_t)(q + plen - k - 4));
                    found = 1;
                }
                q += plen + (q + plen < p + len);
            }
            if (!found) add_hop(h, "", 0);
        }
        p += len + (p[len] == ',');
    }
}

void srv_fwd_client(const srv_fwd_hops *h, const srv_cidr *trusted, int n_trusted, const char *peer, char *out,
                    size_t cap)
{
    const char *addr = peer;
    for (int i = h->n - 1; i >= 0 && srv_cidrs_contain(trusted, n_trusted, addr); i--) {
        if (!h->hops[i][0]) break; /* unparsable ("unknown", garbage): the proxy is the client */
        addr = h->hops[i];
    }
    snprintf(out, cap, "%s", addr);
}
