/* buf.c: the growable scratch buffers (mt_buf, internal.h) that states and packed
 * products keep between calls, so the steady state allocates nothing. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void *mt_buf_reserve(mt_buf *b, size_t bytes)
{
    if (bytes <= b->cap)
        return b->ptr;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < bytes)
        cap *= 2;
    void *p = NULL;
    if (posix_memalign(&p, 64, cap) != 0)
        return NULL;
    free(b->ptr); /* contents need not survive growth: callers reserve before filling */
    b->ptr = p;
    b->cap = cap;
    return p;
}

void *mt_buf_grow(mt_buf *b, size_t used, size_t bytes)
{
    if (bytes <= b->cap)
        return b->ptr;
    void *old = b->ptr;
    size_t old_cap = b->cap;
    b->ptr = NULL;
    b->cap = 0;
    if (!mt_buf_reserve(b, bytes > 2 * old_cap ? bytes : 2 * old_cap)) {
        b->ptr = old;
        b->cap = old_cap;
        return NULL;
    }
    if (used)
        memcpy(b->ptr, old, used);
    free(old);
    return b->ptr;
}

void mt_buf_release(mt_buf *b)
{
    free(b->ptr);
    b->ptr = NULL;
    b->cap = 0;
}
