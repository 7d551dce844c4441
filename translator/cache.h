/* cache.h: the sentence cache of the translation service: an LRU map from byte keys (a
 * model, the options that shape a result and the source ids, built by the batcher) to
 * byte values (the finished hypotheses), bounded in bytes. Real traffic repeats sentences
 * (interface strings, documents re-sent after an edit): a hit skips the search.
 * Internal to translator/.
 *
 * Thread-safety: every call may come from any thread (one lock inside). */
#ifndef MT_TRANSLATOR_CACHE_H
#define MT_TRANSLATOR_CACHE_H

#include <stddef.h>

typedef struct mt_cache mt_cache;

typedef struct {
    long hits, misses;
    long entries;
    size_t bytes;      /* what the entries hold, keys, values and bookkeeping counted */
} mt_cache_stats;

/* A cache of at most max_bytes (> 0); NULL when out of memory. */
mt_cache *mt_cache_create(size_t max_bytes);
void mt_cache_free(mt_cache *cache);

/* On a hit: 1, with a malloc'd copy of the value in *val (*val_len bytes; the caller frees
 * it) and the entry made the most recent. On a miss (or out of memory): 0. */
int mt_cache_get(mt_cache *cache, const void *key, size_t key_len, void **val, size_t *val_len);

/* Stores copies of key and value (replacing an entry of the same key), evicting the least
 * recently used entries to stay within the budget. An entry larger than the whole budget,
 * or one that cannot be allocated, is not stored. */
void mt_cache_put(mt_cache *cache, const void *key, size_t key_len, const void *val, size_t val_len);

void mt_cache_get_stats(mt_cache *cache, mt_cache_stats *st);

#endif
