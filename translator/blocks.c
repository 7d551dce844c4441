/* blocks.c: what the service's HTML and protection pipelines need around markup.c and
 * protect.c: an HTML text cut into blocks (the inline content between block-level tags,
 * translated whole), protected spans of a block wrapped as translate="no" elements so
 * markup.c keeps them as markers, and the word index of each token (alignments are over
 * whitespace-separated words). Pure functions: callable from any thread. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"
#include "protect.h"
#include "spans.h"
#include "strbuf.h"

/* Block-level elements: their tags end one block and start the next. */
static int is_block_name(const char *s, size_t n)
{
    static const char *const names[] = {
        "p",      "div",     "li",     "ul",      "ol",         "dl",     "dt",      "dd",       "h1",
        "h2",     "h3",      "h4",     "h5",      "h6",         "table",  "thead",   "tbody",    "tfoot",
        "tr",     "td",      "th",     "caption", "blockquote", "pre",    "section", "article",  "header",
        "footer", "nav",     "aside",  "main",    "figure",     "figcaption", "address", "details", "summary",
        "form",   "fieldset", "legend", "hr",     "body",       "html",   "head",    "title",    "option",
        "label",  "button",  "select",
    };
    for (size_t k = 0; k < sizeof names / sizeof *names; k++)
        if (strlen(names[k]) == n && strncasecmp(s, names[k], n) == 0)
            return 1;
    return 0;
}

/* Name of the tag at s[i] ('<'): its start and length (0 for comments and the like). */
static size_t tag_name(const char *s, size_t len, size_t i, size_t *start)
{
    size_t k = i + 1;
    if (k < len && s[k] == '/')
        k++;
    *start = k;
    /* html.c's name characters, so that "<a.b>" or "<p:x>" is not read as <a> or <p> */
    while (k < len && (isalnum((unsigned char)s[k]) || s[k] == '-' || s[k] == ':' || s[k] == '_' || s[k] == '.'))
        k++;
    return k - *start;
}

/* 1 when the block has a word to translate: a letter or digit outside markup (a no-break
 * space, "|" or "&nbsp;" alone stays verbatim, as text nodes without words always did). */
static int has_words(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '<') {
            size_t e = mt_html_markup_end(s, n, i);
            i = (e > i ? e : i + 1) - 1;
        } else if (c == '&') {
            if ((n - i >= 6 && !strncmp(s + i, "&nbsp;", 6)) || (n - i >= 6 && !strncmp(s + i, "&#160;", 6)))
                i += 5;
            else if (n - i > 2 && isalnum((unsigned char)s[i + 1]))
                return 1;
        } else if (c == 0xC2 && i + 1 < n && (unsigned char)s[i + 1] == 0xA0) {
            i++;
        } else if (isalnum(c) || c >= 0x80) {
            return 1;
        }
    }
    return 0;
}

int mt_html_block_split(const char *s, size_t len, mt_segment **out)
{
    size_t cap = 16, n = 0, block = 0;
    mt_segment *seg = malloc(sizeof *seg * cap);
    if (!seg)
        return -1;
#define PUSH(a, b, tr)                                                                                   \
    do {                                                                                                 \
        if ((b) > (a)) {                                                                                 \
            if (n + 1 > cap) {                                                                           \
                mt_segment *g = realloc(seg, sizeof *seg * (cap *= 2));                                  \
                if (!g) {                                                                                \
                    free(seg);                                                                           \
                    return -1;                                                                           \
                }                                                                                        \
                seg = g;                                                                                 \
            }                                                                                            \
            seg[n++] = (mt_segment){(a), (b) - (a), (tr)};                                               \
        }                                                                                                \
    } while (0)
    for (size_t i = 0; i < len;) {
        if (s[i] != '<') {
            i++;
            continue;
        }
        size_t end = mt_html_markup_end(s, len, i), ns;
        if (end <= i)
            end = i + 1;
        size_t nl = tag_name(s, len, i, &ns);
        if (nl && is_block_name(s + ns, nl)) {
            PUSH(block, i, has_words(s + block, i - block));
            PUSH(i, end, 0);
            block = end;
        }
        i = end;
    }
    PUSH(block, len, has_words(s + block, len - block));
#undef PUSH
    *out = seg;
    return (int)n;
}

/* The text of an element's content: tags dropped, references decoded, trimmed. */
static char *element_text(const char *s, size_t len)
{
    char *raw = malloc(len + 1);
    size_t n = 0;
    if (!raw)
        return NULL;
    for (size_t i = 0; i < len; i++)
        if (s[i] == '<') {
            while (i < len && s[i] != '>')
                i++;
        } else {
            raw[n++] = s[i];
        }
    size_t m;
    char *text = mt_html_unescape(raw, n, &m);
    free(raw);
    return text;
}

/* End of the <a> element whose start tag ends at `from` (just after its end tag; *close:
 * where that tag starts), or 0 when it is not closed or holds another <a> start tag (links
 * do not nest; looking no further keeps the scans of successive anchors apart, so the
 * work stays linear). Its end tag is any that html.c reads as one: "</a>", "</A >",
 * "</a/>", "</a x>"; markup.c closes the link there, so the wrapper must end there too. */
static size_t anchor_end(const char *s, size_t len, size_t from, size_t *close)
{
    for (size_t k = from; k + 1 < len;) {
        size_t e = s[k] == '<' ? mt_html_tag_end(s, len, k) : k; /* tags as html.c reads them */
        if (e <= k) {
            k++;
            continue;
        }
        size_t ns, nl = tag_name(s, len, k, &ns);
        if (nl == 1 && (s[ns] == 'a' || s[ns] == 'A')) {
            if (s[k + 1] == '/') {
                *close = k;
                return e;
            }
            return 0;
        }
        k = e;
    }
    return 0;
}

/* 1 when text is one protected span and nothing else (a hashtag or URL link). */
static int wholly_protected(const char *text, unsigned kinds, const mt_span_spells *sp)
{
    size_t n = strlen(text), a = 0;
    while (a < n && isspace((unsigned char)text[a]))
        a++;
    while (n > a && isspace((unsigned char)text[n - 1]))
        n--;
    mt_protect *p = mt_protect_create_with(text + a, n - a, kinds, sp->fn, sp->ctx);
    int whole = p && mt_protect_count(p) == 1 && mt_protect_span_at(p, 0)->start == 0 &&
                mt_protect_span_at(p, 0)->len == n - a;
    mt_protect_free(p);
    return whole;
}

#define KEEP_OPEN MT_HTML_KEEP_OPEN
#define KEEP_CLOSE MT_HTML_KEEP_CLOSE

/* Length of the emoji sequence at s[i] (pictographs, with their variation selectors,
 * skin tones and zero-width joins), 0 when none starts there. Models read emoji as <unk>
 * and drop them, so a status keeps its own. */
static size_t emoji_len(const char *s, size_t n, size_t i)
{
    size_t k = i, len = 0;
    for (;;) {
        uint32_t cp;
        size_t l = (size_t)mt_utf8_len(s + k, n - k, &cp);
        int pict = l && ((cp >= 0x1F000 && cp <= 0x1FAFF) || (cp >= 0x2600 && cp <= 0x27BF));
        if (!pict)
            return len;
        k += l;
        size_t m;
        while (k < n && (m = (size_t)mt_utf8_len(s + k, n - k, &cp)) && (cp == 0xFE0F || (cp >= 0x1F3FB && cp <= 0x1F3FF)))
            k += m;
        len = k - i;
        if (k < n && (m = (size_t)mt_utf8_len(s + k, n - k, &cp)) && cp == 0x200D)
            k += m; /* joined to the next pictograph */
        else
            return len;
    }
}

static int put_kept(mt_strbuf *b, const char *s, size_t n)
{
    return mt_strbuf_put(b, KEEP_OPEN, strlen(KEEP_OPEN)) || mt_strbuf_put(b, s, n) ||
           mt_strbuf_put(b, KEEP_CLOSE, strlen(KEEP_CLOSE));
}

/* s[a, e) with its emoji wrapped. */
static int wrap_emoji(mt_strbuf *b, const char *s, size_t a, size_t e)
{
    size_t at = a;
    for (size_t i = a; i < e; i++) {
        if ((unsigned char)s[i] < 0x80)
            continue;
        size_t l = emoji_len(s, e, i);
        if (!l)
            continue;
        if (mt_strbuf_put(b, s + at, i - at) || put_kept(b, s + i, l))
            return -1;
        i += l - 1;
        at = i + 1;
    }
    return mt_strbuf_put(b, s + at, e - at);
}

/* Protected spans (and emoji) of one text run, wrapped. */
static int wrap_text(mt_strbuf *b, const char *s, size_t n, unsigned kinds, const mt_span_spells *sp)
{
    mt_protect *p = mt_protect_create_with(s, n, kinds, sp->fn, sp->ctx);
    if (!p)
        return -1;
    size_t at = 0;
    int rc = 0;
    for (int k = 0; !rc && k < mt_protect_count(p); k++) {
        const mt_protect_span *sp = mt_protect_span_at(p, k);
        rc = wrap_emoji(b, s, at, sp->start) || put_kept(b, s + sp->start, sp->len);
        at = sp->start + sp->len;
    }
    if (!rc)
        rc = wrap_emoji(b, s, at, n);
    mt_protect_free(p);
    return rc;
}

char *mt_html_wrap_protected(const char *s, size_t len, unsigned kinds)
{
    return mt_html_wrap_protected_with(s, len, kinds, NULL, NULL);
}

char *mt_html_wrap_protected_with(const char *s, size_t len, unsigned kinds, mt_protect_spells_fn fn,
                                  const void *ctx)
{
    const mt_span_spells sp = {fn, ctx};
    mt_strbuf b = {0};
    if (mt_strbuf_put(&b, "", 0))
        return NULL;
    size_t run = 0;
    for (size_t i = 0; i < len;) {
        if (s[i] != '<') {
            i++;
            continue;
        }
        if (wrap_text(&b, s + run, i - run, kinds, &sp))
            goto nomem;
        size_t end = mt_html_markup_end(s, len, i), ns;
        if (end <= i)
            end = i + 1;
        size_t nl = tag_name(s, len, i, &ns);
        if (s[i + 1] != '/' && mt_html_says_no_translate(s, len, i)) {
            /* translate="no" / class="notranslate": the element with its content, kept */
            if (put_kept(&b, s + i, end - i))
                goto nomem;
            i = run = end;
            continue;
        }
        /* a link's start tag, not a self-closed <a/>: markup.c reads that as an element of its
         * own, so taking it with the next "</a>" would wrap across the enclosing element */
        if (nl == 1 && (s[ns] == 'a' || s[ns] == 'A') && s[i + 1] != '/' && !mt_html_tag_self_closing(s, len, i)) {
            size_t close = end, ae = anchor_end(s, len, end, &close);
            char *text = ae ? element_text(s + end, close - end) : NULL;
            int whole = text && wholly_protected(text, kinds, &sp);
            free(text);
            if (whole) {
                if (mt_strbuf_put(&b, KEEP_OPEN, strlen(KEEP_OPEN)) || mt_strbuf_put(&b, s + i, ae - i) ||
                    mt_strbuf_put(&b, KEEP_CLOSE, strlen(KEEP_CLOSE)))
                    goto nomem;
                i = run = ae;
                continue;
            }
        }
        if (mt_strbuf_put(&b, s + i, end - i))
            goto nomem;
        i = run = end;
    }
    if (wrap_text(&b, s + run, len - run, kinds, &sp))
        goto nomem;
    return b.s;
nomem:
    free(b.s);
    return NULL;
}

void mt_html_unwrap_protected(char *s)
{
    size_t no = strlen(KEEP_OPEN), nc = strlen(KEEP_CLOSE), w = 0;
    for (size_t r = 0; s[r];) {
        if (strncmp(s + r, KEEP_OPEN, no) == 0)
            r += no;
        else if (strncmp(s + r, KEEP_CLOSE, nc) == 0)
            r += nc;
        else
            s[w++] = s[r++];
    }
    s[w] = 0;
}

int mt_word_map(const mt_tokenizer *tok, int target, int32_t skip_id, const int32_t *ids, int n, int *map)
{
    int w = -1, pending = 1;
    for (int i = 0; i < n; i++) {
        const char *p = target ? mt_tokenizer_target_piece(tok, ids[i]) : mt_tokenizer_source_piece(tok, ids[i]);
        size_t pl = p ? strlen(p) : 0;
        if (!p || ids[i] == skip_id || (!target && pl > 4 && p[0] == '>' && p[1] == '>' && p[pl - 1] == '<')) {
            map[i] = -1;
            continue;
        }
        if (strncmp(p, "\xe2\x96\x81", 3) == 0) {
            pending = 1;
            p += 3;
        }
        if (*p && pending) {
            w++;
            pending = 0;
        }
        map[i] = w < 0 ? 0 : w;
    }
    return w + 1;
}
