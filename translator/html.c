/* html.c: the HTML side of "format": html. A fragment is markup, kept byte for byte, and
 * text nodes, which are translated. Markup is a tag (<p>, </p>, <img .../>, quoted
 * attributes may hold '>'), a comment, a <!...> or <?...> declaration, CDATA, and
 * everything inside an element that must not be translated: the raw text of <script>,
 * <style>, <textarea> and <template>, and elements marked translate="no" or
 * class="notranslate" (HTML5 and Google's convention), nested ones included. A '<' that
 * cannot start a tag ("a < b") is text, as browsers read it. Text nodes are decoded
 * (character references) before encoding, and translations are escaped (& < >) when
 * joined, so the result is well-formed wherever the input was. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"
#include "utf8.h"

typedef enum { TAG_NONE, TAG_START, TAG_END, TAG_OTHER } tag_kind;

typedef struct {
    tag_kind kind;
    size_t end;             /* just after the markup */
    const char *name;       /* element name (start and end tags) */
    size_t name_len;
    int self_closing;       /* <br/> */
    int no_translate;       /* translate="no" or class="notranslate" */
} tag;

static int is_name_char(unsigned char c) { return isalnum(c) || c == '-' || c == ':' || c == '_' || c == '.'; }

static int name_is(const tag *t, const char *name)
{
    return t->name_len == strlen(name) && strncasecmp(t->name, name, t->name_len) == 0;
}

/* Position of `needle` at or after i, or len when absent. */
static size_t find(const char *s, size_t len, size_t i, const char *needle)
{
    size_t n = strlen(needle);
    for (; i + n <= len; i++)
        if (memcmp(s + i, needle, n) == 0)
            return i;
    return len;
}

/* Does the attribute value say "do not translate" for this attribute name? */
static int says_no_translate(const char *name, size_t name_len, const char *value, size_t value_len)
{
    if (name_len == 9 && strncasecmp(name, "translate", 9) == 0)
        return value_len == 2 && strncasecmp(value, "no", 2) == 0;
    if (name_len == 5 && strncasecmp(name, "class", 5) == 0) {
        for (size_t i = 0; i < value_len;) { /* class is a space-separated list */
            while (i < value_len && isspace((unsigned char)value[i]))
                i++;
            size_t w = i;
            while (i < value_len && !isspace((unsigned char)value[i]))
                i++;
            if (i - w == 11 && strncasecmp(value + w, "notranslate", 11) == 0)
                return 1;
        }
    }
    return 0;
}

/* Reads the markup starting at s[i] == '<'. kind TAG_NONE: it is text. */
static tag read_tag(const char *s, size_t len, size_t i)
{
    tag t = {TAG_NONE, i, NULL, 0, 0, 0};
    size_t j = i + 1;
    if (j >= len)
        return t;
    if (len - j >= 3 && memcmp(s + j, "!--", 3) == 0) {
        size_t e = find(s, len, j + 3, "-->");
        t.kind = TAG_OTHER;
        t.end = e < len ? e + 3 : len;
        return t;
    }
    if (len - j >= 8 && memcmp(s + j, "![CDATA[", 8) == 0) {
        size_t e = find(s, len, j + 8, "]]>");
        t.kind = TAG_OTHER;
        t.end = e < len ? e + 3 : len;
        return t;
    }
    if (s[j] == '!' || s[j] == '?') {
        size_t e = find(s, len, j, ">");
        t.kind = TAG_OTHER;
        t.end = e < len ? e + 1 : len;
        return t;
    }
    int closing = s[j] == '/';
    if (closing)
        j++;
    if (j >= len || !isalpha((unsigned char)s[j]))
        return t;
    t.kind = closing ? TAG_END : TAG_START;
    t.name = s + j;
    while (j < len && is_name_char((unsigned char)s[j]))
        j++;
    t.name_len = (size_t)(s + j - t.name);
    /* attributes: name[=value], the value quoted or not; stop at '>' outside quotes */
    while (j < len && s[j] != '>') {
        if (isspace((unsigned char)s[j]) || s[j] == '/') {
            t.self_closing = s[j] == '/';
            j++;
            continue;
        }
        t.self_closing = 0;
        size_t an = j;
        while (j < len && !isspace((unsigned char)s[j]) && s[j] != '=' && s[j] != '>' && s[j] != '/')
            j++;
        size_t an_len = j - an;
        if (an_len == 0) /* a stray '=' */
            an_len = 1, j++;
        while (j < len && isspace((unsigned char)s[j]))
            j++;
        if (j >= len || s[j] != '=')
            continue;
        j++;
        while (j < len && isspace((unsigned char)s[j]))
            j++;
        size_t v = j, v_len;
        if (j < len && (s[j] == '"' || s[j] == '\'')) {
            char q = s[j++];
            v = j;
            while (j < len && s[j] != q)
                j++;
            v_len = j - v;
            if (j < len)
                j++;
        } else {
            while (j < len && !isspace((unsigned char)s[j]) && s[j] != '>')
                j++;
            v_len = j - v;
        }
        if (says_no_translate(s + an, an_len, s + v, v_len))
            t.no_translate = 1;
    }
    t.end = j < len ? j + 1 : len; /* an unterminated tag runs to the end: kept verbatim */
    return t;
}

static int is_void_element(const tag *t)
{
    static const char *const names[] = {"area", "base", "br", "col", "embed", "hr", "img", "input",
                                        "link", "meta", "param", "source", "track", "wbr"};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++)
        if (name_is(t, names[k]))
            return 1;
    return 0;
}

static int is_raw_text_element(const tag *t)
{
    return name_is(t, "script") || name_is(t, "style") || name_is(t, "textarea") || name_is(t, "template");
}

/* End of the element opened by `open` (just after its end tag, or len): its content is
 * not translated. Same-named elements nested inside are counted. */
static size_t skip_element(const char *s, size_t len, const tag *open)
{
    int depth = 1;
    size_t i = open->end;
    while (i < len) {
        if (s[i] != '<') {
            i++;
            continue;
        }
        tag t = read_tag(s, len, i);
        if (t.kind == TAG_NONE) {
            i++;
            continue;
        }
        if (t.name_len == open->name_len && strncasecmp(t.name, open->name, t.name_len) == 0) {
            if (t.kind == TAG_START && !t.self_closing)
                depth++;
            else if (t.kind == TAG_END && --depth == 0)
                return t.end;
        }
        i = t.end;
    }
    return len;
}

/* Raw text (script, style ...) ends at the first "</name", whatever comes between. */
static size_t skip_raw_text(const char *s, size_t len, const tag *open)
{
    for (size_t i = open->end; i + 2 + open->name_len <= len; i++)
        if (s[i] == '<' && s[i + 1] == '/' && strncasecmp(s + i + 2, open->name, open->name_len) == 0) {
            size_t e = find(s, len, i, ">");
            return e < len ? e + 1 : len;
        }
    return len;
}

size_t mt_html_markup_end(const char *s, size_t len, size_t i)
{
    if (i >= len || s[i] != '<')
        return i;
    tag t = read_tag(s, len, i);
    if (t.kind != TAG_START || t.self_closing || is_void_element(&t))
        return t.end;
    if (is_raw_text_element(&t))
        return skip_raw_text(s, len, &t);
    if (t.no_translate)
        return skip_element(s, len, &t);
    return t.end;
}

size_t mt_html_tag_end(const char *s, size_t len, size_t i)
{
    if (i >= len || s[i] != '<')
        return i;
    tag t = read_tag(s, len, i);
    return t.kind == TAG_NONE ? i : t.end;
}

int mt_html_tag_self_closing(const char *s, size_t len, size_t i)
{
    if (i >= len || s[i] != '<')
        return 0;
    tag t = read_tag(s, len, i);
    return t.kind == TAG_START && t.self_closing;
}

int mt_html_says_no_translate(const char *s, size_t len, size_t i)
{
    if (i >= len || s[i] != '<')
        return 0;
    tag t = read_tag(s, len, i);
    return t.kind == TAG_START && t.no_translate;
}

/* ---- character references ---- */

/* HTML's names for U+00A0..U+00FF, in order; other_names has the markup and typographic
 * ones. */
static const char *const latin1_names[96] = {
    "nbsp", "iexcl", "cent", "pound", "curren", "yen", "brvbar", "sect", "uml", "copy", "ordf",
    "laquo", "not", "shy", "reg", "macr", "deg", "plusmn", "sup2", "sup3", "acute", "micro", "para",
    "middot", "cedil", "sup1", "ordm", "raquo", "frac14", "frac12", "frac34", "iquest", "Agrave",
    "Aacute", "Acirc", "Atilde", "Auml", "Aring", "AElig", "Ccedil", "Egrave", "Eacute", "Ecirc",
    "Euml", "Igrave", "Iacute", "Icirc", "Iuml", "ETH", "Ntilde", "Ograve", "Oacute", "Ocirc",
    "Otilde", "Ouml", "times", "Oslash", "Ugrave", "Uacute", "Ucirc", "Uuml", "Yacute", "THORN",
    "szlig", "agrave", "aacute", "acirc", "atilde", "auml", "aring", "aelig", "ccedil", "egrave",
    "eacute", "ecirc", "euml", "igrave", "iacute", "icirc", "iuml", "eth", "ntilde", "ograve",
    "oacute", "ocirc", "otilde", "ouml", "divide", "oslash", "ugrave", "uacute", "ucirc", "uuml",
    "yacute", "thorn", "yuml",
};

static const struct {
    const char *name;
    uint32_t cp;
} other_names[] = {
    {"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''},
    {"ndash", 0x2013}, {"mdash", 0x2014}, {"lsquo", 0x2018}, {"rsquo", 0x2019}, {"sbquo", 0x201A},
    {"ldquo", 0x201C}, {"rdquo", 0x201D}, {"bdquo", 0x201E}, {"hellip", 0x2026}, {"bull", 0x2022},
    {"euro", 0x20AC}, {"trade", 0x2122}, {"lsaquo", 0x2039}, {"rsaquo", 0x203A}, {"OElig", 0x152},
    {"oelig", 0x153}, {"thinsp", 0x2009}, {"ensp", 0x2002}, {"emsp", 0x2003}, {"zwnj", 0x200C},
    {"zwj", 0x200D}, {"dagger", 0x2020}, {"Dagger", 0x2021}, {"permil", 0x2030}, {"prime", 0x2032},
};

/* The code point named by name[0, n), or 0 when unknown. */
static uint32_t named_reference(const char *name, size_t n)
{
    for (size_t k = 0; k < 96; k++)
        if (strlen(latin1_names[k]) == n && memcmp(latin1_names[k], name, n) == 0)
            return 0xA0 + (uint32_t)k;
    for (size_t k = 0; k < sizeof other_names / sizeof *other_names; k++)
        if (strlen(other_names[k].name) == n && memcmp(other_names[k].name, name, n) == 0)
            return other_names[k].cp;
    return 0;
}

/* Decodes the reference at s[i] == '&' into out (at most 4 bytes); returns its length in
 * s, or 0 when it is not one we know (then '&' is literal text). */
static size_t decode_reference(const char *s, size_t len, size_t i, char *out, size_t *out_len)
{
    size_t j = i + 1;
    uint32_t cp = 0;
    if (j < len && s[j] == '#') {
        int hex = j + 1 < len && (s[j + 1] == 'x' || s[j + 1] == 'X');
        j += hex ? 2 : 1;
        size_t digits = j;
        while (j < len && (hex ? isxdigit((unsigned char)s[j]) : isdigit((unsigned char)s[j]))) {
            if (cp <= 0x10FFFF) /* keep reading digits, but stop growing */
                cp = cp * (hex ? 16 : 10) + (uint32_t)(isdigit((unsigned char)s[j]) ? s[j] - '0'
                                                                                      : (tolower((unsigned char)s[j]) - 'a' + 10));
            j++;
        }
        if (j == digits || j >= len || s[j] != ';')
            return 0;
        if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            cp = 0xFFFD; /* as browsers do */
    } else {
        while (j < len && j - i <= 8 && isalnum((unsigned char)s[j]))
            j++;
        if (j >= len || s[j] != ';' || !(cp = named_reference(s + i + 1, j - i - 1)))
            return 0;
    }
    *out_len = mt_utf8_put(cp, out);
    return j + 1 - i;
}

char *mt_html_unescape(const char *s, size_t len, size_t *out_len)
{
    char *out = malloc(len + 1), *p = out; /* a reference never decodes longer than itself */
    if (!out)
        return NULL;
    for (size_t i = 0; i < len;) {
        size_t n, used = s[i] == '&' ? decode_reference(s, len, i, p, &n) : 0;
        if (used) {
            p += n;
            i += used;
        } else {
            *p++ = s[i++];
        }
    }
    *p = 0;
    *out_len = (size_t)(p - out);
    return out;
}

size_t mt_html_escape(const char *s, char *out)
{
    size_t n = 0;
    for (; *s; s++) {
        const char *rep = *s == '&' ? "&amp;" : *s == '<' ? "&lt;" : *s == '>' ? "&gt;" : NULL;
        size_t l = rep ? strlen(rep) : 1;
        if (out)
            memcpy(out + n, rep ? rep : s, l);
        n += l;
    }
    return n;
}
