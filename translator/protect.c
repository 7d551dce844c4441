/* protect.c: cutting the spans that must not be translated out of a text (masks) and
 * putting them back into its translation (protect.h); spans.c finds them. */
#include "protect.h"
#include "spans.h"
#include "strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mt_protect {
    const char *orig; /* copy of the original text */
    char *cut;
    mt_protect_span *spans;
    int n;
    size_t n_orig;
    long base; /* span k's mask is "{base + k}" */
    int n_words;  /* words of cut */
    struct cand *roles; /* what reads as a placeholder in cut, by bytes then place: its span or -1 */
    int n_roles;
    char *unread;       /* per span: a placeholder that no reading of cut stands for (it is in
                         * a look-alike's bytes: kept with them) */
};

/* What the model reads. Software placeholders (MT_PROTECT_FORMAT) stay as written: the
 * bundled models learnt them from software messages and copy them (and reading
 * "%(spouse)s" tells more than a mask); a copy the model damaged is recognised as a
 * placeholder in the output and replaced. Every other span is sent as a mask "{B+k}", a
 * brace field the models copy through unchanged (in the debian-l10n dev messages with
 * placeholders, 159 of 159 masks came back exactly once), B above every "{N}" in the
 * text. Either way the text around a span is sent as written: quotes, brackets and
 * punctuation stay where the model reads and writes them. */
enum { MASK_DIGITS_MAX = 10, MASK_BASE_MAX = 1000000 };

static int passed_through(int kind) { return kind == MT_PROTECT_FORMAT; }

/* The number of the brace field "{N}" at s[i] (*len its bytes), or -1. */
static long mask_at(const char *s, size_t i, size_t n, size_t *len)
{
    if (s[i] != '{')
        return -1;
    size_t j = i + 1;
    long v = 0;
    while (j < n && s[j] >= '0' && s[j] <= '9' && j - i <= MASK_DIGITS_MAX)
        v = v * 10 + (s[j++] - '0');
    if (j == i + 1 || j >= n || s[j] != '}')
        return -1;
    *len = j + 1 - i;
    return v;
}

/* A placeholder read in a text (the one the model read, or its translation): its bytes
 * s[at, at + len); span: the span it stands for (-1 none, -2 undecided); rank 1 a strict
 * reading, 2 one that is only read when glued ("%ss"). */
struct cand {
    const char *s;
    size_t at, len;
    int span, rank;
};

/* By bytes, then place. */
static int cand_order(const void *x, const void *y)
{
    const struct cand *a = x, *b = y;
    if (a->len != b->len)
        return a->len < b->len ? -1 : 1;
    int c = memcmp(a->s, b->s, a->len);
    if (c)
        return c;
    return (a->at > b->at) - (a->at < b->at);
}

static int same_cand_bytes(const struct cand *a, const struct cand *b)
{
    return a->len == b->len && !memcmp(a->s, b->s, a->len);
}

static int is_mask_of(const mt_protect *p, long v) { return v >= p->base && v < p->base + p->n && !passed_through(p->spans[v - p->base].kind); }

/* The masks (span set) and placeholder readings (span -2) of s[0, n), in order. A reading
 * with a mask inside it ("${0}") is not one. Returns the count (out has n / 2 + 1 room). */
static int scan(const mt_protect *p, int pass, const char *s, size_t n, struct cand *out)
{
    int k = 0;
    for (size_t i = 0; i < n;) {
        size_t ml = 0;
        long v = mask_at(s, i, n, &ml);
        if (is_mask_of(p, v)) {
            out[k++] = (struct cand){s + i, i, ml, (int)(v - p->base), 0};
            i += ml;
            continue;
        }
        size_t l = pass ? mt_span_placeholder_len(s, i, n, 0) : 0;
        for (size_t j = i + 1; l && j < i + l; j++)
            if (is_mask_of(p, mask_at(s, j, n, &ml)))
                l = 0;
        if (l) {
            out[k++] = (struct cand){s + i, i, l, -2, mt_span_placeholder_len(s, i, n, 1) == l ? 1 : 2};
            i += l;
            continue;
        }
        i++;
    }
    return k;
}

mt_protect *mt_protect_create(const char *text, size_t n, unsigned kinds)
{
    return mt_protect_create_with(text, n, kinds, NULL, NULL);
}

mt_protect *mt_protect_create_with(const char *text, size_t n, unsigned kinds, mt_protect_spells_fn spells,
                                   const void *ctx)
{
    const mt_span_spells sp = {spells, ctx};
    mt_protect *p = calloc(1, sizeof *p);
    char *orig = malloc(n + 1);
    mt_protect_span *spans = malloc(sizeof *spans * (n + 1));
    if (!p || !orig || !spans) {
        free(p);
        free(orig);
        free(spans);
        return NULL;
    }
    memcpy(orig, text, n);
    orig[n] = 0;
    p->orig = orig;
    p->n_orig = n;
    p->spans = spans;
    long base = 0; /* above every "{N}" of the text */
    for (size_t i = 0; i < n; i++) {
        size_t ml;
        long v = mask_at(orig, i, n, &ml);
        if (v >= base && v < MASK_BASE_MAX) /* larger ones cannot meet a mask */
            base = v + 1;
    }
    for (size_t i = 0; i < n;) {
        int kind = 0;
        size_t len = mt_span_find(kinds, &sp, orig, i, n, &kind);
        if (!len) {
            size_t ml = 0;
            long v = mask_at(orig, i, n, &ml);
            if (v >= base && v < MASK_BASE_MAX) /* larger ones cannot meet a mask */
                base = v + 1;
            i++;
            continue;
        }
        spans[p->n++] = (mt_protect_span){.start = i, .len = len, .kind = kind,
                                          .glued_left = i > 0 && !mt_span_is_space((unsigned char)orig[i - 1]),
                                          .glued_right = i + len < n && !mt_span_is_space((unsigned char)orig[i + len])};
        i += len;
    }
    p->base = base;
    /* the text with each span replaced by its mask */
    size_t cap = n + 1;
    for (int k = 0; k < p->n; k++)
        cap += 2 + MASK_DIGITS_MAX + 2 + spans[k].len;
    char *cut = malloc(cap), *o = cut;
    if (!cut) {
        mt_protect_free(p);
        return NULL;
    }
    p->cut = cut;
    size_t at = 0, *cut_at = malloc(sizeof *cut_at * (size_t)(p->n + 1)); /* span k's place in cut */
    if (!cut_at) {
        mt_protect_free(p);
        return NULL;
    }
    int words = 0;
    for (int k = 0; k <= p->n; k++) {
        size_t end = k < p->n ? spans[k].start : n;
        for (size_t i = at; i < end; i++) {
            words += !mt_span_is_space((unsigned char)orig[i]) && (o == cut || mt_span_is_space((unsigned char)o[-1]));
            *o++ = orig[i];
        }
        if (k == p->n)
            break;
        words += o == cut || mt_span_is_space((unsigned char)o[-1]);
        spans[k].word = words - 1;
        cut_at[k] = (size_t)(o - cut);
        if (passed_through(spans[k].kind)) {
            memcpy(o, orig + spans[k].start, spans[k].len);
            o += spans[k].len;
        } else {
            o += sprintf(o, "{%ld}", base + k);
        }
        at = spans[k].start + spans[k].len;
    }
    *o = 0;
    p->n_words = words;
    /* The readings of the text the model reads, each with its role: a placeholder span
     * (where it was written) or a look-alike the text has as text ("x$__" after a mask). */
    int pass = 0;
    for (int k = 0; k < p->n; k++)
        pass |= passed_through(spans[k].kind);
    size_t cl = (size_t)(o - cut);
    p->roles = malloc(sizeof *p->roles * (cl / 2 + 1));
    if (!p->roles) {
        free(cut_at);
        mt_protect_free(p);
        return NULL;
    }
    int nr = scan(p, pass, cut, cl, p->roles);
    for (int r = 0, k = 0; r < nr; r++) {
        struct cand *c = &p->roles[r];
        if (c->span != -2)
            continue; /* a mask: found by its number */
        while (k < p->n && (cut_at[k] < c->at || !passed_through(spans[k].kind)))
            k++;
        c->span = k < p->n && cut_at[k] == c->at && spans[k].len == c->len ? k : -1;
    }
    free(cut_at);
    p->unread = malloc((size_t)p->n + 1);
    if (!p->unread) {
        mt_protect_free(p);
        return NULL;
    }
    for (int k = 0; k < p->n; k++)
        p->unread[k] = passed_through(spans[k].kind);
    for (int r = 0; r < nr; r++)
        if (p->roles[r].rank && p->roles[r].span >= 0)
            p->unread[p->roles[r].span] = 0;
    /* only the readings (masks are found by number), sorted by bytes then place */
    int kept = 0;
    for (int r = 0; r < nr; r++)
        if (p->roles[r].rank)
            p->roles[kept++] = p->roles[r];
    p->n_roles = kept;
    qsort(p->roles, (size_t)kept, sizeof *p->roles, cand_order);
    return p;
}

void mt_protect_free(mt_protect *p)
{
    if (!p)
        return;
    free((char *)p->orig);
    free(p->cut);
    free(p->spans);
    free(p->roles);
    free(p->unread);
    free(p);
}

const char *mt_protect_text(const mt_protect *p) { return p->cut; }
int mt_protect_count(const mt_protect *p) { return p->n; }
const mt_protect_span *mt_protect_span_at(const mt_protect *p, int i)
{
    return i >= 0 && i < p->n ? &p->spans[i] : NULL;
}

/* Where a span whose copy the model dropped goes: after the output word aligned to the
 * source word before its own word, else before the one aligned to the word after it, else
 * at the start (a span that began the text) or the end. hi[w] / lo[w]: the last / first
 * output word aligned to source word w (-1: none). Returns the slot: -1 the start, 2t
 * before output word t, 2t + 1 after it, 2 n_out the end. */
static long place(const mt_protect_span *sp, const int *lo, const int *hi, int n_words, int n_out)
{
    if (sp->word > 0 && sp->word - 1 < n_words && hi[sp->word - 1] >= 0)
        return 2L * hi[sp->word - 1] + 1;
    if (sp->word + 1 < n_words && lo[sp->word + 1] >= 0)
        return 2L * lo[sp->word + 1];
    return sp->word == 0 ? -1 : 2L * n_out;
}

/* Writes span k with a space before and / or after it. */
static int put_span(mt_strbuf *b, const mt_protect *p, int k, int space_left, int space_right)
{
    const mt_protect_span *sp = &p->spans[k];
    return (space_left && mt_strbuf_put(b, " ", 1)) || mt_strbuf_put(b, p->orig + sp->start, sp->len) ||
           (space_right && mt_strbuf_put(b, " ", 1));
}

/* A missing span and where it goes (place()). */
typedef struct {
    long slot;
    int span;
} slotted;

static int slot_order(const void *x, const void *y)
{
    const slotted *a = x, *b = y;
    if (a->slot != b->slot)
        return a->slot < b->slot ? -1 : 1;
    return (a->span > b->span) - (a->span < b->span);
}

/* A passthrough span's bytes, to tell whether a reading is one. */
typedef struct {
    const char *s;
    size_t len;
} bytes;

static int bytes_order(const void *x, const void *y)
{
    const bytes *a = x, *b = y;
    if (a->len != b->len)
        return a->len < b->len ? -1 : 1;
    return memcmp(a->s, b->s, a->len);
}

static int by_place(const void *x, const void *y)
{
    const struct cand *a = *(const struct cand *const *)x, *b = *(const struct cand *const *)y;
    return (a->at > b->at) - (a->at < b->at);
}

static int by_bytes_then_place(const void *x, const void *y)
{
    return cand_order(*(const struct cand *const *)x, *(const struct cand *const *)y);
}

char *mt_protect_restore(const mt_protect *p, const char *tr, const int (*align)[2], int n_align)
{
    char *out = NULL;
    size_t tl = strlen(tr);
    int n_out = 0, pass = 0;
    for (size_t i = 0; i < tl; i++)
        n_out += !mt_span_is_space((unsigned char)tr[i]) && (i == 0 || mt_span_is_space((unsigned char)tr[i - 1]));
    for (int k = 0; k < p->n; k++)
        pass |= passed_through(p->spans[k].kind);
    struct cand *cp = malloc(sizeof *cp * (tl / 2 + 1)), **order = malloc(sizeof *order * (tl / 2 + 1));
    bytes *span_bytes = malloc(sizeof *span_bytes * (size_t)(p->n + 1));
    size_t *ws = malloc(sizeof *ws * (size_t)(n_out + 1)), *we = malloc(sizeof *we * (size_t)(n_out + 1));
    int *found = malloc(sizeof *found * (size_t)(p->n + 1)); /* per span: 1 when a copy stands for it */
    slotted *miss = malloc(sizeof *miss * (size_t)(p->n + 1));
    int *lo = malloc(sizeof *lo * (size_t)(p->n_words + 1)), *hi = malloc(sizeof *hi * (size_t)(p->n_words + 1));
    mt_strbuf b = {0};
    if (!cp || !order || !span_bytes || !ws || !we || !found || !miss || !lo || !hi || mt_strbuf_put(&b, "", 0))
        goto fail;
    for (size_t i = 0, k = 0; i < tl; i++) {
        if (!mt_span_is_space((unsigned char)tr[i]) && (i == 0 || mt_span_is_space((unsigned char)tr[i - 1])))
            ws[k] = i;
        if (!mt_span_is_space((unsigned char)tr[i]) && (i + 1 == tl || mt_span_is_space((unsigned char)tr[i + 1])))
            we[k++] = i + 1;
    }
    int n_span_bytes = 0;
    for (int k = 0; k < p->n; k++) {
        found[k] = p->unread[k]; /* kept inside a look-alike's bytes */
        if (passed_through(p->spans[k].kind))
            span_bytes[n_span_bytes++] = (bytes){p->orig + p->spans[k].start, p->spans[k].len};
    }
    qsort(span_bytes, (size_t)n_span_bytes, sizeof *span_bytes, bytes_order);
    /* Masks: the first copy of each stands for its span, further copies are dropped. */
    int n_copies = scan(p, pass, tr, tl, cp), n_read = 0;
    for (int c = 0; c < n_copies; c++) {
        if (cp[c].rank) {
            order[n_read++] = &cp[c];
            continue;
        }
        int k = cp[c].span;
        cp[c].span = found[k] ? -1 : k;
        found[k] = 1;
    }
    /* Readings: by bytes, the i-th in the translation takes the role of the i-th in the text
     * the model read (a span, or text that only looks like one); those beyond are the
     * model's: a strict one that is no span's bytes stands for a span whose copy is missing
     * (the model changed "%(feature)d" into "%(function)d"), in order; the rest is dropped,
     * except glued look-alikes ("100%done"), which stay text. */
    qsort(order, (size_t)n_read, sizeof *order, by_bytes_then_place);
    for (int a = 0, r = 0; a < n_read;) {
        int e = a;
        while (e < n_read && same_cand_bytes(order[a], order[e]))
            e++;
        while (r < p->n_roles && cand_order(&p->roles[r], &(struct cand){order[a]->s, 0, order[a]->len, 0, 0}) < 0)
            r++;
        for (int i = a; i < e; i++) {
            const struct cand *role = r < p->n_roles && same_cand_bytes(&p->roles[r], order[i]) ? &p->roles[r++] : NULL;
            order[i]->span = role ? (role->span >= 0 ? role->span : -3) : -2;
            if (role && role->span >= 0)
                found[role->span] = 1;
        }
        a = e;
    }
    qsort(order, (size_t)n_read, sizeof *order, by_place);
    for (int k = 0, i = 0; k < p->n; k++) {
        if (!passed_through(p->spans[k].kind) || found[k])
            continue;
        while (i < n_read && (order[i]->span != -2 || order[i]->rank != 1 ||
                              bsearch(&(bytes){order[i]->s, order[i]->len}, span_bytes, (size_t)n_span_bytes,
                                      sizeof *span_bytes, bytes_order)))
            i++;
        if (i == n_read)
            break;
        order[i]->span = k;
        found[k] = 1;
    }
    int kept = 0; /* text (-3) leaves the list; a leftover reading is dropped unless glued */
    for (int c = 0; c < n_copies; c++) {
        if (cp[c].span == -2)
            cp[c].span = cp[c].rank == 2 ? -3 : -1;
        if (cp[c].span != -3)
            cp[kept++] = cp[c];
    }
    n_copies = kept;
    /* The spans no copy stands for, by slot (then source order). */
    for (int w = 0; w < p->n_words; w++)
        lo[w] = hi[w] = -1;
    for (int a = 0; a < n_align; a++) {
        int sw = align[a][0], t = align[a][1];
        if (t < 0 || t >= n_out || sw < 0 || sw >= p->n_words)
            continue;
        lo[sw] = lo[sw] < 0 || t < lo[sw] ? t : lo[sw];
        hi[sw] = t > hi[sw] ? t : hi[sw];
    }
    int n_miss = 0;
    for (int k = 0; k < p->n; k++)
        if (!found[k])
            miss[n_miss++] = (slotted){place(&p->spans[k], lo, hi, p->n_words, n_out), k};
    qsort(miss, (size_t)n_miss, sizeof *miss, slot_order);
    int m = 0;
    /* Missing spans placed at the start, then the translation with its copies replaced and
     * the missing spans put before / after their words, then those placed at the end. */
    int lead = 0;
    for (; m < n_miss && miss[m].slot == -1; m++) {
        if (put_span(&b, p, miss[m].span, lead, 0))
            goto fail;
        lead = 1;
    }
    if (lead && tl && !mt_span_is_space((unsigned char)tr[0]) && mt_strbuf_put(&b, " ", 1))
        goto fail;
    /* Events in byte order: a word's end (spans placed after it), a word's start (spans
     * placed before it), a copy (replaced or dropped). */
    size_t at = 0;
    int wa = 0, wb = 0, c = 0;
    for (;;) {
        size_t ev = tl;
        if (wa < n_out && we[wa] < ev)
            ev = we[wa];
        if (wb < n_out && ws[wb] < ev)
            ev = ws[wb];
        if (c < n_copies && cp[c].at < ev)
            ev = cp[c].at;
        if (ev < at) /* inside whitespace a dropped copy took along */
            ev = at;
        if (mt_strbuf_put(&b, tr + at, ev - at))
            goto fail;
        at = ev;
        if (wa < n_out && we[wa] <= ev) {
            for (; m < n_miss && miss[m].slot <= 2L * wa + 1; m++)
                if (put_span(&b, p, miss[m].span, !p->spans[miss[m].span].glued_left, 0))
                    goto fail;
            wa++;
        } else if (wb < n_out && ws[wb] <= ev) {
            for (; m < n_miss && miss[m].slot <= 2L * wb; m++)
                if (put_span(&b, p, miss[m].span, 0, !p->spans[miss[m].span].glued_right))
                    goto fail;
            wb++;
        } else if (c < n_copies && cp[c].at <= ev) {
            size_t i = cp[c].at, len = cp[c].len;
            int k = cp[c++].span;
            if (k >= 0) {
                /* where the source had whitespace, the span is not glued to a word */
                const mt_protect_span *sp = &p->spans[k];
                int gl = i > 0 && mt_span_is_word_char(tr, i - 1, tl, 1), gr = mt_span_is_word_char(tr, i + len, tl, 0);
                if (passed_through(sp->kind)) { /* a placeholder may take a suffix ("%ss") */
                    gl = gl && !sp->glued_left;
                    gr = gr && !sp->glued_right;
                } else { /* a word glued to a link makes another link */
                    gl = gl && !(sp->start > 0 && mt_span_is_word_char(p->orig, sp->start - 1, sp->start, 1));
                    gr = gr && !mt_span_is_word_char(p->orig, sp->start + sp->len, p->n_orig, 0);
                }
                if (put_span(&b, p, k, gl, gr))
                    goto fail;
            } else if ((i == 0 || mt_span_is_space((unsigned char)tr[i - 1])) && (i + len == tl || mt_span_is_space((unsigned char)tr[i + len]))) {
                /* a dropped copy standing alone goes with the whitespace after it */
                while (i + len < tl && mt_span_is_space((unsigned char)tr[i + len]))
                    len++;
                if (i + len == tl) /* at the end: with the whitespace before it */
                    while (b.n > 0 && mt_span_is_space((unsigned char)b.s[b.n - 1]))
                        b.s[--b.n] = 0;
            } else if (i > 0 && mt_span_is_space((unsigned char)tr[i - 1]) && !mt_span_is_word_char(tr, i + len, tl, 0)) {
                /* "und %s." without its copy: "und." */
                while (b.n > 0 && mt_span_is_space((unsigned char)b.s[b.n - 1]))
                    b.s[--b.n] = 0;
            }
            at = i + len;
        } else {
            break;
        }
    }
    if (mt_strbuf_put(&b, tr + at, tl - at))
        goto fail;
    for (; m < n_miss; m++)
        if (put_span(&b, p, miss[m].span, b.n > 0 && !mt_span_is_space((unsigned char)b.s[b.n - 1]), 0))
            goto fail;
    out = b.s; /* done: the buffer is the answer */
    b.s = NULL;
fail:
    free(cp);
    free(order);
    free(span_bytes);
    free(ws);
    free(we);
    free(found);
    free(miss);
    free(lo);
    free(hi);
    free(b.s);
    return out;
}
