/* cache.c: LRU over a chained hash table. Each entry is one allocation holding its key and
 * value; the recency list is doubly linked, most recent first. */
#include "cache.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry entry;
struct entry {
    entry *chain;            /* next in the bucket */
    entry *newer, *older;    /* recency list */
    uint64_t hash;
    size_t key_len, val_len;
    unsigned char data[];    /* key, then value */
};

struct mt_cache {
    pthread_mutex_t mu;
    size_t max_bytes, bytes;
    entry **buckets;
    size_t n_buckets;        /* a power of two */
    entry *newest, *oldest;
    long entries, hits, misses;
};

static uint64_t hash_bytes(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

static size_t entry_cost(size_t key_len, size_t val_len) { return sizeof(entry) + key_len + val_len; }

mt_cache *mt_cache_create(size_t max_bytes)
{
    mt_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->max_bytes = max_bytes;
    c->n_buckets = 1024;
    if (!(c->buckets = calloc(c->n_buckets, sizeof *c->buckets))) {
        free(c);
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    return c;
}

void mt_cache_free(mt_cache *c)
{
    if (!c) return;
    for (entry *e = c->newest, *next; e; e = next) {
        next = e->older;
        free(e);
    }
    free(c->buckets);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static entry **slot_of(mt_cache *c, uint64_t h, const void *key, size_t key_len)
{
    entry **s = &c->buckets[h & (c->n_buckets - 1)];
    while (*s && !((*s)->hash == h && (*s)->key_len == key_len && memcmp((*s)->data, key, key_len) == 0))
        s = &(*s)->chain;
    return s;
}

static void unlink_recency(mt_cache *c, entry *e)
{
    if (e->newer) e->newer->older = e->older;
    else c->newest = e->older;
    if (e->older) e->older->newer = e->newer;
    else c->oldest = e->newer;
    e->newer = e->older = NULL;
}

static void push_newest(mt_cache *c, entry *e)
{
    e->older = c->newest;
    e->newer = NULL;
    if (c->newest) c->newest->newer = e;
    c->newest = e;
    if (!c->oldest) c->oldest = e;
}

static void remove_entry(mt_cache *c, entry **slot)
{
    entry *e = *slot;
    *slot = e->chain;
    unlink_recency(c, e);
    c->bytes -= entry_cost(e->key_len, e->val_len);
    c->entries--;
    free(e);
}

/* Doubles the bucket array when chains grow long; a failed allocation keeps the old one. */
static void maybe_grow(mt_cache *c)
{
    if ((size_t)c->entries < 2 * c->n_buckets) return;
    size_t n = c->n_buckets * 2;
    entry **b = calloc(n, sizeof *b);
    if (!b) return;
    for (size_t i = 0; i < c->n_buckets; i++)
        for (entry *e = c->buckets[i], *next; e; e = next) {
            next = e->chain;
            e->chain = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
        }
    free(c->buckets);
    c->buckets = b;
    c->n_buckets = n;
}

int mt_cache_get(mt_cache *c, const void *key, size_t key_len, void **val, size_t *val_len)
{
    uint64_t h = hash_bytes(key, key_len);
    pthread_mutex_lock(&c->mu);
    entry *e = *slot_of(c, h, key, key_len);
    void *copy = NULL;
    if (e && (copy = malloc(e->val_len ? e->val_len : 1))) {
        memcpy(copy, e->data + e->key_len, e->val_len);
        *val_len = e->val_len;
        unlink_recency(c, e);
        push_newest(c, e);
        c->hits++;
    } else {
        c->misses++;
    }
    pthread_mutex_unlock(&c->mu);
    *val = copy;
    return copy != NULL;
}

void mt_cache_put(mt_cache *c, const void *key, size_t key_len, const void *val, size_t val_len)
{
    size_t cost = entry_cost(key_len, val_len);
    if (cost > c->max_bytes) return;
    entry *e = malloc(sizeof *e + key_len + val_len);
    if (!e) return;
    e->hash = hash_bytes(key, key_len);
    e->key_len = key_len;
    e->val_len = val_len;
    memcpy(e->data, key, key_len);
    memcpy(e->data + key_len, val, val_len);
    pthread_mutex_lock(&c->mu);
    entry **s = slot_of(c, e->hash, key, key_len);
    if (*s) remove_entry(c, s);
    while (c->oldest && c->bytes + cost > c->max_bytes) {
        entry *old = c->oldest;
        remove_entry(c, slot_of(c, old->hash, old->data, old->key_len));
    }
    e->chain = c->buckets[e->hash & (c->n_buckets - 1)];
    c->buckets[e->hash & (c->n_buckets - 1)] = e;
    push_newest(c, e);
    c->bytes += cost;
    c->entries++;
    maybe_grow(c);
    pthread_mutex_unlock(&c->mu);
}

void mt_cache_get_stats(mt_cache *c, mt_cache_stats *st)
{
    pthread_mutex_lock(&c->mu);
    *st = (mt_cache_stats){c->hits, c->misses, c->entries, c->bytes};
    pthread_mutex_unlock(&c->mu);
}
