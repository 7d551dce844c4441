/* fuzz_markup.c: libFuzzer target for the two parsers in front of the model in the HTML
 * and text pipelines: inline HTML taken out of a block and put back (translator/markup.h)
 * and protected spans cut out of a text and put back (include/mt/protect.h).
 *
 * Input: byte 0 picks the parser (bit 0) and how the "translation" is made (markup: bit 1,
 * the plain text itself or its words reversed; protect: (byte 0 >> 1) % 3: the text the
 * model reads itself, its words reversed, or some words dropped and some repeated); byte 1 seeds the word alignment (random
 * in-range pairs, as the search gives them); the rest is the text (valid UTF-8 only, as
 * the service passes on). Checks: the output is valid UTF-8; markup: when the block is
 * well-formed, so is the output, and it has as many tags of each name, also on the
 * service's path (spans and do-not-translate elements wrapped first, which unwrapping
 * undoes); protect: every span comes back byte for byte, as often as the text had it, and
 * a translation that is the text the model read gives the text back exactly.
 * Under gcc this builds a replay tool: fuzz-markup FILE... (tests/fuzz_replay.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "markup.h"
#include "protect.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count_words(const char *s)
{
    int n = 0, in = 0;
    for (; *s; s++) {
        int space = *s == ' ' || *s == '\t' || *s == '\n' || *s == '\r';
        if (!space && !in) n++;
        in = !space;
    }
    return n;
}

/* The words of s in reverse order, joined by one space. */
static char *reversed_words(const char *s)
{
    size_t n = strlen(s);
    char *out = malloc(n + 2), *o = out;
    if (!out) abort();
    size_t end = n;
    while (end > 0) {
        while (end > 0 && strchr(" \t\n\r", s[end - 1])) end--;
        size_t start = end;
        while (start > 0 && !strchr(" \t\n\r", s[start - 1])) start--;
        if (end > start) {
            if (o != out) *o++ = ' ';
            memcpy(o, s + start, end - start);
            o += end - start;
        }
        end = start;
    }
    *o = 0;
    return out;
}

static int (*random_alignment(unsigned seed, int src_words, int tgt_words, int *n))[2]
{
    *n = src_words && tgt_words ? (int)(seed % 3) * (src_words + tgt_words) / 2 + 1 : 0;
    int (*a)[2] = malloc(sizeof *a * (size_t)(*n + 1));
    if (!a) abort();
    for (int i = 0; i < *n; i++) {
        seed = seed * 1103515245u + 12345u;
        a[i][0] = (int)((seed >> 8) % (unsigned)src_words);
        seed = seed * 1103515245u + 12345u;
        a[i][1] = (int)((seed >> 8) % (unsigned)tgt_words);
    }
    return a;
}

/* The '>' that ends the tag at p, read as html.c reads tags (HTML5): attributes are name
 * [= value], a value quoted only when a quote opens it, an unquoted one running to a
 * space or '>'; a declaration (<!...>) ends at the first '>'. Points at the NUL if none.
 * *self_closing: a '/' stands last before the '>' outside any value ("<a href=x/>" is
 * not self-closing: its '/' belongs to the unquoted value). */
static const char *tag_end_of(const char *p, int *self_closing)
{
    const char *j = p + 1;
    *self_closing = 0;
    if (*j == '!' || *j == '?') {
        const char *e = strchr(j, '>');
        return e ? e : j + strlen(j);
    }
    j += *j == '/';
    while (((*j | 32) >= 'a' && (*j | 32) <= 'z') || (*j >= '0' && *j <= '9') || (*j && strchr("-:_.", *j)))
        j++; /* the name */
    while (*j && *j != '>') {
        if (strchr(" \t\n\v\r\f/", *j)) {
            *self_closing = *j == '/';
            j++;
            continue;
        }
        *self_closing = 0;
        const char *an = j;
        while (*j && !strchr(" \t\n\v\r\f=>/", *j)) j++;
        if (j == an) j++; /* a stray '=' */
        while (*j && strchr(" \t\n\v\r\f", *j)) j++;
        if (*j != '=') continue;
        j++;
        while (*j && strchr(" \t\n\v\r\f", *j)) j++;
        if (*j == '"' || *j == '\'') {
            const char *q = strchr(j + 1, *j);
            j = q ? q + 1 : j + strlen(j);
        } else {
            while (*j && !strchr(" \t\n\v\r\f>", *j)) j++;
        }
    }
    return j;
}

/* Tags of an HTML string: 1 when every non-void element closes in order (comments,
 * declarations and processing instructions skipped); counts[] (by first letter of the
 * name) gets +1 per tag. */
static int well_formed(const char *s, long counts[26])
{
    static const char *const voids[] = {"br", "img", "wbr", "hr", "input", "meta", "link", "area",
                                        "base", "col", "embed", "source", "track", "param"};
    char stack[64][16];
    int depth = 0;
    memset(counts, 0, 26 * sizeof *counts);
    for (const char *p = s; (p = strchr(p, '<')) != NULL;) {
        if (strncmp(p, "<!--", 4) == 0 || strncmp(p, "<![CDATA[", 9) == 0) { /* as html.c reads them */
            const char *e = strstr(p + 4, p[2] == '-' ? "-->" : "]]>");
            if (!e) return 0;
            p = e + 3;
            continue;
        }
        /* as html.c reads them: '<' starts a tag before a letter, "</" before a letter, and a
         * declaration or processing instruction (<!...>, <?...>, HTML5's bogus comments) runs
         * to the first '>'; any other '<' is text */
        int letter1 = ((p[1] | 32) >= 'a' && (p[1] | 32) <= 'z');
        int letter2 = p[1] && ((p[2] | 32) >= 'a' && (p[2] | 32) <= 'z');
        if (!(letter1 || (p[1] == '/' && letter2) || p[1] == '!' || p[1] == '?')) {
            p++;
            continue;
        }
        int self_closing;
        const char *e = tag_end_of(p, &self_closing);
        if (!*e) return 0;
        int closing = p[1] == '/';
        if (p[1] == '!' || p[1] == '?') {
            p = e + 1;
            continue;
        }
        char lower[16]; /* the name as markup.c reads it: letters, digits, - : _ ., truncated */
        size_t len = 0;
        for (const char *q = p + 1 + closing; ((*q | 32) >= 'a' && (*q | 32) <= 'z') || (*q >= '0' && *q <= '9') ||
                                              *q == '-' || *q == ':' || *q == '_' || *q == '.'; q++)
            if (len + 1 < sizeof lower) lower[len++] = (char)(*q >= 'A' && *q <= 'Z' ? *q | 32 : *q);
        lower[len] = 0;
        if (lower[0] >= 'a' && lower[0] <= 'z') counts[lower[0] - 'a']++;
        int is_void = self_closing;
        for (size_t v = 0; v < sizeof voids / sizeof *voids; v++) is_void |= strcmp(lower, voids[v]) == 0;
        if (closing) {
            if (depth == 0 || strcmp(stack[depth - 1], lower) != 0) return 0;
            depth--;
        } else if (!is_void) {
            if (depth == 64) return 0;
            memcpy(stack[depth++], lower, len + 1);
        }
        p = e + 1;
    }
    return depth == 0;
}

static void check_utf8(const char *out, const char *what)
{
    size_t bad;
    if (!mt_utf8_check(out, strlen(out), &bad)) {
        fprintf(stderr, "fuzz-markup: %s output is not UTF-8 at byte %zu\n", what, bad);
        abort();
    }
}

static size_t occurrences(const char *hay, const char *needle, size_t len)
{
    size_t n = 0;
    for (const char *p = hay; (p = memmem(p, strlen(p), needle, len)) != NULL; p += len) n++;
    return n;
}

/* A stand-in for the model's tokenizer (MT_PROTECT_UNKNOWN): it cannot spell a character
 * whose first byte is 0xE2 or above (most symbols, CJK, emoji), so the fuzzer's texts
 * have unknown runs next to, inside and around the other kinds. */
static int stub_spells(const void *ctx, const char *ch, size_t n)
{
    (void)ctx;
    if (n < 1 || n > 4) abort(); /* protect.h asks about one character */
    return (unsigned char)ch[0] < 0xE2;
}

/* The service's path for an HTML block: protected spans and do-not-translate elements
 * wrapped, split, restored, unwrapped. Checks: unwrapping the wrapped block gives it back;
 * a well-formed block comes back well-formed with as many tags. */
static void fuzz_wrapped(const char *text, size_t len, int reverse, unsigned seed)
{
    char *wrapped = mt_html_wrap_protected_with(text, len, MT_PROTECT_ALL | MT_PROTECT_LONG_WORD, stub_spells, NULL);
    if (!wrapped) abort();
    char *back = strdup(wrapped);
    if (!back) abort();
    mt_html_unwrap_protected(back);
    if (strcmp(back, text) != 0 && !strstr(text, "mt-keep-7a1")) { /* the wrapper's own name is taken out */
        fprintf(stderr, "fuzz-markup: wrapping is not undone:\n%s\n%s\n", text, back);
        abort();
    }
    free(back);
    mt_markup *m = mt_markup_split(wrapped, strlen(wrapped));
    if (!m) abort();
    const char *plain = mt_markup_text(m);
    char *tr = reverse ? reversed_words(plain) : strdup(plain);
    int n;
    int (*align)[2] = random_alignment(seed, count_words(plain), count_words(tr), &n);
    char *out = mt_markup_restore(m, tr, (const int (*)[2])align, n);
    if (!out) abort();
    mt_html_unwrap_protected(out);
    check_utf8(out, "wrapped markup");
    long in_counts[26], out_counts[26];
    if (!strstr(text, "mt-keep-7a1") && well_formed(text, in_counts) &&
        (!well_formed(out, out_counts) || memcmp(in_counts, out_counts, sizeof in_counts))) {
        fprintf(stderr, "fuzz-markup: a well-formed block came back malformed or with other tags:\n%s\n", out);
        abort();
    }
    free(out);
    free(align);
    free(tr);
    mt_markup_free(m);
    free(wrapped);
}

static void fuzz_markup(const char *text, size_t len, int reverse, unsigned seed)
{
    fuzz_wrapped(text, len, reverse, seed);
    mt_markup *m = mt_markup_split(text, len);
    if (!m) abort();
    const char *plain = mt_markup_text(m);
    char *tr = reverse ? reversed_words(plain) : strdup(plain);
    int n;
    int (*align)[2] = random_alignment(seed, count_words(plain), count_words(tr), &n);
    char *out = mt_markup_restore(m, tr, (const int (*)[2])align, n);
    if (!out) abort();
    check_utf8(out, "markup");
    long in_counts[26], out_counts[26];
    if (well_formed(text, in_counts)) {
        if (!well_formed(out, out_counts)) {
            fprintf(stderr, "fuzz-markup: a well-formed block came back malformed:\n%s\n", out);
            abort();
        }
        if (memcmp(in_counts, out_counts, sizeof in_counts) != 0) {
            fprintf(stderr, "fuzz-markup: tags were lost or added:\n%s\n", out);
            abort();
        }
    }
    free(out);
    free(align);
    free(tr);
    mt_markup_free(m);
}

/* The words of s with some dropped and some repeated, as a model may do (seeded). */
static char *damaged_words(const char *s, unsigned seed)
{
    size_t n = strlen(s);
    char *out = malloc(2 * n + 2), *o = out;
    if (!out) abort();
    for (const char *p = s; *p;) {
        while (*p && strchr(" \t\n\r", *p)) p++;
        const char *e = p;
        while (*e && !strchr(" \t\n\r", *e)) e++;
        if (e == p) break;
        seed = seed * 1103515245u + 12345u;
        int copies = (seed >> 16) % 5 == 0 ? 0 : (seed >> 16) % 5 == 1 ? 2 : 1;
        for (int c = 0; c < copies; c++) {
            if (o != out) *o++ = ' ';
            memcpy(o, p, (size_t)(e - p));
            o += e - p;
        }
        p = e;
    }
    *o = 0;
    return out;
}

static void fuzz_protect(const char *text, size_t len, int mode, unsigned seed)
{
    mt_protect *p = mt_protect_create_with(text, len, MT_PROTECT_ALL, stub_spells, NULL);
    if (!p) abort();
    const char *cut = mt_protect_text(p);
    char *tr = mode == 1 ? reversed_words(cut) : mode == 2 ? damaged_words(cut, seed) : strdup(cut);
    int n;
    int (*align)[2] = random_alignment(seed, count_words(cut), count_words(tr), &n);
    char *out = mt_protect_restore(p, tr, (const int (*)[2])align, n);
    if (!out) abort();
    check_utf8(out, "protect");
    if (mode == 0 && strcmp(out, text) != 0) { /* the model copied the text: it comes back */
        fprintf(stderr, "fuzz-markup: '%s' sent as '%s' came back as '%s'\n", text, cut, out);
        abort();
    }
    for (int i = 0; i < mt_protect_count(p); i++) {
        const mt_protect_span *s = mt_protect_span_at(p, i);
        if (s->start + s->len > len) abort();
        if (s->kind == MT_PROTECT_UNKNOWN) /* whole characters the stub cannot spell */
            for (size_t k = s->start; k < s->start + s->len; k++)
                if (((unsigned char)text[k] & 0xC0) != 0x80 && (unsigned char)text[k] < 0xE2) {
                    fprintf(stderr, "fuzz-markup: unknown span '%.*s' holds a spelled character\n", (int)s->len,
                            text + s->start);
                    abort();
                }
        size_t same = 0; /* spans with these very bytes */
        for (int k = 0; k < mt_protect_count(p); k++) {
            const mt_protect_span *o = mt_protect_span_at(p, k);
            same += o->len == s->len && memcmp(text + o->start, text + s->start, s->len) == 0;
        }
        if (occurrences(out, text + s->start, s->len) < same) {
            fprintf(stderr, "fuzz-markup: span '%.*s' lost in '%s'\n", (int)s->len, text + s->start, out);
            abort();
        }
    }
    free(out);
    free(align);
    free(tr);
    mt_protect_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || size > 1 << 16) return 0;
    size_t len = size - 2;
    char *text = malloc(len + 1);
    if (!text) abort();
    memcpy(text, data + 2, len);
    text[len] = 0;
    size_t bad;
    if (strlen(text) == len && mt_utf8_check(text, len, &bad)) {
        if (data[0] & 1) fuzz_protect(text, len, (data[0] >> 1) % 3, data[1]);
        else fuzz_markup(text, len, data[0] & 2, data[1]);
    }
    free(text);
    return 0;
}

#include "fuzz_replay.h"
