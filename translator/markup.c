/* markup.c: inline markup taken out of an HTML block and put back by word alignment
 * (markup.h). */
#include "markup.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct {
    size_t open_at, open_len;   /* opening tag (or the whole marker) in the input */
    size_t close_at, close_len; /* closing tag; close_len 0: none in the input */
    char name[16];
    int parent;                 /* index or -1 */
    int marker;                 /* 1: void / comment / opaque: no content of its own */
    size_t t0, t1;              /* covered bytes of the plain text */
    int w0, w1;                 /* covered words [w0, w1) (markers: w0 = w1 = position) */
} node;

struct mt_markup {
    char *html;
    char *text;
    node *nodes;
    int n;
};

static int is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

static size_t tag_name(const char *s, size_t i, size_t n, char *name, size_t cap)
{
    size_t k = 0;
    while (i < n && (((s[i] | 32) >= 'a' && (s[i] | 32) <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-')) {
        if (k + 1 < cap)
            name[k++] = (char)(s[i] | 32);
        i++;
    }
    name[k] = 0;
    return i;
}

/* End of the tag starting at s[i] == '<' (index after '>'), quotes respected; n if none. */
static size_t tag_end(const char *s, size_t i, size_t n)
{
    char q = 0;
    for (size_t j = i + 1; j < n; j++) {
        if (q) {
            if (s[j] == q)
                q = 0;
        } else if (s[j] == '"' || s[j] == '\'') {
            q = s[j];
        } else if (s[j] == '>') {
            return j + 1;
        }
    }
    return n;
}

static int has_translate_no(const char *s, size_t a, size_t b)
{
    for (size_t i = a; i + 12 <= b; i++)
        if (!strncasecmp(s + i, "translate=", 10) && (s[i - 1] == ' ' || s[i - 1] == '\t' || s[i - 1] == '\n')) {
            const char *v = s + i + 10;
            if (*v == '"' || *v == '\'')
                v++;
            if (!strncasecmp(v, "no", 2))
                return 1;
        }
    return 0;
}

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

mt_markup *mt_markup_split(const char *html, size_t n)
{
    mt_markup *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->html = malloc(n + 1);
    m->text = malloc(n + 1);
    m->nodes = malloc(sizeof *m->nodes * (n / 3 + 1)); /* a tag is >= 3 bytes */
    if (!m->html || !m->text || !m->nodes) {
        mt_markup_free(m);
        return NULL;
    }
    memcpy(m->html, html, n);
    m->html[n] = 0;
    const char *s = m->html;
    size_t t = 0;
    int open = -1; /* innermost open element */
    for (size_t i = 0; i < n;) {
        if (s[i] == '&') {
            size_t olen = 0, used = entity(s, i, n, m->text + t, &olen);
            if (used) {
                t += olen;
                i += used;
                continue;
            }
        }
        if (s[i] != '<' || i + 1 >= n || !(((s[i + 1] | 32) >= 'a' && (s[i + 1] | 32) <= 'z') || s[i + 1] == '/' || s[i + 1] == '!')) {
            m->text[t++] = s[i++];
            continue;
        }
        node *nd = &m->nodes[m->n];
        *nd = (node){.open_at = i, .parent = open, .t0 = t, .t1 = t, .marker = 1};
        if (!strncmp(s + i, "<!--", 4)) {
            const char *e = strstr(s + i + 4, "-->");
            size_t end = e ? (size_t)(e - s) + 3 : n;
            nd->open_len = end - i;
            m->n++;
            i = end;
            continue;
        }
        size_t end = tag_end(s, i, n);
        if (s[i + 1] == '/') {
            char name[16];
            tag_name(s, i + 2, n, name, sizeof name);
            int k = open;
            while (k >= 0 && strcmp(m->nodes[k].name, name))
                k = m->nodes[k].parent;
            if (k >= 0) { /* closes k (and any unclosed element inside it) */
                m->nodes[k].close_at = i;
                m->nodes[k].close_len = end - i;
                for (int q = open; q != m->nodes[k].parent; q = m->nodes[q].parent)
                    m->nodes[q].t1 = t;
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
        int self_closing = end >= 2 && s[end - 2] == '/';
        if (is_void(nd->name) || self_closing || s[i + 1] == '!') {
            if (!strcmp(nd->name, "br") || !strcmp(nd->name, "hr")) /* a line break separates words */
                m->text[t++] = ' ';
            m->n++;
            i = end;
            continue;
        }
        if (!strcmp(nd->name, "script") || !strcmp(nd->name, "style") || has_translate_no(s, i, end)) {
            /* opaque: through its matching close tag (same-name nesting counted) */
            int depth = 1;
            size_t j = end;
            while (j < n && depth) {
                if (s[j] == '<') {
                    char name[16];
                    int closing = j + 1 < n && s[j + 1] == '/';
                    tag_name(s, j + 1 + (size_t)closing, n, name, sizeof name);
                    size_t e = tag_end(s, j, n);
                    if (!strcmp(name, nd->name) && !(e >= 2 && s[e - 2] == '/'))
                        depth += closing ? -1 : 1;
                    j = e;
                } else {
                    j++;
                }
            }
            nd->open_len = j - i;
            m->n++;
            i = j;
            continue;
        }
        nd->marker = 0;
        open = m->n++;
        i = end;
    }
    for (int q = open; q >= 0; q = m->nodes[q].parent) /* unclosed at the end */
        m->nodes[q].t1 = t;
    m->text[t] = 0;
    /* byte ranges -> word ranges */
    for (int k = 0; k < m->n; k++) {
        node *nd = &m->nodes[k];
        int w = 0, first = -1, last = -1;
        for (size_t b = 0; b < t; b++) {
            int starts = !is_space((unsigned char)m->text[b]) && (b == 0 || is_space((unsigned char)m->text[b - 1]));
            if (starts)
                w++;
            if (!is_space((unsigned char)m->text[b]) && b >= nd->t0 && b < nd->t1) {
                if (first < 0)
                    first = w - 1;
                last = w - 1;
            }
        }
        if (nd->marker || first < 0) {
            int before = 0; /* words starting before t0 */
            for (size_t b = 0; b < nd->t0 && b < t; b++)
                before += !is_space((unsigned char)m->text[b]) && (b == 0 || is_space((unsigned char)m->text[b - 1]));
            nd->w0 = nd->w1 = before;
        } else {
            nd->w0 = first;
            nd->w1 = last + 1;
        }
    }
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

typedef struct {
    const mt_markup *m;
    const char *tr;
    size_t *ws, *we; /* output words */
    size_t *gs;      /* start of the whitespace before word k not yet written (= ws[k]: written) */
    int n_out, next_word;
    int *a0, *a1;    /* per node: output range */
    char *o, *o0;    /* write position, start */
} writer;

/* 1 when the output so far ends in a closing tag ("...</b>"). */
static int after_end_tag(const writer *w)
{
    if (w->o == w->o0 || w->o[-1] != '>')
        return 0;
    for (const char *p = w->o - 1; p > w->o0; p--)
        if (*p == '<')
            return p[1] == '/';
    return 0;
}

static void put(writer *w, const char *s, size_t len)
{
    memcpy(w->o, s, len);
    w->o += len;
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

/* Output words up to (excluding) `until`, each preceded by the translation's own gap. */
static void words_until(writer *w, int until)
{
    while (w->next_word < until) {
        int k = w->next_word++;
        put_escaped(w, w->tr + w->gs[k], w->ws[k] - w->gs[k]);
        put_escaped(w, w->tr + w->ws[k], w->we[k] - w->ws[k]);
    }
}

/* The gap before word `at`, written once, before a tag that opens there. */
static void gap_before(writer *w, int at)
{
    if (at == w->next_word && at < w->n_out) {
        put_escaped(w, w->tr + w->gs[at], w->ws[at] - w->gs[at]);
        w->gs[at] = w->ws[at];
    }
}

static void emit(writer *w, int parent, int end)
{
    const mt_markup *m = w->m;
    for (int k = 0; k < m->n; k++) {
        if (m->nodes[k].parent != parent)
            continue;
        const node *nd = &m->nodes[k];
        words_until(w, w->a0[k]);
        gap_before(w, w->a0[k]);
        /* A marker that followed whitespace, put after an output word: a space between. */
        if (nd->marker && nd->open_at > 0 && is_space((unsigned char)m->html[nd->open_at - 1]) &&
            w->next_word > 0 && w->next_word == w->a0[k] && !is_space((unsigned char)w->o[-1]) &&
            (w->o[-1] != '>' || after_end_tag(w)))
            put(w, " ", 1);
        put(w, m->html + nd->open_at, nd->open_len);
        if (nd->marker) {
            /* A marker that stood before whitespace keeps a space before the word that
             * follows it here (else "@bob</span>schaut"), when that word's gap is used. */
            size_t after = nd->open_at + nd->open_len;
            int a = w->a0[k];
            if ((is_space((unsigned char)m->html[after]) || !m->html[after]) && a == w->next_word && a < w->n_out && w->gs[a] == w->ws[a])
                put(w, " ", 1);
            continue;
        }
        emit(w, k, w->a1[k]);
        if (nd->close_len) {
            put(w, m->html + nd->close_at, nd->close_len);
        } else {
            put(w, "</", 2);
            put(w, nd->name, strlen(nd->name));
            put(w, ">", 1);
        }
    }
    words_until(w, end);
}

char *mt_markup_restore(const mt_markup *m, const char *tr, const int (*align)[2], int n_align)
{
    size_t tl = strlen(tr);
    writer w = {.m = m, .tr = tr};
    for (size_t i = 0; i < tl; i++)
        w.n_out += !is_space((unsigned char)tr[i]) && (i == 0 || is_space((unsigned char)tr[i - 1]));
    w.ws = malloc(sizeof *w.ws * (size_t)(w.n_out + 1));
    w.we = malloc(sizeof *w.we * (size_t)(w.n_out + 1));
    w.gs = malloc(sizeof *w.gs * (size_t)(w.n_out + 1));
    w.a0 = malloc(sizeof *w.a0 * (size_t)(m->n + 1));
    w.a1 = malloc(sizeof *w.a1 * (size_t)(m->n + 1));
    size_t cap = 5 * tl + strlen(m->html) + 24 * (size_t)m->n + 16; /* escaping at most x5 */
    char *out = malloc(cap);
    if (!w.ws || !w.we || !w.gs || !w.a0 || !w.a1 || !out) {
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
    /* Output ranges in document order: parents come before their children. */
    int *last_end = malloc(sizeof *last_end * (size_t)(m->n + 1)); /* per parent+1: end of the last child */
    if (!last_end) {
        free(out);
        out = NULL;
        goto done;
    }
    for (int k = 0; k <= m->n; k++)
        last_end[k] = 0;
    last_end[0] = 0;
    for (int k = 0; k < m->n; k++) {
        const node *nd = &m->nodes[k];
        int p0 = nd->parent < 0 ? 0 : w.a0[nd->parent], p1 = nd->parent < 0 ? w.n_out : w.a1[nd->parent];
        int lo = -1, hi = -1, after = -1;
        for (int a = 0; a < n_align; a++) {
            int s = align[a][0], t = align[a][1];
            if (t < 0 || t >= w.n_out)
                continue;
            if (!nd->marker && s >= nd->w0 && s < nd->w1) {
                lo = lo < 0 || t < lo ? t : lo;
                hi = t + 1 > hi ? t + 1 : hi;
            }
            if (s == nd->w0 - 1 && t + 1 > after)
                after = t + 1;
        }
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
    }
    free(last_end);
    w.o = w.o0 = out;
    emit(&w, -1, w.n_out);
    if (w.n_out > 0)
        put_escaped(&w, tr + w.we[w.n_out - 1], tl - w.we[w.n_out - 1]);
    else
        put_escaped(&w, tr, tl);
    *w.o = 0;
done:
    free(w.ws);
    free(w.we);
    free(w.gs);
    free(w.a0);
    free(w.a1);
    return out;
}
