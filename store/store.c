/* store.c: mt_store: the backend the options name (SQLite: suggest.c; PostgreSQL:
 * store_pg.c) behind one set of calls. See include/mt/store.h for the contract. */
#include "store.h"

#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_pg.h"
#include "suggest.h"

struct mt_store {
    mt_suggest *sqlite; /* SQLite backend: suggestions only (NULL: none kept) */
    store_pg *pg;       /* PostgreSQL backend */
};

void mt_store_sha256_hex(const char *s, char out[MT_STORE_SHA256_HEX])
{
    struct sha256_ctx ctx;
    uint8_t d[SHA256_DIGEST_SIZE];
    if (!s) s = "";
    sha256_init(&ctx);
    sha256_update(&ctx, strlen(s), (const uint8_t *)s);
    sha256_digest(&ctx, sizeof d, d);
    for (int i = 0; i < SHA256_DIGEST_SIZE; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

mt_store_options mt_store_options_default(void)
{
    return (mt_store_options){NULL, NULL, 5000, 3, 4};
}

mt_store *mt_store_open(const mt_store_options *o, char *err, size_t errlen)
{
    mt_store *st = calloc(1, sizeof *st);
    if (!st) {
        snprintf(err, errlen, "store: out of memory");
        return NULL;
    }
    if (o->url && *o->url) st->pg = store_pg_open(o, err, errlen);
    else if (o->sqlite_path && *o->sqlite_path) st->sqlite = mt_suggest_open(o->sqlite_path, err, errlen);
    else return st; /* nothing kept: suggestions off */
    if (!st->pg && !st->sqlite) {
        free(st);
        return NULL;
    }
    return st;
}

void mt_store_close(mt_store *st)
{
    if (!st) return;
    mt_suggest_close(st->sqlite);
    store_pg_close(st->pg);
    free(st);
}

int mt_store_shared(const mt_store *st) { return st && st->pg; }

store_pg *mt_store_pg_backend(mt_store *st) { return st ? st->pg : NULL; }

int mt_store_has_suggestions(const mt_store *st) { return st && (st->pg || st->sqlite); }

void mt_store_redact(const char *url, char *out, size_t cap)
{
    store_pg_redact(url ? url : "", out, cap);
}

int mt_store_ping(mt_store *st, char *err, size_t errlen)
{
    return st && st->pg ? store_pg_ping(st->pg, err, errlen) : MT_STORE_OK;
}

int mt_store_suggest_add(mt_store *st, const char *q, const char *s, const char *source,
                         const char *target, char *err, size_t errlen)
{
    if (st && st->pg) return store_pg_suggest_add(st->pg, q, s, source, target, err, errlen);
    if (!st || !st->sqlite) {
        snprintf(err, errlen, "suggestions: not kept on this server");
        return MT_STORE_UNSUPPORTED;
    }
    return mt_suggest_add(st->sqlite, q, s, source, target, err, errlen) ? MT_STORE_ERROR : MT_STORE_OK;
}

long mt_store_suggest_count(mt_store *st, char *err, size_t errlen)
{
    if (st && st->pg) return store_pg_suggest_count(st->pg, err, errlen);
    if (!st || !st->sqlite) {
        snprintf(err, errlen, "suggestions: not kept on this server");
        return MT_STORE_UNSUPPORTED;
    }
    long n = mt_suggest_count(st->sqlite, err, errlen);
    return n < 0 ? MT_STORE_ERROR : n;
}

static int no_keys(const mt_store *st, char *err, size_t errlen)
{
    (void)st;
    snprintf(err, errlen, "API keys and shared counters need the PostgreSQL store (server.shared_state)");
    return MT_STORE_UNSUPPORTED;
}

int mt_store_key_add(mt_store *st, const char *key, const char *name, long chars_per_minute,
                     char *err, size_t errlen)
{
    if (!st || !st->pg) return no_keys(st, err, errlen);
    return store_pg_key_add(st->pg, key, name, chars_per_minute, err, errlen);
}

int mt_store_key_remove(mt_store *st, const char *key_or_name, char *err, size_t errlen)
{
    if (!st || !st->pg) return no_keys(st, err, errlen);
    return store_pg_key_remove(st->pg, key_or_name, err, errlen);
}

int mt_store_key_find(mt_store *st, const char *key, mt_store_key *out, char *err, size_t errlen)
{
    if (!st || !st->pg) return no_keys(st, err, errlen);
    return store_pg_key_find(st->pg, key, out, err, errlen);
}

int mt_store_key_any(mt_store *st, char *err, size_t errlen)
{
    if (!st || !st->pg) return no_keys(st, err, errlen);
    return store_pg_key_any(st->pg, err, errlen);
}

int mt_store_key_list(mt_store *st, int (*fn)(void *user, const mt_store_key *k), void *user,
                      char *err, size_t errlen)
{
    if (!st || !st->pg) return no_keys(st, err, errlen);
    return store_pg_key_list(st->pg, fn, user, err, errlen);
}

int mt_store_rate_charge(mt_store *st, const char *client, int requests, long chars,
                         int requests_per_minute, long chars_per_minute, int *retry_after,
                         char *err, size_t errlen)
{
    if (!st || !st->pg) return no_keys(st, err, errlen);
    return store_pg_rate_charge(st->pg, client, requests, chars, requests_per_minute, chars_per_minute,
                                retry_after, err, errlen);
}
