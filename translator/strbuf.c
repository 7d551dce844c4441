/* strbuf.c: the growable string of strbuf.h. */
#include "strbuf.h"

#include <stdlib.h>
#include <string.h>

int mt_strbuf_put(mt_strbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = (b->n + n + 1) * 2; /* doubling: appends stay linear overall */
        char *g = realloc(b->s, cap);
        if (!g)
            return -1;
        b->s = g;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
    return 0;
}
