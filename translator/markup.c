/* markup.c: inline markup taken out of an HTML block and put back by word alignment
 * (markup.h). */
#include "markup.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

typedef struct {
    size_t open_at, open_len;   /* opening tag (or the whole marker) in the input */
    size_t close_at, close_len; /* closing tag; close_len 0: none in the input */
    char name[16];
    int parent;                 /* index or -1 */
    int marker;                 /* 1: void / comment / opaque: no content of its own */
    int mask;                   /* a marker sent as the mask "{base + index}" in the text */
    size_t t0, t1;              /* covered bytes of the plain text */
    int w0, w1;                 /* covered words [w0, w1) (markers: w0 = w1 = position) */
} node;

struct mt_markup {
    char *html;
    char *text;
    node *nodes;
    int n;
    int n_words;  /* whitespace-separated words of text */
    long base;    /* node k's mask is "{base + k}" */
    size_t steps; /* work done by the split (mt_markup_split_steps) */
};

static int is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

static size_t tag_name(const char *s, size_t i, size_t n, char *name, size_t cap)
{
    size_t k = 0;
    /* html.c's name characters, so both read the same elements */
    while (i < n && (((s[i] | 32) >= 'a' && (s[i] | 32) <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
                     s[i] == ':' || s[i] == '_' || s[i] == '.')) {
        if (k + 1 < cap)
            name[k++] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] | 32 : s[i]);
        i++;
    }
    name[k] = 0;
    return i;
}

/* End of the tag starting at s[i] == '<' (index after '>'), or i when s[i] starts text
 * ("a < b", "</ x"). Read as html.c reads tags (HTML5: a quote opens a value only after
 * '='), so that the service's wrapping and this split agree on every tag. */
static size_t tag_end(const char *s, size_t i, size_t n) { return mt_html_tag_end(s, n, i); }

static int is_void(const char *name)
{
    static const char *const v[] = {"br", "img", "wbr", "hr", "input", "meta", "link", "area", "col",
                                    "embed", "source", "track", "param", "base"};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
        if (!strcmp(name, v[i]))
            return 1;
    return 0;
}

/* Decodes the entity at s[i] == '&' into out; returns bytes consumed (0: not an entity). */
static size_t entity(const char *s, size_t i, size_t n, char *out, size_t *olen)
{
    static const struct {
        const char *name, *text;
    } named[] = {{"amp;", "&"}, {"lt;", "<"}, {"gt;", ">"}, {"quot;", "\""}, {"apos;", "'"}, {"nbsp;", "\xc2\xa0"}};
    for (size_t k = 0; k < sizeof named / sizeof *named; k++) {
        size_t l = strlen(named[k].name);
        if (i + 1 + l <= n && !strncmp(s + i + 1, named[k].name, l)) {
            *olen = strlen(named[k].text);
            memcpy(out, named[k].text, *olen);
            return 1 + l;
        }
    }
    if (i + 2 < n && s[i + 1] == '#') {
        size_t j = i + 2;
        int hex = j < n && (s[j] | 32) == 'x';
        j += (size_t)hex;
        unsigned long cp = 0;
        size_t start = j;
        while (j < n && j - start < 8) {
            char c = (char)(s[j] | 32);
            int d = c >= '0' && c <= '9' ? c - '0' : hex && c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
            if (d < 0)
                break;
            cp = cp * (hex ? 16 : 10) + (unsigned long)d;
            j++;
        }
        if (j == start || j >= n || s[j] != ';' || cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        unsigned char *o = (unsigned char *)out;
        if (cp < 0x80) {
            o[0] = (unsigned char)cp;
            *olen = 1;
        } else if (cp < 0x800) {
            o[0] = (unsigned char)(0xC0 | (cp >> 6));
            o[1] = (unsigned char)(0x80 | (cp & 0x3F));
            *olen = 2;
        } else if (cp < 0x10000) {
            o[0] = (unsigned char)(0xE0 | (cp >> 12));
            o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
            o[2] = (unsigned char)(0x80 | (cp & 0x3F));
            *olen = 3;
        } else {
            o[0] = (unsigned char)(0xF0 | (cp >> 18));
            o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
            o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
            o[3] = (unsigned char)(0x80 | (cp & 0x3F));
            *olen = 4;
        }
        return j + 1 - i;
    }
    return 0;
}

/* Innermost open element of each tag name, so that a closing tag finds the element it
 * closes without walking the open chain (stray closing tags inside deep nesting). Keys
 * are node indices (their names), open addressing; entries are never removed. */
typedef struct {
    int *key, *open; /* node whose name is the key; innermost open node of that name or -1 */
    size_t mask;
} name_map;

static size_t name_hash(const char *name)
{
    size_t h = 2166136261u;
    for (; *name; name++)
        h = (h ^ (unsigned char)*name) * 16777619u;
    return h;
}

/* The slot of `name` (empty: key -1). */
static size_t name_slot(const name_map *nm, const node *nodes, const char *name, size_t *steps)
{
    size_t i = name_hash(name) & nm->mask;
    while (nm->key[i] >= 0 && strcmp(nodes[nm->key[i]].name, name)) {
        i = (i + 1) & nm->mask;
        ++*steps;
    }
    return i;
}

/* Masks: an opaque element (translate="no", class="notranslate", the service's wrapped
 * protected spans, script, style) or a void element other than a line break (img, input,
 * <x id="0"/> as Weblate sends placeholders) is sent in the text as "{base + k}", k its
 * node, a brace field the bundled models copy through; the text around it goes as
 * written, so quotes and brackets stay on the right side ('<x id="1"/>' -> '{7}'). A
 * copy of a mask in the translation is replaced by the element; one the model dropped is
 * placed by alignment like any other marker. base is above every number in the block
 * followed by '}' or '&' (so above every "{N}" of its text, entities decoded). */
enum { MASK_CHARS = 12, MASK_DIGITS_MAX = 9, MASK_BASE_MAX = 1000000 };

static long mask_base(const char *s, size_t n)
{
    long base = 0;
    for (size_t i = 0; i < n;) {
        if (s[i] < '0' || s[i] > '9') {
            i++;
            continue;
        }
        size_t j = i;
        long v = 0;
        while (j < n && s[j] >= '0' && s[j] <= '9') {
            if (v < MASK_BASE_MAX)
                v = v * 10 + (s[j] - '0');
            j++;
        }
        if (j < n && (s[j] == '}' || s[j] == '&') && v < MASK_BASE_MAX && v >= base)
            base = v + 1;
        i = j;
    }
    return base;
}

/* Is the marker s[i, end) amid the text, so that a mask tells the model where it stands:
 * glued to text on a side ('<x id="1"/>', (<img>), "<kept URL>".) or between words
 * ("Press <x id="0"/> to save")? At a block's edge it stays out of the text (the model
 * reads the same words as without it) and goes to the start or end. */
static int amid_text(const char *s, size_t n, size_t i, size_t end, int words_before)
{
    int glued = (i > 0 && !is_space((unsigned char)s[i - 1]) && s[i - 1] != '>') ||
                (end < n && !is_space((unsigned char)s[end]) && s[end] != '<');
    size_t k = end;
    while (k < n && is_space((unsigned char)s[k]))
        k++;
    return glued || (words_before && k < n && s[k] != '<');
}

/* Writes node m->n's mask at text[t]; returns the text's new end. */
static size_t put_mask(mt_markup *m, size_t t)
{
    node *nd = &m->nodes[m->n];
    nd->mask = 1;
    nd->t0 = t;
    t += (size_t)sprintf(m->text + t, "{%ld}", m->base + m->n);
    nd->t1 = t;
    return t;
}

/* The node whose mask is at s[i] (*len its bytes), or -1. */
static int mask_at(const mt_markup *m, const char *s, size_t i, size_t n, size_t *len)
{
    if (s[i] != '{')
        return -1;
    size_t j = i + 1;
    long v = 0;
    while (j < n && s[j] >= '0' && s[j] <= '9' && j - i <= MASK_DIGITS_MAX)
        v = v * 10 + (s[j++] - '0');
    if (j == i + 1 || j >= n || s[j] != '}' || v < m->base || v - m->base >= m->n || !m->nodes[v - m->base].mask)
        return -1;
    *len = j + 1 - i;
    return (int)(v - m->base);
}

mt_markup *mt_markup_split(const char *html, size_t n)
{
    mt_markup *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    size_t max_nodes = n / 3 + 1; /* a tag is >= 3 bytes */
    name_map nm = {0};
    for (nm.mask = 1; nm.mask < 2 * max_nodes; nm.mask <<= 1)
        ;
    m->html = malloc(n + 1);
    m->text = malloc(n + 1 + (MASK_CHARS - 3) * max_nodes); /* a mask may be longer than its tag */
    m->nodes = malloc(sizeof *m->nodes * max_nodes);
    nm.key = malloc(sizeof *nm.key * nm.mask);
    nm.open = malloc(sizeof *nm.open * nm.mask);
    int *prev_same = malloc(sizeof *prev_same * max_nodes); /* per open node: the next open one of its name */
    nm.mask--;
    if (!m->html || !m->text || !m->nodes || !nm.key || !nm.open || !prev_same) {
        free(nm.key);
        free(nm.open);
        free(prev_same);
        mt_markup_free(m);
        return NULL;
    }
    for (size_t k = 0; k <= nm.mask; k++)
        nm.key[k] = -1;
    memcpy(m->html, html, n);
    m->html[n] = 0;
    m->base = mask_base(html, n);
    const char *s = m->html;
    size_t t = 0, steps = 0;
    int open = -1;        /* innermost open element */
    int words_before = 0; /* text other than whitespace so far */
    for (size_t i = 0; i < n;) {
        steps++;
        if (s[i] == '&') {
            size_t olen = 0, used = entity(s, i, n, m->text + t, &olen);
            if (used) {
                t += olen;
                i += used;
                words_before = 1;
                continue;
            }
        }
        size_t end = s[i] == '<' && strncmp(s + i, "<!--", 4) ? tag_end(s, i, n) : i;
        if (s[i] != '<' || (end == i && strncmp(s + i, "<!--", 4))) {
            words_before |= !is_space((unsigned char)s[i]);
            m->text[t++] = s[i++];
            continue;
        }
        node *nd = &m->nodes[m->n];
        *nd = (node){.open_at = i, .parent = open, .t0 = t, .t1 = t, .marker = 1};
        if (!strncmp(s + i, "<!--", 4)) {
            const char *e = strstr(s + i + 4, "-->");
            size_t end = e ? (size_t)(e - s) + 3 : n;
            nd->open_len = end - i;
            steps += end - i;
            m->n++;
            i = end;
            continue;
        }
        steps += end - i;
        if (s[i + 1] == '/') {
            char name[16];
            tag_name(s, i + 2, n, name, sizeof name);
            size_t slot = name_slot(&nm, m->nodes, name, &steps);
            int k = nm.key[slot] >= 0 ? nm.open[slot] : -1;
            if (k >= 0) { /* closes k (and any unclosed element inside it) */
                m->nodes[k].close_at = i;
                m->nodes[k].close_len = end - i;
                for (int q = open; q != m->nodes[k].parent; q = m->nodes[q].parent) {
                    m->nodes[q].t1 = t;
                    nm.open[name_slot(&nm, m->nodes, m->nodes[q].name, &steps)] = prev_same[q];
                    steps++;
                }
                open = m->nodes[k].parent;
            } else { /* stray: kept as a marker */
                nd->open_len = end - i;
                m->n++;
            }
            i = end;
            continue;
        }
        tag_name(s, i + 1, n, nd->name, sizeof nd->name);
        nd->open_len = end - i;
        int self_closing = mt_html_tag_self_closing(s, n, i);
        if (is_void(nd->name) || self_closing || !nd->name[0]) { /* also <!...>, <?...?> */
            if (!strcmp(nd->name, "br") || !strcmp(nd->name, "hr")) /* a line break separates words */
                m->text[t++] = ' ';
            else if (nd->name[0] && strcmp(nd->name, "wbr") && amid_text(s, n, i, end, words_before))
                t = put_mask(m, t);
            m->n++;
            i = end;
            continue;
        }
        if (!strcmp(nd->name, "script") || !strcmp(nd->name, "style") || mt_html_says_no_translate(s, end, i)) {
            /* opaque: through its matching close tag (same-name nesting counted) */
            int depth = 1;
            size_t j = end;
            while (j < n && depth) {
                steps++;
                if (!strncmp(s + j, "<!--", 4)) { /* a comment, read as the block's own are */
                    const char *e = strstr(s + j + 4, "-->");
                    size_t ce = e ? (size_t)(e - s) + 3 : n;
                    steps += ce - j;
                    j = ce;
                } else if (s[j] == '<' && tag_end(s, j, n) > j) {
                    char name[16];
                    int closing = j + 1 < n && s[j + 1] == '/';
                    tag_name(s, j + 1 + (size_t)closing, n, name, sizeof name);
                    size_t e = tag_end(s, j, n);
                    /* an end tag counts whatever it ends with ("</span/>"), as in html.c */
                    if (!strcmp(name, nd->name) && (closing || !mt_html_tag_self_closing(s, n, j)))
                        depth += closing ? -1 : 1;
                    steps += e - j;
                    j = e;
                } else {
                    j++;
                }
            }
            nd->open_len = j - i;
            if (amid_text(s, n, i, j, words_before))
                t = put_mask(m, t);
            m->n++;
            i = j;
            continue;
        }
        nd->marker = 0;
        size_t slot = name_slot(&nm, m->nodes, nd->name, &steps);
        if (nm.key[slot] < 0) {
            nm.key[slot] = m->n;
            nm.open[slot] = -1;
        }
        prev_same[m->n] = nm.open[slot];
        nm.open[slot] = m->n;
        open = m->n++;
        i = end;
    }
    for (int q = open; q >= 0; q = m->nodes[q].parent) /* unclosed at the end */
        m->nodes[q].t1 = t;
    m->text[t] = 0;
    free(nm.key);
    free(nm.open);
    free(prev_same);
    /* byte ranges -> word ranges: starts[b] = words starting in text[0, b); next_ns[b] /
     * prev_ns[b]: the first non-space byte at or after b / the last one before b (or t) */
    int *starts = malloc(sizeof *starts * (t + 1)), *next_ns = malloc(sizeof *next_ns * (t + 1)),
        *prev_ns = malloc(sizeof *prev_ns * (t + 1));
    if (!starts || !next_ns || !prev_ns) {
        free(starts);
        free(next_ns);
        free(prev_ns);
        mt_markup_free(m);
        return NULL;
    }
    starts[0] = 0;
    prev_ns[0] = (int)t;
    for (size_t b = 0; b < t; b++) {
        int sp = is_space((unsigned char)m->text[b]);
        starts[b + 1] = starts[b] + (!sp && (b == 0 || is_space((unsigned char)m->text[b - 1])));
        prev_ns[b + 1] = sp ? prev_ns[b] : (int)b;
    }
    next_ns[t] = (int)t;
    for (size_t b = t; b-- > 0;)
        next_ns[b] = is_space((unsigned char)m->text[b]) ? next_ns[b + 1] : (int)b;
    m->n_words = starts[t];
    steps += 3 * t;
    for (int k = 0; k < m->n; k++) {
        node *nd = &m->nodes[k];
        size_t first = (size_t)next_ns[nd->t0], last = (size_t)prev_ns[nd->t1];
        steps++;
        if (nd->marker || first >= nd->t1 || last == t || last < nd->t0) {
            nd->w0 = nd->w1 = starts[nd->t0]; /* words starting before t0 */
        } else {
            nd->w0 = starts[first + 1] - 1;
            nd->w1 = starts[last + 1];
        }
    }
    free(starts);
    free(next_ns);
    free(prev_ns);
    m->steps = steps;
    return m;
}

void mt_markup_free(mt_markup *m)
{
    if (!m)
        return;
    free(m->html);
    free(m->text);
    free(m->nodes);
    free(m);
}

const char *mt_markup_text(const mt_markup *m) { return m->text; }
int mt_markup_count(const mt_markup *m) { return m->n; }
size_t mt_markup_split_steps(const mt_markup *m) { return m->steps; }

typedef struct {
    const mt_markup *m;
    const char *tr;
    size_t *ws, *we; /* output words */
    size_t *gs;      /* start of the whitespace before word k not yet written (= ws[k]: written) */
    int n_out, next_word;
    int *a0, *a1;    /* per node: output range */
    char *o, *o0;    /* write position, start */
    size_t *copy_at;   /* the masks in the translation, in order: offset, length, node (-1: */
    size_t *copy_len;  /* a repeated copy, dropped) */
    int *copy_node, n_copies, next_copy;
    size_t tag_end;  /* offset just after the last tag (or marker) written */
    int tag_closes;  /* ... and whether that ended in a closing tag ("...</b>") */
    char *found;     /* per node: its mask is in the translation */
    size_t steps;
} writer;

static void put(writer *w, const char *s, size_t len)
{
    memcpy(w->o, s, len);
    w->o += len;
}

/* A tag or marker, remembering whether it ends in a closing tag (its last '<' starts
 * "</"): scanned once per tag. */
static void put_tag(writer *w, const char *s, size_t len)
{
    size_t at = (size_t)(w->o - w->o0);
    put(w, s, len);
    w->tag_end = at + len;
    w->tag_closes = 0;
    for (size_t i = len; i-- > 0;) {
        w->steps++;
        if (s[i] == '<') {
            w->tag_closes = at + i > 0 && i + 1 < len && s[i + 1] == '/';
            break;
        }
    }
}

/* 1 when the output so far ends in a closing tag ("...</b>"). */
static int after_end_tag(const writer *w)
{
    return w->o != w->o0 && (size_t)(w->o - w->o0) == w->tag_end && w->tag_closes;
}

static void put_escaped(writer *w, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '&')
            put(w, "&amp;", 5);
        else if (s[i] == '<')
            put(w, "&lt;", 4);
        else if (s[i] == '>')
            put(w, "&gt;", 4);
        else
            *w->o++ = s[i];
    }
}

static void put_tag(writer *w, const char *s, size_t len);

/* The translation's bytes [at, at + len), escaped, with the masks in them replaced by
 * their elements (pieces come in the translation's order). */
static void put_text(writer *w, size_t at, size_t len)
{
    size_t end = at + len;
    while (w->next_copy < w->n_copies && w->copy_at[w->next_copy] < end) {
        int c = w->next_copy++;
        size_t ca = w->copy_at[c];
        put_escaped(w, w->tr + at, ca - at);
        if (w->copy_node[c] >= 0) {
            const node *nd = &w->m->nodes[w->copy_node[c]];
            put_tag(w, w->m->html + nd->open_at, nd->open_len);
        }
        at = ca + w->copy_len[c];
    }
    put_escaped(w, w->tr + at, end - at);
}

/* Output words up to (excluding) `until`, each preceded by the translation's own gap. */
static void words_until(writer *w, int until)
{
    while (w->next_word < until) {
        int k = w->next_word++;
        put_text(w, w->gs[k], w->ws[k] - w->gs[k]);
        put_text(w, w->ws[k], w->we[k] - w->ws[k]);
    }
}

/* The gap before word `at`, written once, before a tag that opens there. */
static void gap_before(writer *w, int at)
{
    if (at == w->next_word && at < w->n_out) {
        put_text(w, w->gs[at], w->ws[at] - w->gs[at]);
        w->gs[at] = w->ws[at];
    }
}

/* The elements of the block, depth first, each opened before its aligned words and closed
 * after them. Iterative: the nesting depth is the input's to choose. first_child and
 * next_sibling link the tree (-1: none); frames holds the open elements. */
static void emit(writer *w, const int *first_child, const int *next_sibling, int *frame_node, int *frame_next)
{
    const mt_markup *m = w->m;
    int depth = 0;
    frame_node[0] = -1;
    frame_next[0] = first_child[0];
    while (depth >= 0) {
        w->steps++;
        int k = frame_next[depth];
        if (k < 0) { /* the element's children are done: its last words, its closing tag */
            int p = frame_node[depth--];
            words_until(w, p < 0 ? w->n_out : w->a1[p]);
            if (p < 0)
                break;
            const node *pn = &m->nodes[p];
            if (pn->close_len) {
                put_tag(w, m->html + pn->close_at, pn->close_len);
            } else {
                char close[24];
                size_t l = (size_t)snprintf(close, sizeof close, "</%s>", pn->name);
                put_tag(w, close, l);
            }
            continue;
        }
        frame_next[depth] = next_sibling[k];
        const node *nd = &m->nodes[k];
        if (nd->mask && w->found[k]) /* written where the translation has its mask */
            continue;
        words_until(w, w->a0[k]);
        gap_before(w, w->a0[k]);
        /* A marker that followed whitespace, put after an output word: a space between. */
        if (nd->marker && nd->open_at > 0 && is_space((unsigned char)m->html[nd->open_at - 1]) &&
            w->next_word > 0 && w->next_word == w->a0[k] && !is_space((unsigned char)w->o[-1]) &&
            (w->o[-1] != '>' || after_end_tag(w)))
            put(w, " ", 1);
        put_tag(w, m->html + nd->open_at, nd->open_len);
        if (nd->marker) {
            /* A marker that stood before whitespace keeps a space before the word that
             * follows it here (else "@bob</span>schaut"), when that word's gap is used. */
            size_t after = nd->open_at + nd->open_len;
            int a = w->a0[k];
            if ((is_space((unsigned char)m->html[after]) || !m->html[after]) && a == w->next_word && a < w->n_out && w->gs[a] == w->ws[a])
                put(w, " ", 1);
            continue;
        }
        depth++;
        frame_node[depth] = k;
        frame_next[depth] = first_child[k + 1];
    }
}

/* Minimum and maximum over ranges of source words: a segment tree over the words, leaf s
 * holding the least and the greatest output word aligned to s (INT_MAX / -1: none). */
typedef struct {
    int *lo, *hi;
    int size;
} range_tree;

static void range_query(const range_tree *rt, int a, int b, int *lo, int *hi, size_t *steps)
{
    *lo = INT_MAX;
    *hi = -1;
    for (a += rt->size, b += rt->size; a < b; a >>= 1, b >>= 1) {
        ++*steps;
        if (a & 1) {
            *lo = rt->lo[a] < *lo ? rt->lo[a] : *lo;
            *hi = rt->hi[a] > *hi ? rt->hi[a] : *hi;
            a++;
        }
        if (b & 1) {
            b--;
            *lo = rt->lo[b] < *lo ? rt->lo[b] : *lo;
            *hi = rt->hi[b] > *hi ? rt->hi[b] : *hi;
        }
    }
}

char *mt_markup_restore(const mt_markup *m, const char *tr, const int (*align)[2], int n_align)
{
    return mt_markup_restore_steps(m, tr, align, n_align, NULL);
}

char *mt_markup_restore_steps(const mt_markup *m, const char *tr, const int (*align)[2], int n_align, size_t *steps)
{
    size_t tl = strlen(tr);
    writer w = {.m = m, .tr = tr};
    for (size_t i = 0; i < tl; i++)
        w.n_out += !is_space((unsigned char)tr[i]) && (i == 0 || is_space((unsigned char)tr[i - 1]));
    w.steps = tl;
    size_t nn = (size_t)m->n + 1;
    range_tree rt = {.size = m->n_words + 1};
    w.ws = malloc(sizeof *w.ws * (size_t)(w.n_out + 1));
    w.we = malloc(sizeof *w.we * (size_t)(w.n_out + 1));
    w.gs = malloc(sizeof *w.gs * (size_t)(w.n_out + 1));
    w.a0 = malloc(sizeof *w.a0 * nn);
    w.a1 = malloc(sizeof *w.a1 * nn);
    int *last_end = malloc(sizeof *last_end * nn); /* per parent+1: end of the last child */
    int *first_child = malloc(sizeof *first_child * nn), *last_child = malloc(sizeof *last_child * nn);
    int *next_sibling = malloc(sizeof *next_sibling * nn);
    int *frame_node = malloc(sizeof *frame_node * nn), *frame_next = malloc(sizeof *frame_next * nn);
    rt.lo = malloc(sizeof *rt.lo * 2 * (size_t)rt.size);
    rt.hi = malloc(sizeof *rt.hi * 2 * (size_t)rt.size);
    w.copy_at = malloc(sizeof *w.copy_at * (tl / 3 + 1)); /* a mask is >= 3 bytes */
    w.copy_len = malloc(sizeof *w.copy_len * (tl / 3 + 1));
    w.copy_node = malloc(sizeof *w.copy_node * (tl / 3 + 1));
    w.found = calloc(nn, 1);
    size_t cap = 5 * tl + strlen(m->html) + 24 * (size_t)m->n + 16; /* escaping at most x5 */
    char *out = malloc(cap);
    if (!w.ws || !w.we || !w.gs || !w.a0 || !w.a1 || !last_end || !first_child || !last_child || !next_sibling ||
        !frame_node || !frame_next || !rt.lo || !rt.hi || !w.copy_at || !w.copy_len || !w.copy_node || !w.found ||
        !out) {
        free(out);
        out = NULL;
        goto done;
    }
    for (size_t i = 0, k = 0; i < tl; i++) {
        if (!is_space((unsigned char)tr[i]) && (i == 0 || is_space((unsigned char)tr[i - 1])))
            w.ws[k] = i;
        if (!is_space((unsigned char)tr[i]) && (i + 1 == tl || is_space((unsigned char)tr[i + 1])))
            w.we[k++] = i + 1;
    }
    for (int k = 0; k < w.n_out; k++)
        w.gs[k] = k ? w.we[k - 1] : 0;
    for (size_t i = 0; i < tl;) { /* the masks the model copied: the first of each stands */
        size_t ml;
        int k = mask_at(m, tr, i, tl, &ml);
        if (k < 0) {
            i++;
            continue;
        }
        w.copy_at[w.n_copies] = i;
        w.copy_len[w.n_copies] = ml;
        w.copy_node[w.n_copies++] = w.found[k] ? -1 : k;
        w.found[k] = 1;
        i += ml;
    }
    w.steps += tl;
    /* Per source word: the output words aligned to it. Pairs naming source word -1 (the
     * word before the first) only place what stands at the start. */
    int after_start = -1;
    for (int s = 0; s < 2 * rt.size; s++) {
        rt.lo[s] = INT_MAX;
        rt.hi[s] = -1;
    }
    for (int a = 0; a < n_align; a++) {
        int s = align[a][0], t = align[a][1];
        if (t < 0 || t >= w.n_out)
            continue;
        if (s == -1 && t + 1 > after_start)
            after_start = t + 1;
        if (s < 0 || s >= m->n_words)
            continue;
        int *lo = &rt.lo[rt.size + s], *hi = &rt.hi[rt.size + s];
        *lo = t < *lo ? t : *lo;
        *hi = t + 1 > *hi ? t + 1 : *hi;
    }
    for (int s = rt.size - 1; s > 0; s--) {
        rt.lo[s] = rt.lo[2 * s] < rt.lo[2 * s + 1] ? rt.lo[2 * s] : rt.lo[2 * s + 1];
        rt.hi[s] = rt.hi[2 * s] > rt.hi[2 * s + 1] ? rt.hi[2 * s] : rt.hi[2 * s + 1];
    }
    w.steps += (size_t)n_align + 2 * (size_t)rt.size;
    /* The tree: node k's children in document order (index k + 1; 0 is the block). */
    for (size_t k = 0; k < nn; k++) {
        first_child[k] = last_child[k] = next_sibling[k] = -1;
        last_end[k] = 0;
    }
    for (int k = 0; k < m->n; k++) {
        int p = m->nodes[k].parent + 1;
        if (last_child[p] < 0)
            first_child[p] = k;
        else
            next_sibling[last_child[p]] = k;
        last_child[p] = k;
    }
    /* Output ranges in document order: parents come before their children. */
    for (int k = 0; k < m->n; k++) {
        const node *nd = &m->nodes[k];
        int p0 = nd->parent < 0 ? 0 : w.a0[nd->parent], p1 = nd->parent < 0 ? w.n_out : w.a1[nd->parent];
        int lo = -1, hi = -1, after = -1;
        if (!nd->marker && nd->w1 > nd->w0) {
            range_query(&rt, nd->w0, nd->w1, &lo, &hi, &w.steps);
            if (hi < 0)
                lo = hi = -1;
        }
        if (nd->w0 == 0)
            after = after_start;
        else if (nd->w0 - 1 < m->n_words)
            after = rt.hi[rt.size + nd->w0 - 1];
        if (lo < 0) { /* a marker or an element with nothing aligned: after the word before */
            lo = hi = after >= 0 ? after : (nd->w0 == 0 ? 0 : p0);
            if (nd->w0 > 0 && after < 0 && n_align == 0)
                lo = hi = p1; /* no alignment at all: keep order at the end */
        }
        int floor_ = last_end[nd->parent + 1] > p0 ? last_end[nd->parent + 1] : p0;
        lo = lo < floor_ ? floor_ : lo > p1 ? p1 : lo;
        hi = hi < lo ? lo : hi > p1 ? p1 : hi;
        w.a0[k] = lo;
        w.a1[k] = hi;
        last_end[nd->parent + 1] = hi;
        w.steps++;
    }
    w.o = w.o0 = out;
    emit(&w, first_child, next_sibling, frame_node, frame_next);
    if (w.n_out > 0)
        put_text(&w, w.we[w.n_out - 1], tl - w.we[w.n_out - 1]);
    else
        put_text(&w, 0, tl);
    *w.o = 0;
    if (steps)
        *steps = w.steps;
done:
    free(w.ws);
    free(w.we);
    free(w.gs);
    free(w.a0);
    free(w.a1);
    free(last_end);
    free(first_child);
    free(last_child);
    free(next_sibling);
    free(frame_node);
    free(frame_next);
    free(rt.lo);
    free(rt.hi);
    free(w.copy_at);
    free(w.copy_len);
    free(w.copy_node);
    free(w.found);
    return out;
}
