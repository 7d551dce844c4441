/* fuzz_forwarded.c: fuzz target for the client behind a trusted proxy (server/forwarded.c):
 * the server.trusted_proxies CIDR list and the untrusted X-Forwarded-For / Forwarded
 * headers. Input, in lines:
 *   1: the trusted list ("10.0.0.0/8, ::1"), parsed by srv_cidrs_parse; when it is
 *      refused the message must say so and the list is empty;
 *   2: the peer's address (as the socket gives it, cut to 63 bytes);
 *   3...: request headers "Key: value" (a line without ':' is a key with an empty value).
 * Invariants (abort() when broken): a parsed list contains each of its own networks'
 * addresses; the hop list holds 0..SRV_FWD_MAX_HOPS hops, each "" or a canonical
 * address; the client fits its buffer (whose size varies: a short one truncates) and is
 * the peer, or, behind a trusted peer, a canonical hop all of whose right-hand hops are
 * trusted; an untrusted peer is always its own client. Seeds: tests/fuzz/forwarded/.
 *
 * With clang: -fsanitize=fuzzer,address -DMT_LIBFUZZER (libFuzzer's main). Without: the
 * program replays the files named on the command line (or stdin) once each. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forwarded.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The next line of the input as a C string (a NUL byte ends it early, as in a header). */
static char *next_line(const char **p, const char *end)
{
    if (*p >= end) return NULL;
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    size_t len = nl ? (size_t)(nl - *p) : (size_t)(end - *p);
    char *s = malloc(len + 1);
    if (!s) abort();
    memcpy(s, *p, len);
    s[len] = '\0';
    if (len && s[len - 1] == '\r') s[len - 1] = '\0';
    *p += len + (nl != NULL);
    return s;
}

static int is_canonical(const char *a)
{
    char c[SRV_FWD_ADDR_LEN];
    return srv_fwd_canonical(a, c, sizeof c) == 0 && strcmp(a, c) == 0;
}

/* The client must fit in cap bytes; the byte after them is a guard that must survive. */
static void check_client(const srv_fwd_hops *h, const srv_cidr *v, int n, const char *peer, size_t cap)
{
    char *out = malloc(cap + 1);
    if (!out) abort();
    out[cap] = 0x5a;
    srv_fwd_client(h, v, n, peer, out, cap);
    if (out[cap] != 0x5a || strlen(out) >= cap) abort();
    char full[SRV_FWD_ADDR_LEN + 8];
    int trusted = srv_cidrs_contain(v, n, peer);
    if (strncmp(out, peer, cap - 1) == 0 && strlen(out) == (strlen(peer) < cap ? strlen(peer) : cap - 1)) {
        free(out);
        return; /* the peer (perhaps cut short) */
    }
    if (!trusted) abort(); /* only a trusted peer's headers are believed */
    if (cap < sizeof full) { /* cut short: compare against the full answer */
        srv_fwd_client(h, v, n, peer, full, sizeof full);
        if (strlen(full) >= sizeof full - 1 || strncmp(out, full, cap - 1) != 0) abort();
    } else {
        snprintf(full, sizeof full, "%s", out);
    }
    /* a canonical hop, and every hop to its right is a trusted proxy */
    int ok = 0;
    for (int i = h->n - 1; i >= 0 && !ok; i--) {
        if (strcmp(h->hops[i], full) == 0 && is_canonical(full)) ok = 1;
        if (!h->hops[i][0] || !srv_cidrs_contain(v, n, h->hops[i])) break;
    }
    if (!ok) abort();
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size;
    char *list = next_line(&p, end);
    char *peer_line = next_line(&p, end);
    if (!list || !peer_line) {
        free(list);
        free(peer_line);
        return 0;
    }
    srv_cidr *v = NULL;
    int n = 0;
    char err[256] = "";
    if (srv_cidrs_parse(list, &v, &n, err, sizeof err) != 0) {
        if (v || n || !err[0]) abort();
    } else {
        if (n < 0 || (n > 0) != (v != NULL)) abort();
        /* every listed address (before its '/') is in the list it made */
        for (const char *q = list; *q;) {
            q += strspn(q, ", \t");
            size_t len = strcspn(q, ", \t");
            char item[96];
            if (!len) break;
            if (len < sizeof item) {
                memcpy(item, q, len);
                item[len] = '\0';
                char *slash = strchr(item, '/');
                if (slash) *slash = '\0';
                if (!srv_cidrs_contain(v, n, item)) abort();
            }
            q += len;
        }
    }
    char peer[SRV_FWD_ADDR_LEN];
    snprintf(peer, sizeof peer, "%s", peer_line);

    srv_fwd_hops h;
    srv_fwd_init(&h);
    char *line;
    while ((line = next_line(&p, end)) != NULL) {
        char *colon = strchr(line, ':');
        const char *value = "";
        if (colon) {
            *colon = '\0';
            value = colon + 1;
            while (*value == ' ' || *value == '\t') value++; /* as libmicrohttpd hands it over */
        }
        srv_fwd_add_header(&h, line, value);
        free(line);
        if (h.n < 0 || h.n > SRV_FWD_MAX_HOPS) abort();
    }
    for (int i = 0; i < h.n; i++)
        if (h.hops[i][0] && !is_canonical(h.hops[i])) abort();

    check_client(&h, v, n, peer, SRV_FWD_ADDR_LEN);
    check_client(&h, v, n, peer, 1 + size % 20); /* short buffers truncate, never overflow */
    free(v);
    free(list);
    free(peer_line);
    return 0;
}

#include "fuzz_replay.h"
