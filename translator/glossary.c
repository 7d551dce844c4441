/* glossary.c: mt_glossary, DeepL's glossary entry formats read and checked. See
 * glossary.h for the contract. */
#include "glossary.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "protect.h"
#include "utf8.h"

typedef struct {
    char *source, *target;
    int line;
} entry;

struct mt_glossary {
    int n, cap;
    entry *e;
    int *by_key; /* entry indexes sorted by key (the source's first word, first letter
                  * folded; "" for a term that starts with a non-word character) */
};

static int fail(char *err, size_t errlen, int line, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line > 0) snprintf(err, errlen, "line %d: %s", line, msg);
    else snprintf(err, errlen, "%s", msg);
    return -1;
}

/* s cut to at most cap - 1 bytes of valid UTF-8 (invalid bytes as '?'), for messages that
 * end up in JSON answers. Returns out. */
static const char *clip(const char *s, char *out, size_t cap)
{
    size_t o = 0, n = strlen(s);
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int k = mt_utf8_len(s + i, n - i, &cp);
        size_t len = k > 0 && mt_utf8_check(s + i, (size_t)k, NULL) ? (size_t)k : 1;
        if (o + len >= cap) break;
        if (k > 0 && len == (size_t)k) memcpy(out + o, s + i, len);
        else out[o] = '?';
        o += len;
        i += len;
    }
    out[o] = '\0';
    return out;
}

void mt_glossary_free(mt_glossary *g)
{
    if (!g) return;
    for (int i = 0; i < g->n; i++) free(g->e[i].source), free(g->e[i].target);
    free(g->e);
    free(g->by_key);
    free(g);
}

int mt_glossary_count(const mt_glossary *g) { return g->n; }
const char *mt_glossary_source(const mt_glossary *g, int i) { return g->e[i].source; }
const char *mt_glossary_target(const mt_glossary *g, int i) { return g->e[i].target; }

/* A term: s[0, n) with spaces trimmed, checked; a malloc'd copy or NULL with err set
 * (*oom when out of memory). */
static char *term(const char *s, size_t n, int line, const char *which, int *oom, char *err, size_t errlen)
{
    while (n && *s == ' ') s++, n--;
    while (n && s[n - 1] == ' ') n--;
    if (n == 0) {
        fail(err, errlen, line, "the %s term is empty", which);
        return NULL;
    }
    size_t bad;
    if (!mt_utf8_check(s, n, &bad)) {
        fail(err, errlen, line, "the %s term is not valid UTF-8 (byte %zu)", which, bad + 1);
        return NULL;
    }
    for (size_t i = 0; i < n;) {
        uint32_t cp = 0;
        int k = mt_utf8_len(s + i, n - i, &cp);
        /* U+FEFF too: a byte order mark starting a TSV written back would be dropped */
        if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 || cp == 0xFEFF) {
            fail(err, errlen, line, "the %s term holds the control character U+%04X", which, (unsigned)cp);
            return NULL;
        }
        i += (size_t)k;
    }
    char *d = malloc(n + 1);
    if (!d) {
        *oom = 1;
        fail(err, errlen, 0, "out of memory");
        return NULL;
    }
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

static int add(mt_glossary *g, const char *src, size_t sn, const char *tgt, size_t tn, int line, char *err,
               size_t errlen)
{
    if (g->n >= MT_GLOSSARY_MAX_ENTRIES)
        return fail(err, errlen, line, "more than %d entries", MT_GLOSSARY_MAX_ENTRIES);
    int oom = 0;
    char *s = term(src, sn, line, "source", &oom, err, errlen);
    char *t = s ? term(tgt, tn, line, "target", &oom, err, errlen) : NULL;
    if (!s || !t) {
        free(s);
        return -1;
    }
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 16;
        entry *e = realloc(g->e, (size_t)cap * sizeof *e);
        if (!e) {
            free(s), free(t);
            return fail(err, errlen, 0, "out of memory");
        }
        g->e = e;
        g->cap = cap;
    }
    g->e[g->n++] = (entry){s, t, line};
    return 0;
}

/* The end of the line starting at p (before its \n, \r\n or \r) and where the next starts. */
static const char *line_end(const char *p, const char *end, const char **next)
{
    const char *q = p;
    while (q < end && *q != '\n' && *q != '\r') q++;
    *next = q < end ? q + (*q == '\r' && q + 1 < end && q[1] == '\n' ? 2 : 1) : end;
    return q;
}

static int parse_tsv(mt_glossary *g, const char *p, const char *end, char *err, size_t errlen)
{
    for (int line = 1; p < end; line++) {
        const char *next, *q = line_end(p, end, &next);
        if (q > p) {
            const char *tab = memchr(p, '\t', (size_t)(q - p));
            if (!tab) return fail(err, errlen, line, "no tab between the source and the target term");
            if (memchr(tab + 1, '\t', (size_t)(q - tab - 1)))
                return fail(err, errlen, line, "more than one tab (an entry is \"source<TAB>target\")");
            if (add(g, p, (size_t)(tab - p), tab + 1, (size_t)(q - tab - 1), line, err, errlen)) return -1;
        }
        p = next;
    }
    return 0;
}

enum { CSV_MAX_FIELDS = 4 };

/* One CSV record from *pp (RFC 4180: quoted fields with "" for a quote); its fields as
 * malloc'd strings in f[], their count in *n. 0, or -1 with a message. */
static int csv_record(const char **pp, const char *end, int *line, char **f, size_t *flen, int *n, char *err,
                      size_t errlen)
{
    const char *p = *pp;
    *n = 0;
    for (;;) {
        if (*n == CSV_MAX_FIELDS) return fail(err, errlen, *line, "more than %d fields", CSV_MAX_FIELDS);
        size_t cap = 16, len = 0;
        char *buf = malloc(cap);
        if (!buf) return fail(err, errlen, 0, "out of memory");
        f[*n] = buf;
        flen[*n] = 0;
        (*n)++;
        int quoted = p < end && *p == '"';
        if (quoted) p++;
        for (;;) {
            if (p >= end) {
                if (quoted) return fail(err, errlen, *line, "a quoted field is not closed");
                break;
            }
            char ch = *p;
            if (quoted && ch == '"') {
                if (p + 1 < end && p[1] == '"') {
                    p += 2;
                } else {
                    p++;
                    if (p < end && *p != ',' && *p != '\n' && *p != '\r')
                        return fail(err, errlen, *line, "text after a closing quote");
                    break;
                }
            } else if (!quoted && (ch == ',' || ch == '\n' || ch == '\r')) {
                break;
            } else {
                if (quoted && ch == '\n') (*line)++;
                if (!quoted && ch == '"') return fail(err, errlen, *line, "a quote inside an unquoted field");
                p++;
            }
            if (len + 2 > cap) {
                char *b = realloc(buf, cap *= 2);
                if (!b) return fail(err, errlen, 0, "out of memory");
                f[*n - 1] = buf = b;
            }
            buf[len++] = ch;
        }
        buf[len] = '\0';
        flen[*n - 1] = len;
        if (p < end && *p == ',') {
            p++;
            continue;
        }
        const char *next;
        line_end(p, end, &next);
        *pp = next;
        return 0;
    }
}

static int parse_csv(mt_glossary *g, const char *p, const char *end, const char *source, const char *target,
                     char *err, size_t errlen)
{
    int line = 1;
    while (p < end) {
        char *f[CSV_MAX_FIELDS] = {0};
        size_t flen[CSV_MAX_FIELDS] = {0};
        int n = 0, first = line;
        int rc = csv_record(&p, end, &line, f, flen, &n, err, errlen);
        if (!rc && !(n == 1 && flen[0] == 0)) { /* an empty line is skipped */
            if (n != 2 && n != 4)
                rc = fail(err, errlen, first, "%d fields: an entry is \"source,target\" or "
                          "\"source,target,source_lang,target_lang\"", n);
            else if (n == 4 && ((source && strcasecmp(f[2], source) != 0) || (target && strcasecmp(f[3], target) != 0)))
            {
                char a[24], b[24];
                rc = fail(err, errlen, first, "languages \"%s\", \"%s\" are not the glossary's", clip(f[2], a, sizeof a),
                          clip(f[3], b, sizeof b));
            }
            else
                rc = add(g, f[0], flen[0], f[1], flen[1], first, err, errlen);
        }
        for (int i = 0; i < CSV_MAX_FIELDS; i++) free(f[i]);
        if (rc) return -1;
        line++;
    }
    return 0;
}

/* ---------------------------------------------------------------- matching */

static int word_byte(unsigned char c)
{
    return c >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/* The first character of s[0, n) folded to lower case (ASCII and Latin-1 letters) into
 * out; its length in bytes (0 for n == 0). */
static size_t fold_first(const char *s, size_t n, char out[4])
{
    if (!n) return 0;
    unsigned char c = (unsigned char)s[0];
    if (c < 0x80) {
        out[0] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
        return 1;
    }
    uint32_t cp;
    int k = mt_utf8_len(s, n, &cp);
    if (k <= 0) k = 1;
    memcpy(out, s, (size_t)k);
    /* U+00C0-U+00DE (but U+00D7) are the capitals of U+00E0-U+00FE */
    if (k == 2 && cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) out[1] = (char)(out[1] + 0x20);
    return (size_t)k;
}

/* The first letter of s (NUL-terminated) upper-cased in place, where fold_first knows it. */
static void upper_first(char *s)
{
    unsigned char c = (unsigned char)s[0];
    if (c >= 'a' && c <= 'z') s[0] = (char)(c - 32);
    else if (c == 0xC3 && (unsigned char)s[1] >= 0xA0 && (unsigned char)s[1] <= 0xBE && (unsigned char)s[1] != 0xB7)
        s[1] = (char)(s[1] - 0x20);
}

/* Length of the key of the text at s[0, n): its first word, or 0 when s starts with a
 * non-word byte. */
static size_t key_len(const char *s, size_t n)
{
    size_t k = 0;
    while (k < n && word_byte((unsigned char)s[k])) k++;
    return k;
}

/* Compares the keys of a[0, an) and b[0, bn) (first characters folded). */
static int key_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    char fa[4], fb[4];
    size_t la = fold_first(a, an, fa), lb = fold_first(b, bn, fb);
    int c = memcmp(fa, fb, la < lb ? la : lb);
    if (c || la != lb) return c ? c : (la > lb) - (la < lb);
    size_t ra = an - la, rb = bn - lb;
    c = memcmp(a + la, b + lb, ra < rb ? ra : rb);
    return c ? c : (ra > rb) - (ra < rb);
}

static int cmp_key(const void *x, const void *y, void *arg)
{
    const mt_glossary *g = arg;
    const char *a = g->e[*(const int *)x].source, *b = g->e[*(const int *)y].source;
    return key_cmp(a, key_len(a, strlen(a)), b, key_len(b, strlen(b)));
}

static int index_keys(mt_glossary *g)
{
    if (!(g->by_key = malloc((size_t)g->n * sizeof *g->by_key))) return -1;
    for (int i = 0; i < g->n; i++) g->by_key[i] = i;
    qsort_r(g->by_key, (size_t)g->n, sizeof *g->by_key, cmp_key, g);
    return 0;
}

/* The first position in by_key whose key is not below key[0, kn). */
static int key_lower_bound(const mt_glossary *g, const char *key, size_t kn)
{
    int lo = 0, hi = g->n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        const char *s = g->e[g->by_key[mid]].source;
        if (key_cmp(s, key_len(s, strlen(s)), key, kn) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Whether term t matches text s[0, n) at its start (first character folded, the rest
 * exact, a word boundary after a term that ends in a word character); *upper set when
 * the text's first letter differs from the term's. */
static int term_at(const char *t, const char *s, size_t n, int *upper)
{
    size_t tn = strlen(t);
    if (tn > n) return 0;
    char ft[4], fs[4];
    size_t lt = fold_first(t, tn, ft), ls = fold_first(s, n, fs);
    if (lt != ls || memcmp(ft, fs, lt) || memcmp(t + lt, s + lt, tn - lt)) return 0;
    if (word_byte((unsigned char)t[tn - 1]) && tn < n && word_byte((unsigned char)s[tn])) return 0;
    *upper = memcmp(t, s, lt) != 0;
    return 1;
}

struct mt_glossary_masked {
    char *text;
    int n;          /* occurrences */
    long base;      /* the first one's field number */
    char **target;  /* per occurrence: its target term, first letter already upper-cased
                     * when the occurrence's was */
    char *upper;    /* per occurrence: its first letter was upper and the term's not */
};

void mt_glossary_masked_free(mt_glossary_masked *m)
{
    if (!m) return;
    for (int i = 0; i < m->n; i++) free(m->target[i]);
    free(m->target);
    free(m->upper);
    free(m->text);
    free(m);
}

const char *mt_glossary_masked_text(const mt_glossary_masked *m) { return m->text; }
int mt_glossary_masked_count(const mt_glossary_masked *m) { return m->n; }

/* "{digits}" at s[0, n): its length, with its number in *num (0 when none). */
static size_t brace_field(const char *s, size_t n, long *num)
{
    if (n < 3 || s[0] != '{' || s[1] < '0' || s[1] > '9') return 0;
    size_t k = 1;
    long v = 0;
    while (k < n && s[k] >= '0' && s[k] <= '9' && k < 11) v = v * 10 + (s[k++] - '0');
    if (k >= n || s[k] != '}') return 0;
    *num = v;
    return k + 1;
}

mt_glossary_masked *mt_glossary_mask(const mt_glossary *g, const char *text, size_t len, int markup)
{
    mt_glossary_masked *m = calloc(1, sizeof *m);
    char *skip = calloc(len + 1, 1); /* 1: a byte no term may cover */
    mt_protect *p = mt_protect_create(text, len, MT_PROTECT_ALL);
    size_t cap = len + 16, out = 0;
    if (!m || !skip || !p || !(m->text = malloc(cap))) goto oom;
    for (int k = 0; k < mt_protect_count(p); k++) {
        const mt_protect_span *sp = mt_protect_span_at(p, k);
        memset(skip + sp->start, 1, sp->len);
    }
    long top = -1;
    for (size_t i = 0; i < len; i++) {
        long v;
        size_t f = brace_field(text + i, len - i, &v);
        if (f && v > top && v < 1000000000L) top = v; /* larger ones cannot collide */
        if (markup && (text[i] == '<' || text[i] == '&')) { /* a tag or an entity */
            const char *e = memchr(text + i, text[i] == '<' ? '>' : ';', len - i);
            size_t end = e ? (size_t)(e - text) + 1 : len;
            if (text[i] == '&' && end - i > 12) end = i + 1; /* a lone '&' */
            memset(skip + i, 1, end - i);
        }
    }
    m->base = top + 1;
    int ocap = 0;
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)text[i];
        int best = -1, best_upper = 0;
        size_t best_len = 0;
        int start_word = word_byte(c) && (i == 0 || !word_byte((unsigned char)text[i - 1]));
        if (!skip[i] && (start_word || (!word_byte(c) && c != ' '))) {
            size_t kn = start_word ? key_len(text + i, len - i) : 0;
            for (int b = key_lower_bound(g, text + i, kn); b < g->n; b++) {
                const char *t = g->e[g->by_key[b]].source;
                if (key_cmp(t, key_len(t, strlen(t)), text + i, kn) != 0) break;
                int up;
                size_t tn = strlen(t);
                if (tn > best_len && term_at(t, text + i, len - i, &up) && !memchr(skip + i, 1, tn))
                    best = g->by_key[b], best_len = tn, best_upper = up;
            }
        }
        const char *copy = text + i;
        size_t copy_len = 1;
        char field[24];
        if (best >= 0) {
            if (m->n == ocap) {
                ocap = ocap ? 2 * ocap : 8;
                char **t = realloc(m->target, (size_t)ocap * sizeof *t);
                if (t) m->target = t;
                char *u = t ? realloc(m->upper, (size_t)ocap) : NULL;
                if (!u) goto oom;
                m->upper = u;
            }
            if (!(m->target[m->n] = strdup(g->e[best].target))) goto oom;
            m->upper[m->n] = (char)best_upper;
            copy_len = (size_t)snprintf(field, sizeof field, "{%ld}", m->base + m->n);
            copy = field;
            m->n++;
            i += best_len;
        } else if (start_word) { /* no term starts inside this word */
            copy_len = key_len(text + i, len - i);
            i += copy_len;
        } else {
            i++;
        }
        if (out + copy_len + 1 > cap) {
            char *t = realloc(m->text, cap = 2 * cap + copy_len);
            if (!t) goto oom;
            m->text = t;
        }
        memcpy(m->text + out, copy, copy_len);
        out += copy_len;
    }
    m->text[out] = '\0';
    free(skip);
    mt_protect_free(p);
    return m;
oom:
    free(skip);
    mt_protect_free(p);
    mt_glossary_masked_free(m);
    return NULL;
}

/* Occurrences of term in s (first character folded, the rest exact). */
static int count_term(const char *term, const char *s)
{
    size_t tn = strlen(term), sn = strlen(s);
    char ft[4], fs[4];
    size_t lt = fold_first(term, tn, ft);
    int n = 0;
    for (size_t i = 0; lt && i + tn <= sn; i++) {
        if (fold_first(s + i, sn - i, fs) == lt && !memcmp(ft, fs, lt) && !memcmp(term + lt, s + i + lt, tn - lt)) {
            n++;
            i += tn - 1;
        }
    }
    return n;
}

int mt_glossary_masked_present(const mt_glossary_masked *m, const char *translation)
{
    for (int k = 0; k < m->n; k++) {
        int need = 0;
        for (int j = 0; j < m->n; j++) need += strcmp(m->target[j], m->target[k]) == 0;
        if (count_term(m->target[k], translation) < need) return 0;
    }
    return 1;
}

/* Bytes of s[0, n) that are spaces, opening quotes or brackets, from its start. */
static size_t opening_len(const char *s, size_t n)
{
    static const char *const quotes[] = {"\xE2\x80\x9E", "\xE2\x80\x9C", "\xE2\x80\x9D", "\xE2\x80\x9A",
                                         "\xE2\x80\x98", "\xE2\x80\x99", "\xC2\xAB", "\xC2\xBB",
                                         "\xC2\xBF", "\xC2\xA1"};
    size_t i = 0;
    while (i < n) {
        if (s[i] && strchr(" \"'([", s[i])) {
            i++;
            continue;
        }
        size_t k = 0;
        for (size_t q = 0; q < sizeof quotes / sizeof quotes[0] && !k; q++)
            if (n - i >= strlen(quotes[q]) && !memcmp(s + i, quotes[q], strlen(quotes[q]))) k = strlen(quotes[q]);
        if (!k) break;
        i += k;
    }
    return i;
}

char *mt_glossary_unmask(const mt_glossary_masked *m, const char *translation)
{
    size_t n = strlen(translation), cap = n + 1;
    for (int k = 0; k < m->n; k++) cap += strlen(m->target[k]) + 1;
    char *out = malloc(cap), *used = calloc((size_t)m->n + 1, 1);
    if (!out || !used) {
        free(out), free(used);
        return NULL;
    }
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        long v;
        size_t f = brace_field(translation + i, n - i, &v);
        if (f && v >= m->base && v - m->base < m->n) {
            int k = (int)(v - m->base);
            if (!used[k]) {
                used[k] = 1;
                /* at the start of the translation (after spaces, quotes, brackets): a
                 * capital where the source had one */
                size_t lead = opening_len(out, o);
                size_t tl = strlen(m->target[k]);
                memcpy(out + o, m->target[k], tl + 1);
                if (m->upper[k] && lead == o) upper_first(out + o);
                o += tl;
            } else if (o && out[o - 1] == ' ' && (i + f == n || strchr(" .,;:!?", translation[i + f]))) {
                o--; /* a dropped copy takes its space along */
            }
            i += f;
            continue;
        }
        out[o++] = translation[i++];
    }
    for (int k = 0; k < m->n; k++) {
        if (used[k]) continue;
        if (o && out[o - 1] != ' ') out[o++] = ' ';
        size_t tl = strlen(m->target[k]);
        memcpy(out + o, m->target[k], tl);
        o += tl;
    }
    out[o] = '\0';
    free(used);
    return out;
}

static int cmp_source(const void *a, const void *b)
{
    const entry *x = *(const entry *const *)a, *y = *(const entry *const *)b;
    int c = strcmp(x->source, y->source);
    return c ? c : (x->line > y->line) - (x->line < y->line);
}

int mt_glossary_parse(const char *text, size_t len, mt_glossary_format fmt, const char *source,
                      const char *target, mt_glossary **out, char *err, size_t errlen)
{
    *out = NULL;
    mt_glossary *g = calloc(1, sizeof *g);
    if (!g) return fail(err, errlen, 0, "out of memory");
    const char *p = text ? text : "", *end = p + (text ? len : 0);
    if (end - p >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0) p += 3; /* a byte order mark */
    int rc = fmt == MT_GLOSSARY_CSV ? parse_csv(g, p, end, source, target, err, errlen)
                                    : parse_tsv(g, p, end, err, errlen);
    if (!rc && g->n == 0) rc = fail(err, errlen, 0, "no entries");
    if (!rc) {
        /* every source term once: sorted, duplicates are neighbours */
        entry **v = malloc((size_t)g->n * sizeof *v);
        char clipped[64];
        if (!v) rc = fail(err, errlen, 0, "out of memory");
        for (int i = 0; v && i < g->n; i++) v[i] = &g->e[i];
        if (v) qsort(v, (size_t)g->n, sizeof *v, cmp_source);
        for (int i = 1; v && !rc && i < g->n; i++)
            if (strcmp(v[i - 1]->source, v[i]->source) == 0)
                rc = fail(err, errlen, v[i]->line, "the source term \"%s\" is already on line %d",
                          clip(v[i]->source, clipped, sizeof clipped), v[i - 1]->line);
        free(v);
    }
    if (!rc && index_keys(g)) rc = fail(err, errlen, 0, "out of memory");
    if (rc) {
        mt_glossary_free(g);
        return -1;
    }
    *out = g;
    return 0;
}

char *mt_glossary_tsv(const mt_glossary *g)
{
    size_t n = 1;
    for (int i = 0; i < g->n; i++) n += strlen(g->e[i].source) + strlen(g->e[i].target) + 2;
    char *out = malloc(n), *p = out;
    if (!out) return NULL;
    for (int i = 0; i < g->n; i++) p += sprintf(p, "%s\t%s\n", g->e[i].source, g->e[i].target);
    *p = '\0';
    return out;
}
