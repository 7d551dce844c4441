/* segment.c: cuts a text into the pieces that are translated one by one.
 *
 * Lines are kept exactly: each newline (and any whitespace at a line's ends, and between
 * sentences) is a verbatim segment. Inside a line, a sentence ends after . ! ? or an
 * ellipsis (plus closing quotes or brackets) when whitespace and a plausible sentence
 * start follow, unless the period belongs to a known abbreviation, an initial ("J.") or a
 * day-of-month ordinal ("3."); CJK full stops end a sentence even without a space.
 * Decimals ("3.5") never split because no whitespace follows the period. A sentence that
 * still encodes to more tokens than allowed is cut again at the safest boundary nearest
 * its middle: after ; or :, else after a comma, else at a space, else between characters.
 * Acronyms written with periods ("U.S.A.", "E.S.E.") do not end a sentence either. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include <stdint.h>

static const char *const abbreviations[] = {
    "Mr", "Mrs", "Ms", "Dr", "Prof", "Sr", "Jr", "St", "Mt", "vs", "etc", "e.g", "i.e", "cf", "approx",
    "Inc", "Ltd", "Co", "Corp", "No", "Nos", "Vol", "pp", "p", "Fig", "fig", "Jan", "Feb", "Mar", "Apr",
    "Jun", "Jul", "Aug", "Sep", "Sept", "Oct", "Nov", "Dec", "U.S", "U.K", "a.m", "p.m", "Gen", "Gov",
    "Sen", "Rep", "Rev", "Capt", "Lt", "Col", "Sgt", "Ave", "Blvd", "Rd", "dept", "est", "min", "max",
    /* German and French, for the other directions */
    "z.B", "bzw", "usw", "ca", "Nr", "Hr", "Fr", "Str", "vgl", "ggf", "evtl", "d.h", "u.a", "inkl", "bzgl",
    "Mme", "Mlle", "av", "env", "c.-à-d", "c.-a-d", "p.ex", "cf", "ex",
};

/* Abbreviations written with inner spaces: no period in them ends a sentence, whatever
 * follows ("z. B. Berlin"). The first letter may be a capital (at a sentence's start).
 * ICU's sentence break iterator (ICU 72, "de@ss=standard" with CLDR's suppressions) was
 * measured for this and not taken: it still breaks "Das ist z. | B. ein Test.", breaks
 * the ordinal in "Am 3. | Oktober", and misses the ends in "ein Test. Und" and
 * "Dr. Meier. Dann" (tests/test_translator.c keeps these). */
static const char *const spaced_abbreviations[] = {
    /* German */
    "z. B.", "d. h.", "u. a.", "o. ä.", "u. U.", "v. a.", "z. T.", "s. o.", "s. u.", "u. v. m.", "i. d. R.",
    "a. a. O.", "m. E.", "n. Chr.", "v. Chr.", "z. Zt.", "u. Ä.", "o. g.", "z. Hd.", "i. A.", "i. V.",
    /* English */
    "e. g.", "i. e.", "a. k. a.", "N. B.",
    /* French, Spanish, Italian */
    "p. ex.", "c. -à-d.", "c. à d.", "p. ej.", "p. es.",
};

typedef struct {
    mt_segment *items;
    int count, cap;
} seg_list;

static int push(seg_list *l, size_t start, size_t len, int translate)
{
    if (!len)
        return 0;
    /* adjacent verbatim pieces merge, so a text's layout is a simple alternation */
    if (!translate && l->count && !l->items[l->count - 1].translate &&
        l->items[l->count - 1].start + l->items[l->count - 1].len == start) {
        l->items[l->count - 1].len += len;
        return 0;
    }
    if (l->count == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        mt_segment *p = realloc(l->items, sizeof *p * (size_t)cap);
        if (!p)
            return -1;
        l->items = p;
        l->cap = cap;
    }
    l->items[l->count++] = (mt_segment){start, len, translate};
    return 0;
}

/* '\n' never occurs inside a line of plain text; inside an HTML text node it is a space. */
static int is_blank(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v' || c == '\n';
}

/* Length of the UTF-8 sequence starting at s[i] if it is one of the listed code points. */
static size_t match_any(const char *s, size_t i, size_t end, const char *const *list, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        size_t len = strlen(list[k]);
        if (i + len <= end && !memcmp(s + i, list[k], len))
            return len;
    }
    return 0;
}

/* Closing quotes and brackets that may follow a sentence end: ASCII, » « (French and
 * German use both ways round), ” ’ (English), “ ‘ (German „...“ and ‚...‘). */
static const char *const closers[] = {"\"", "'", ")", "]", "\xc2\xbb", "\xc2\xab", "\xe2\x80\x9d", "\xe2\x80\x99",
                                      "\xe2\x80\x9c", "\xe2\x80\x98"};
static const char *const enders[] = {".", "!", "?", "\xe2\x80\xa6"};        /* ... and the ellipsis */
static const char *const cjk_enders[] = {"\xe3\x80\x82", "\xef\xbc\x81", "\xef\xbc\x9f"}; /* 。！？ */

#define COUNT(a) (sizeof(a) / sizeof *(a))

/* Is the period at text[dot] part of an abbreviation, an initial or an ordinal? */
static int period_is_not_an_end(const char *text, size_t line_start, size_t dot)
{
    size_t w = dot;
    while (w > line_start && !is_blank((unsigned char)text[w - 1]) && text[w - 1] != '(' && text[w - 1] != '"')
        w--;
    size_t len = dot - w;
    if (len == 0)
        return 0;
    if (len == 1 && ((text[w] >= 'A' && text[w] <= 'Z')))
        return 1; /* an initial: "J. Smith" */
    int digits = 1, initials = len >= 3;
    for (size_t i = w; i < dot; i++) {
        digits &= text[i] >= '0' && text[i] <= '9';
        /* "E.S.E" / "U.S.A": single letters joined by periods */
        int letter = (text[i] >= 'A' && text[i] <= 'Z') || (text[i] >= 'a' && text[i] <= 'z');
        initials &= (i - w) % 2 == 0 ? letter : text[i] == '.';
    }
    if (initials && len % 2 == 1)
        return 1;
    if (digits && len <= 2)
        return 1; /* "am 3. Oktober" */
    for (size_t k = 0; k < COUNT(abbreviations); k++)
        if (strlen(abbreviations[k]) == len && !memcmp(text + w, abbreviations[k], len))
            return 1;
    return 0;
}

/* Is the period at text[dot] inside a spaced abbreviation ("z. B.") of the line? */
static int in_spaced_abbreviation(const char *text, size_t line_start, size_t line_end, size_t dot)
{
    for (size_t k = 0; k < COUNT(spaced_abbreviations); k++) {
        const char *a = spaced_abbreviations[k];
        size_t len = strlen(a);
        for (size_t off = 0; off < len; off++) {
            if (a[off] != '.' || dot < line_start + off || dot - off + len > line_end)
                continue;
            size_t w = dot - off;
            if (w > line_start && !is_blank((unsigned char)text[w - 1]) && !strchr("(\"'", text[w - 1]))
                continue;
            if ((text[w] != a[0] && text[w] != (char)(a[0] ^ 0x20)) || memcmp(text + w + 1, a + 1, len - 1))
                continue;
            unsigned char after = w + len < line_end ? (unsigned char)text[w + len] : ' ';
            if (is_blank(after) || strchr(",;:)]\"'", after))
                return 1;
        }
    }
    return 0;
}

/* Can a sentence start at text[i]? Anything but a lowercase ASCII letter or continuing
 * punctuation: uppercase, digits, quotes, and non-ASCII letters whose case we cannot
 * tell cheaply (a wrong split there costs little). */
static int starts_sentence(const char *text, size_t i, size_t end)
{
    if (i >= end)
        return 0;
    unsigned char c = (unsigned char)text[i];
    if (c >= 'a' && c <= 'z')
        return 0;
    return !strchr(",;:)]}-", c);
}

/* Appends the sentences of text[start, end) (a trimmed, non-empty line part). */
static int split_sentences(const char *text, size_t start, size_t end, seg_list *out)
{
    size_t sent = start, i = start;
    while (i < end) {
        size_t n = match_any(text, i, end, cjk_enders, COUNT(cjk_enders));
        if (n) {
            size_t j = i + n;
            size_t c;
            while ((c = match_any(text, j, end, closers, COUNT(closers))))
                j += c;
            size_t k = j;
            while (k < end && is_blank((unsigned char)text[k]))
                k++;
            if (k < end) {
                if (push(out, sent, j - sent, 1) || push(out, j, k - j, 0))
                    return -1;
                sent = k;
            }
            i = k > j ? k : j;
            continue;
        }
        n = match_any(text, i, end, enders, COUNT(enders));
        if (!n) {
            i++;
            continue;
        }
        size_t j = i + n, c;
        while ((c = match_any(text, j, end, enders, COUNT(enders))))
            j += c;
        while ((c = match_any(text, j, end, closers, COUNT(closers))))
            j += c;
        size_t k = j;
        while (k < end && is_blank((unsigned char)text[k]))
            k++;
        /* French spacing, "Viens. » Puis": a » between spaces closes the quote (German
         * opens with » but never puts a space after it) */
        if (k > j && k + 2 <= end && memcmp(text + k, "\xc2\xbb", 2) == 0 &&
            (k + 2 == end || is_blank((unsigned char)text[k + 2]))) {
            j = k + 2;
            for (k = j; k < end && is_blank((unsigned char)text[k]);)
                k++;
        }
        int boundary = k > j && starts_sentence(text, k, end);
        if (boundary && text[i] == '.' && j == i + 1 &&
            (period_is_not_an_end(text, start, i) || in_spaced_abbreviation(text, start, end, i)))
            boundary = 0;
        if (boundary) {
            if (push(out, sent, j - sent, 1) || push(out, j, k - j, 0))
                return -1;
            sent = k;
        }
        i = k > j ? k : j;
    }
    return push(out, sent, end - sent, 1);
}

/* Best place to cut text[start, end) near its middle; returns the cut (end of the first
 * part) and sets *resume to where the second part starts (after any blanks). */
static size_t find_cut(const char *text, size_t start, size_t end, size_t *resume)
{
    size_t mid = start + (end - start) / 2, best = 0, best_dist = (size_t)-1;
    static const char *const classes[] = {";:", ",", " \t"};
    for (size_t cls = 0; cls < COUNT(classes) && !best; cls++) {
        for (size_t i = start + 1; i + 1 < end; i++) {
            if (!strchr(classes[cls], text[i]) || !text[i])
                continue;
            size_t cut = cls == 2 ? i : i + 1; /* punctuation stays with the first part */
            size_t dist = cut > mid ? cut - mid : mid - cut;
            if (dist < best_dist && cut > start && cut < end) {
                best = cut;
                best_dist = dist;
            }
        }
    }
    if (!best) { /* no space at all (a URL, CJK): cut between UTF-8 characters */
        best = mid;
        while (best > start + 1 && ((unsigned char)text[best] & 0xC0) == 0x80)
            best--;
        if (best <= start)
            best = start + 1;
        while (best < end && ((unsigned char)text[best] & 0xC0) == 0x80)
            best++;
    }
    size_t r = best;
    while (r < end && is_blank((unsigned char)text[r]))
        r++;
    *resume = r;
    return best;
}

/* Re-cuts the translatable segment at index `at` until every piece fits in max_tokens. */
static int enforce_length(const mt_translator *tr, const char *text, seg_list *l, int at, int max_tokens,
                          char *err, size_t errlen)
{
    mt_segment s = l->items[at];
    int n = mt_tokenizer_encode(tr->tok, text + s.start, s.len, NULL, 0, err, errlen);
    if (n < 0)
        return -1;
    int extra = tr->target_token >= 0 ? 1 : 0;
    if (n + extra <= max_tokens || s.len < 2)
        return 0;
    size_t resume, cut = find_cut(text, s.start, s.start + s.len, &resume);
    /* replace item `at` by: first part, blanks, second part (then fix both recursively) */
    seg_list tail = {0};
    if (push(&tail, cut, resume - cut, 0) || push(&tail, resume, s.start + s.len - resume, 1)) {
        free(tail.items);
        return -1;
    }
    l->items[at].len = cut - s.start;
    int extra_items = tail.count;
    for (int k = 0; k < extra_items; k++) {
        if (push(l, 0, 1, 1)) { /* grow by one slot; overwritten below */
            free(tail.items);
            return -1;
        }
    }
    memmove(&l->items[at + 1 + extra_items], &l->items[at + 1],
            sizeof *l->items * (size_t)(l->count - extra_items - at - 1));
    memcpy(&l->items[at + 1], tail.items, sizeof *tail.items * (size_t)extra_items);
    free(tail.items);
    int second = at + extra_items; /* the second part is the last inserted item */
    if (enforce_length(tr, text, l, second, max_tokens, err, errlen))
        return -1;
    return enforce_length(tr, text, l, at, max_tokens, err, errlen);
}

/* Cuts every translatable segment that is still too long, and hands the list over. */
static int finish(const mt_translator *tr, const char *text, seg_list *l, int max_tokens, mt_segment **out,
                  char *err, size_t errlen)
{
    for (int i = 0; i < l->count; i++) {
        if (l->items[i].translate && enforce_length(tr, text, l, i, max_tokens, err, errlen)) {
            free(l->items);
            return -1;
        }
    }
    *out = l->items;
    return l->count;
}

int mt_translator_segment(const mt_translator *tr, const char *text, size_t len, int max_tokens,
                          mt_segment **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!mt_utf8_valid(text, len, err, errlen))
        return -1;
    seg_list l = {0};
    size_t line = 0;
    while (line <= len) {
        size_t nl = line;
        while (nl < len && text[nl] != '\n')
            nl++;
        size_t a = line, b = nl;
        while (a < b && is_blank((unsigned char)text[a]))
            a++;
        while (b > a && is_blank((unsigned char)text[b - 1]))
            b--;
        if (push(&l, line, a - line, 0) || (b > a && split_sentences(text, a, b, &l)) ||
            push(&l, b, nl - b, 0) || (nl < len && push(&l, nl, 1, 0))) {
            free(l.items);
            mt_error(-1, err, errlen, "out of memory");
            return -1;
        }
        line = nl + 1;
    }
    return finish(tr, text, &l, max_tokens, out, err, errlen);
}

int mt_translator_segment_whole(const mt_translator *tr, char *text, size_t len, int max_tokens,
                                mt_segment **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!mt_utf8_valid(text, len, err, errlen))
        return -1;
    size_t a = 0, b = len;
    while (a < b && is_blank((unsigned char)text[a]))
        a++;
    while (b > a && is_blank((unsigned char)text[b - 1]))
        b--;
    if (b > a) {
        /* measured as it will be encoded: line breaks as spaces */
        char *body = malloc(b - a);
        if (!body) {
            mt_error(-1, err, errlen, "out of memory");
            return -1;
        }
        for (size_t i = a; i < b; i++)
            body[i - a] = text[i] == '\n' || text[i] == '\r' ? ' ' : text[i];
        int n = mt_tokenizer_encode(tr->tok, body, b - a, NULL, 0, err, errlen);
        if (n < 0) {
            free(body);
            return -1;
        }
        if (n + (tr->target_token >= 0 ? 1 : 0) > max_tokens) {
            /* too long to be read whole: the model could not encode it */
            free(body);
            return mt_translator_segment(tr, text, len, max_tokens, out, err, errlen);
        }
        memcpy(text + a, body, b - a);
        free(body);
    }
    seg_list l = {0};
    if (push(&l, 0, a, 0) || push(&l, a, b - a, 1) || push(&l, b, len - b, 0)) {
        free(l.items);
        mt_error(-1, err, errlen, "out of memory");
        return -1;
    }
    *out = l.items;
    return l.count;
}

/* Does an HTML text node hold words? Nodes of only spaces, punctuation, symbols and
 * character references ("&nbsp;", " | ", "&raquo;") are layout, kept as they are. */
static int has_words(const char *s, size_t start, size_t end)
{
    for (size_t i = start; i < end; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '&') { /* a reference is not a word; "&" alone is punctuation */
            size_t j = i + 1;
            while (j < end && j - i <= 32 && s[j] != ';' && !is_blank((unsigned char)s[j]))
                j++;
            if (j < end && s[j] == ';') {
                i = j;
                continue;
            }
        }
        if ((c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'))
            return 1;
        /* non-ASCII: letters, except U+00A0..U+00BF (C2 A0..BF) and U+2000..U+20FF
         * (E2 80..83 xx), which are spaces, punctuation and symbols */
        if (c >= 0xC3 && !(c == 0xE2 && i + 1 < end && ((unsigned char)s[i + 1] & 0xFC) == 0x80))
            return 1;
    }
    return 0;
}

int mt_translator_segment_html(const mt_translator *tr, const char *html, size_t len, int max_tokens,
                               mt_segment **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!mt_utf8_valid(html, len, err, errlen))
        return -1;
    seg_list l = {0};
    int failed = 0;
    for (size_t i = 0, node = 0; i <= len && !failed; i++) {
        size_t markup = i < len && html[i] == '<' ? mt_html_markup_end(html, len, i) : i;
        if (i < len && markup == i)
            continue;
        /* the text node [node, i) ends here: trim it, then its sentences */
        size_t a = node, b = i;
        while (a < b && is_blank((unsigned char)html[a]))
            a++;
        while (b > a && is_blank((unsigned char)html[b - 1]))
            b--;
        int words = b > a && has_words(html, a, b);
        failed = push(&l, node, words ? a - node : i - node, 0) || (words && split_sentences(html, a, b, &l)) ||
                 (words && push(&l, b, i - b, 0)) || push(&l, i, markup - i, 0);
        node = markup;
        i = markup - 1 + (markup == i); /* the loop's i++ moves to markup's end */
    }
    if (failed) {
        free(l.items);
        mt_error(-1, err, errlen, "out of memory");
        return -1;
    }
    return finish(tr, html, &l, max_tokens, out, err, errlen);
}

int mt_utf8_valid(const char *s, size_t len, char *err, size_t errlen)
{
    size_t bad;
    if (mt_utf8_check(s, len, &bad))
        return 1;
    mt_error(0, err, errlen, "invalid UTF-8 at byte %zu", bad);
    return 0;
}
