/* protect.c: finding the spans that must not be translated, cutting them out and putting
 * them back (protect.h). Matching is hand-written over bytes (no regex engine) because
 * each rule needs its own word-boundary and trailing-punctuation handling. */
#include "protect.h"

#include <stdlib.h>
#include <string.h>

struct mt_protect {
    const char *orig; /* copy of the original text */
    char *cut;
    mt_protect_span *spans;
    int n;
};

static int is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
static int is_alnum(unsigned char c) { return (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z'); }
/* Word characters: ASCII letters and digits, '_' and any non-ASCII UTF-8 byte (letters of
 * other scripts; emoji are rare inside tags and harmless to include). */
static int is_word(unsigned char c) { return is_alnum(c) || c == '_' || c >= 0x80; }

/* URL: scheme:// or www. then non-space bytes; trailing .,;:!?'" and unbalanced )]} cut. */
static size_t match_url(const char *s, size_t i, size_t n)
{
    static const char *const starts[] = {"https://", "http://", "ftp://", "www."};
    size_t j = 0;
    if (i > 0 && is_word((unsigned char)s[i - 1]))
        return 0;
    for (size_t k = 0; k < sizeof starts / sizeof *starts && !j; k++) {
        size_t l = strlen(starts[k]);
        if (i + l < n && !strncmp(s + i, starts[k], l) && !is_space((unsigned char)s[i + l]))
            j = i + l;
    }
    if (!j)
        return 0;
    while (j < n && !is_space((unsigned char)s[j]) && s[j] != '<' && s[j] != '"')
        j++;
    for (;;) {
        char c = s[j - 1];
        if (strchr(".,;:!?'", c)) {
            j--;
            continue;
        }
        char open = c == ')' ? '(' : c == ']' ? '[' : c == '}' ? '{' : 0;
        if (open) {
            int depth = 0;
            for (size_t k = i; k < j; k++)
                depth += s[k] == open ? 1 : s[k] == c ? -1 : 0;
            if (depth < 0) {
                j--;
                continue;
            }
        }
        break;
    }
    return j - i;
}

/* domain.tld starting at j: labels of alnum/-, at least one dot, a letter TLD of >= 2. */
static size_t match_domain(const char *s, size_t j, size_t n)
{
    size_t k = j, last_dot = 0;
    while (k < n && (is_alnum((unsigned char)s[k]) || s[k] == '-' || (s[k] == '.' && k > j && s[k - 1] != '.'))) {
        if (s[k] == '.')
            last_dot = k;
        k++;
    }
    while (k > j && (s[k - 1] == '.' || s[k - 1] == '-')) /* sentence-final dot */
        k--;
    while (last_dot && last_dot >= k)
        for (last_dot--; last_dot > j && s[last_dot] != '.'; last_dot--)
            ;
    if (last_dot <= j || s[last_dot] != '.')
        return 0;
    if (!last_dot || last_dot >= k)
        return 0;
    size_t tld = 0;
    for (size_t q = last_dot + 1; q < k; q++) {
        if (!((s[q] | 32) >= 'a' && (s[q] | 32) <= 'z'))
            return 0;
        tld++;
    }
    return tld >= 2 ? k - j : 0;
}

static size_t match_email(const char *s, size_t i, size_t n)
{
    if (i > 0 && (is_alnum((unsigned char)s[i - 1]) || strchr("._%+-", s[i - 1])))
        return 0;
    size_t j = i;
    while (j < n && (is_alnum((unsigned char)s[j]) || strchr("._%+-", s[j])) && s[j])
        j++;
    if (j == i || j >= n || s[j] != '@')
        return 0;
    size_t d = match_domain(s, j + 1, n);
    return d ? j + 1 + d - i : 0;
}

static size_t match_mention(const char *s, size_t i, size_t n)
{
    if (s[i] != '@' || (i > 0 && (is_word((unsigned char)s[i - 1]) || s[i - 1] == '@')))
        return 0;
    size_t j = i + 1;
    while (j < n && (is_alnum((unsigned char)s[j]) || s[j] == '_' || (s[j] == '.' && j + 1 < n && is_alnum((unsigned char)s[j + 1]))))
        j++;
    if (j == i + 1)
        return 0;
    if (j < n && s[j] == '@') { /* @user@instance.tld */
        size_t d = match_domain(s, j + 1, n);
        if (d)
            j += 1 + d;
    }
    return j - i;
}

static size_t match_hashtag(const char *s, size_t i, size_t n)
{
    if (s[i] != '#' || (i > 0 && (is_word((unsigned char)s[i - 1]) || s[i - 1] == '#' || s[i - 1] == '&')))
        return 0;
    size_t j = i + 1;
    int letter = 0;
    while (j < n && is_word((unsigned char)s[j])) {
        letter |= !(s[j] >= '0' && s[j] <= '9');
        j++;
    }
    return letter ? j - i : 0;
}

/* printf (%[n$][flags][width][.prec][length]conv, no space flag: "50% discount" is text),
 * Python %(name)[flags]conv, and brace fields {name}, {0}, {} with an optional :spec. */
static size_t match_format(const char *s, size_t i, size_t n)
{
    size_t j = i + 1;
    if (s[i] == '{') {
        if ((i + 1 < n && s[i + 1] == '{') || (i > 0 && s[i - 1] == '{')) /* {{ escapes */
            return 0;
        while (j < n && (is_alnum((unsigned char)s[j]) || s[j] == '_' || s[j] == '.'))
            j++;
        if (j < n && s[j] == ':')
            while (j < n && s[j] != '}' && s[j] != '{' && !is_space((unsigned char)s[j]))
                j++;
        return j < n && s[j] == '}' ? j + 1 - i : 0;
    }
    if (s[i] != '%' || j >= n)
        return 0;
    if (s[j] == '(') {
        while (j < n && s[j] != ')' && !is_space((unsigned char)s[j]))
            j++;
        if (j >= n || s[j] != ')')
            return 0;
        j++;
    } else {
        size_t k = j;
        while (k < n && s[k] >= '0' && s[k] <= '9')
            k++;
        if (k > j && k < n && s[k] == '$')
            j = k + 1;
    }
    while (j < n && strchr("-+#0", s[j]) && s[j])
        j++;
    while (j < n && ((s[j] >= '0' && s[j] <= '9') || s[j] == '*'))
        j++;
    if (j < n && s[j] == '.') {
        j++;
        while (j < n && ((s[j] >= '0' && s[j] <= '9') || s[j] == '*'))
            j++;
    }
    while (j < n && strchr("hlLqjzt", s[j]) && s[j])
        j++;
    if (j < n && strchr("diouxXeEfFgGaAcsp@", s[j]) && s[j]) {
        /* "%d" at a word's start only: "100%done" is not a placeholder, "%s" and "x%s" are */
        if (j + 1 < n && is_alnum((unsigned char)s[j + 1]) && s[i + 1] != '(')
            return 0;
        return j + 1 - i;
    }
    return 0;
}

/* A whitespace-delimited run of more than MT_PROTECT_LONG_WORD_CHARS characters. */
static size_t match_long_word(const char *s, size_t i, size_t n)
{
    if (i > 0 && !is_space((unsigned char)s[i - 1]))
        return 0;
    size_t j = i, chars = 0;
    while (j < n && !is_space((unsigned char)s[j])) {
        chars += ((unsigned char)s[j] & 0xC0) != 0x80; /* count code points, not bytes */
        j++;
    }
    return chars > MT_PROTECT_LONG_WORD_CHARS ? j - i : 0;
}

mt_protect *mt_protect_create(const char *text, size_t n, unsigned kinds)
{
    mt_protect *p = calloc(1, sizeof *p);
    char *orig = malloc(n + 1), *cut = malloc(n + 1);
    mt_protect_span *spans = malloc(sizeof *spans * (n / 2 + 1)); /* a span is >= 2 bytes */
    if (!p || !orig || !cut || !spans) {
        free(p);
        free(orig);
        free(cut);
        free(spans);
        return NULL;
    }
    memcpy(orig, text, n);
    orig[n] = 0;
    p->orig = orig;
    p->cut = cut;
    p->spans = spans;
    size_t out = 0;
    int words = 0, in_word = 0;
    for (size_t i = 0; i < n;) {
        size_t len = 0;
        int kind = 0;
        static const struct {
            int kind;
            size_t (*fn)(const char *, size_t, size_t);
        } rules[] = {{MT_PROTECT_URL, match_url},         {MT_PROTECT_EMAIL, match_email},
                     {MT_PROTECT_MENTION, match_mention}, {MT_PROTECT_HASHTAG, match_hashtag},
                     {MT_PROTECT_FORMAT, match_format}, {MT_PROTECT_LONG_WORD, match_long_word}};
        for (size_t r = 0; r < sizeof rules / sizeof *rules && !len; r++)
            if (kinds & (unsigned)rules[r].kind) {
                len = rules[r].fn(orig, i, n);
                kind = rules[r].kind;
            }
        if (!len) {
            unsigned char c = (unsigned char)orig[i];
            if (!is_space(c) && !in_word)
                words++;
            in_word = !is_space(c);
            cut[out++] = orig[i++];
            continue;
        }
        mt_protect_span *sp = &spans[p->n++];
        int gl = i > 0 && !is_space((unsigned char)orig[i - 1]);
        int gr = i + len < n && !is_space((unsigned char)orig[i + len]);
        /* A span glued to a word on its left belongs to that word's side: the next word
         * counts only once real text follows. */
        *sp = (mt_protect_span){.start = i, .len = len, .kind = kind, .word = words - (gl && in_word ? 1 : 0),
                                .glued_left = gl, .glued_right = gr};
        i += len;
        /* Drop the whitespace after a span that had whitespace (or nothing) before it, so
         * "see URL now" becomes "see now". */
        if (!gl)
            while (i < n && is_space((unsigned char)orig[i]))
                i++;
        if (gl && !gr)
            in_word = 0;
    }
    /* A trailing space left by a span at the end. */
    while (out > 0 && is_space((unsigned char)cut[out - 1]) && p->n && spans[p->n - 1].start + spans[p->n - 1].len == n)
        out--;
    cut[out] = 0;
    return p;
}

void mt_protect_free(mt_protect *p)
{
    if (!p)
        return;
    free((char *)p->orig);
    free(p->cut);
    free(p->spans);
    free(p);
}

const char *mt_protect_text(const mt_protect *p) { return p->cut; }
int mt_protect_count(const mt_protect *p) { return p->n; }
const mt_protect_span *mt_protect_span_at(const mt_protect *p, int i)
{
    return i >= 0 && i < p->n ? &p->spans[i] : NULL;
}

/* Output position of span i: 2*w = before output word w, 2*w+1 = after it; -1 start,
 * 2*n_out end. A span glued to the word on its left goes after that word's output. */
static long place(const mt_protect *p, int i, const int (*align)[2], int n_align, int n_out)
{
    const mt_protect_span *sp = &p->spans[i];
    long before = -2, after = -2;
    int left = sp->glued_left ? sp->word : sp->word - 1;
    for (int a = 0; a < n_align; a++) {
        if (align[a][1] < 0 || align[a][1] >= n_out)
            continue;
        if (!sp->glued_left && align[a][0] == sp->word && (before < 0 || 2L * align[a][1] < before))
            before = 2L * align[a][1];
        if (align[a][0] == left && 2L * align[a][1] + 1 > after)
            after = 2L * align[a][1] + 1;
    }
    if (before >= 0)
        return before;
    if (after >= 0)
        return after;
    return sp->word == 0 && !sp->glued_left ? -1 : 2L * n_out;
}

typedef struct {
    const char *s;
    size_t len;
    int no_space_before, no_space_after;
    size_t gap_start, gap_len; /* for words: the translation's whitespace before it */
    int is_word;
} piece;

char *mt_protect_restore(const mt_protect *p, const char *tr, const int (*align)[2], int n_align)
{
    size_t tl = strlen(tr), total = tl + 2;
    int n_out = 0;
    for (size_t i = 0; i < tl; i++)
        n_out += !is_space((unsigned char)tr[i]) && (i == 0 || is_space((unsigned char)tr[i - 1]));
    piece *pc = malloc(sizeof *pc * (size_t)(n_out + p->n + 1));
    long *pos = malloc(sizeof *pos * (size_t)(p->n + 1));
    size_t *ws = malloc(sizeof *ws * (size_t)(n_out + 1)), *we = malloc(sizeof *we * (size_t)(n_out + 1));
    char *out = NULL;
    if (!pc || !pos || !ws || !we)
        goto done;
    for (size_t i = 0, k = 0; i < tl; i++) {
        if (!is_space((unsigned char)tr[i]) && (i == 0 || is_space((unsigned char)tr[i - 1])))
            ws[k] = i;
        if (!is_space((unsigned char)tr[i]) && (i + 1 == tl || is_space((unsigned char)tr[i + 1])))
            we[k++] = i + 1;
    }
    for (int i = 0; i < p->n; i++) {
        pos[i] = place(p, i, align, n_align, n_out);
        total += p->spans[i].len + 2;
    }
    /* Pieces in order: spans of slot -1, then per word k its slot-2k spans, the word, its
     * slot-(2k+1) spans; then the spans of the end slot. */
    int np = 0;
    for (long slot = -1; slot <= 2L * n_out; slot++) {
        for (int i = 0; i < p->n; i++)
            if (pos[i] == slot) {
                const mt_protect_span *sp = &p->spans[i];
                pc[np++] = (piece){.s = p->orig + sp->start, .len = sp->len,
                                   .no_space_before = slot % 2 != 0 && slot >= 0 && slot < 2L * n_out && sp->glued_left,
                                   .no_space_after = slot % 2 == 0 && slot < 2L * n_out && sp->glued_right};
            }
        if (slot >= 0 && slot < 2L * n_out && slot % 2 == 0) {
            size_t k = (size_t)(slot / 2), prev_end = k ? we[k - 1] : 0;
            pc[np++] = (piece){.s = tr + ws[k], .len = we[k] - ws[k], .is_word = 1,
                               .gap_start = prev_end, .gap_len = ws[k] - prev_end};
        }
    }
    out = malloc(total);
    if (!out)
        goto done;
    char *o = out;
    if (n_out == 0 && tl) { /* whitespace only: keep it, spans after it */
        memcpy(o, tr, tl);
        o += tl;
    }
    for (int i = 0; i < np; i++) {
        if (i > 0) {
            const piece *a = &pc[i - 1], *b = &pc[i];
            if (a->is_word && b->is_word) {
                memcpy(o, tr + b->gap_start, b->gap_len); /* the translation's own spacing */
                o += b->gap_len;
            } else if (!a->no_space_after && !b->no_space_before) {
                *o++ = ' ';
            }
        } else if (pc[i].is_word) {
            memcpy(o, tr, pc[i].gap_start + pc[i].gap_len); /* leading whitespace */
            o += pc[i].gap_start + pc[i].gap_len;
        }
        memcpy(o, pc[i].s, pc[i].len);
        o += pc[i].len;
    }
    if (n_out > 0 && we[n_out - 1] < tl && !(np && !pc[np - 1].is_word)) { /* trailing whitespace */
        memcpy(o, tr + we[n_out - 1], tl - we[n_out - 1]);
        o += tl - we[n_out - 1];
    }
    *o = 0;
done:
    free(pc);
    free(pos);
    free(ws);
    free(we);
    return out;
}
