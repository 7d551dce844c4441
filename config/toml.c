/* toml.c: the strict TOML subset of config files, read item by item (see toml.h). */
#include "toml.h"

#include "status.h"

#include "utf8.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mt_toml_value_clear(mt_toml_value *v)
{
    free(v->s);
    for (int i = 0; i < v->n_items; i++) free(v->items[i]);
    free(v->items);
    free(v->item_lens);
    memset(v, 0, sizeof *v);
}

const char *mt_toml_type_name(mt_toml_type t)
{
    switch (t) {
    case MT_TOML_STR: return "a string";
    case MT_TOML_INT: return "an integer";
    case MT_TOML_FLOAT: return "a float";
    case MT_TOML_BOOL: return "a boolean";
    case MT_TOML_ARRAY: return "an array";
    }
    return "?";
}

int mt_toml_fail(mt_toml_reader *r, int line, int col, const char *fmt, ...)
{
    if (r->err && r->errlen) {
        int n = snprintf(r->err, r->errlen, "%s:%d:%d: ", r->name, line, col);
        if (n >= 0 && (size_t)n < r->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return MT_ERR_INVALID;
}

static int at_end(const mt_toml_reader *r) { return r->p >= r->end; }
static int peek(const mt_toml_reader *r) { return at_end(r) ? -1 : (unsigned char)*r->p; }

static void advance(mt_toml_reader *r)
{
    if (at_end(r)) return;
    if (*r->p == '\n') {
        r->line++;
        r->col = 1;
    } else if (((unsigned char)*r->p & 0xC0) != 0x80) {
        r->col++; /* columns count characters, not UTF-8 continuation bytes */
    }
    r->p++;
}

static void skip_ws(mt_toml_reader *r)
{
    while (peek(r) == ' ' || peek(r) == '\t') advance(r);
}

/* Skips spaces and a comment; then expects end of line or end of file. */
static int expect_eol(mt_toml_reader *r)
{
    skip_ws(r);
    if (peek(r) == '#')
        while (!at_end(r) && peek(r) != '\n') advance(r);
    if (peek(r) == '\r') advance(r);
    if (at_end(r)) return 0;
    if (peek(r) != '\n') return mt_toml_fail(r, r->line, r->col, "expected end of line, found '%c'", peek(r));
    advance(r);
    return 0;
}

/* An escape sequence at '\\' in a basic string: writes its UTF-8 to out (room for 4
 * bytes) and returns the byte count, or -1 with a message. */
static int read_escape(mt_toml_reader *r, char *out)
{
    int el = r->line, ec = r->col;
    advance(r);
    int e = peek(r), hex = 0;
    static const char from[] = "btnfr\"\\", to[] = "\b\t\n\f\r\"\\";
    const char *k = e > 0 ? strchr(from, e) : NULL;
    if (k && *k) {
        advance(r);
        out[0] = to[k - from];
        return 1;
    }
    if (e == 'u') hex = 4;
    else if (e == 'U') hex = 8;
    else return mt_toml_fail(r, el, ec, "invalid escape sequence in string");
    advance(r);
    uint32_t cp = 0;
    for (int i = 0; i < hex; i++) {
        int h = peek(r);
        if (!isxdigit(h))
            return mt_toml_fail(r, el, ec, "invalid \\%c escape: expected %d hex digits", e, hex);
        cp = cp * 16 + (uint32_t)(isdigit(h) ? h - '0' : (tolower(h) - 'a' + 10));
        advance(r);
    }
    if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return mt_toml_fail(r, el, ec, "invalid code point U+%04X in escape", cp);
    return (int)mt_utf8_put(cp, out);
}

/* Reads a "basic" or 'literal' single-line string; r->p is at the quote. */
static int read_string(mt_toml_reader *r, char **out, size_t *outlen)
{
    int line = r->line, col = r->col;
    char q = *r->p;
    if (r->end - r->p >= 3 && r->p[1] == q && r->p[2] == q)
        return mt_toml_fail(r, line, col, "multi-line strings are not supported");
    advance(r);
    size_t cap = 16, n = 0;
    char *buf = malloc(cap);
    if (!buf) return mt_toml_fail(r, line, col, "out of memory");
    for (;;) {
        if (at_end(r) || peek(r) == '\n') {
            free(buf);
            return mt_toml_fail(r, line, col, "unterminated string");
        }
        if (cap - n < 8) {
            cap *= 2;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                return mt_toml_fail(r, line, col, "out of memory");
            }
            buf = nb;
        }
        int c = peek(r);
        if (c == q) {
            advance(r);
            break;
        }
        if (c < 0x20 && c != '\t') {
            free(buf);
            return mt_toml_fail(r, r->line, r->col, "control character in string");
        }
        if (c == '\\' && q == '"') {
            int w = read_escape(r, buf + n);
            if (w < 0) {
                free(buf);
                return -1;
            }
            n += (size_t)w;
            continue;
        }
        int l = mt_utf8_len(r->p, (size_t)(r->end - r->p), NULL);
        if (!l) {
            free(buf);
            return mt_toml_fail(r, r->line, r->col, "invalid UTF-8 in string");
        }
        for (int k = 0; k < l; k++) {
            buf[n++] = *r->p;
            advance(r);
        }
    }
    buf[n] = '\0';
    *out = buf;
    *outlen = n;
    return 0;
}

static int is_bare(int c) { return isalnum(c) || c == '_' || c == '-'; }

/* Reads an integer, float or boolean (a bare word up to a delimiter). */
static int read_scalar(mt_toml_reader *r, mt_toml_value *v)
{
    v->line = r->line;
    v->col = r->col;
    const char *start = r->p;
    while (!at_end(r) && (is_bare(peek(r)) || peek(r) == '.' || peek(r) == '+')) advance(r);
    size_t n = (size_t)(r->p - start);
    if (n == 0)
        return mt_toml_fail(r, v->line, v->col, "expected a value (string, number, boolean or array)");
    char word[64];
    if (n >= sizeof word) return mt_toml_fail(r, v->line, v->col, "invalid value");
    memcpy(word, start, n);
    word[n] = '\0';
    if (strcmp(word, "true") == 0 || strcmp(word, "false") == 0) {
        v->type = MT_TOML_BOOL;
        v->b = word[0] == 't';
        return 0;
    }
    /* Numbers: [+-] digits with single '_' between digits, optional fraction/exponent. */
    char clean[64];
    size_t m = 0;
    const char *s = word;
    int is_float = 0, digits = 0;
    if (*s == '+' || *s == '-') clean[m++] = *s++;
    if (!isdigit((unsigned char)*s)) goto bad;
    if (s[0] == '0' && isdigit((unsigned char)s[1])) goto bad; /* no leading zeros */
    for (; *s; s++) {
        if (isdigit((unsigned char)*s)) {
            clean[m++] = *s;
            digits++;
        } else if (*s == '_') {
            if (!isdigit((unsigned char)s[-1]) || !isdigit((unsigned char)s[1])) goto bad;
        } else if (*s == '.') {
            if (is_float || !isdigit((unsigned char)s[-1]) || !isdigit((unsigned char)s[1]))
                goto bad;
            is_float = 1;
            clean[m++] = '.';
        } else if (*s == 'e' || *s == 'E') {
            if (!isdigit((unsigned char)s[-1])) goto bad;
            is_float = 2;
            clean[m++] = 'e';
            if (s[1] == '+' || s[1] == '-') clean[m++] = *++s;
            if (!isdigit((unsigned char)s[1])) goto bad;
            for (s++; *s; s++) {
                if (!isdigit((unsigned char)*s)) goto bad;
                clean[m++] = *s;
            }
            break;
        } else {
            goto bad;
        }
    }
    clean[m] = '\0';
    if (!digits) goto bad;
    errno = 0;
    if (is_float) {
        v->type = MT_TOML_FLOAT;
        v->f = strtod(clean, NULL);
        if (errno || !isfinite(v->f)) goto bad;
    } else {
        v->type = MT_TOML_INT;
        v->i = strtoll(clean, NULL, 10);
        if (errno) return mt_toml_fail(r, v->line, v->col, "integer '%s' is too large", word);
    }
    return 0;
bad:
    return mt_toml_fail(r, v->line, v->col, "invalid value '%s'", word);
}

static int read_value(mt_toml_reader *r, mt_toml_value *v);

/* Skips whitespace, newlines and comments inside an array. */
static void skip_array_space(mt_toml_reader *r)
{
    for (;;) {
        int c = peek(r);
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            advance(r);
        } else if (c == '#') {
            while (!at_end(r) && peek(r) != '\n') advance(r);
        } else {
            return;
        }
    }
}

static int read_array(mt_toml_reader *r, mt_toml_value *v)
{
    v->type = MT_TOML_ARRAY;
    advance(r); /* [ */
    for (;;) {
        skip_array_space(r);
        if (at_end(r)) return mt_toml_fail(r, v->line, v->col, "unterminated array");
        if (peek(r) == ']') {
            advance(r);
            return 0;
        }
        mt_toml_value item = {0};
        if (read_value(r, &item)) {
            mt_toml_value_clear(&item);
            return -1;
        }
        if (item.type != MT_TOML_STR) {
            int l = item.line, c = item.col;
            mt_toml_type t = item.type;
            mt_toml_value_clear(&item);
            return mt_toml_fail(r, l, c, "arrays may only hold strings here, found %s", mt_toml_type_name(t));
        }
        char **items = realloc(v->items, (size_t)(v->n_items + 1) * sizeof *items);
        if (items) v->items = items;
        size_t *lens = realloc(v->item_lens, (size_t)(v->n_items + 1) * sizeof *lens);
        if (lens) v->item_lens = lens;
        if (!items || !lens) {
            mt_toml_value_clear(&item);
            return mt_toml_fail(r, v->line, v->col, "out of memory");
        }
        v->items[v->n_items] = item.s;
        v->item_lens[v->n_items] = item.slen;
        v->n_items++;
        item.s = NULL;
        skip_array_space(r);
        if (peek(r) == ',') {
            advance(r);
            continue;
        }
        if (peek(r) == ']') continue;
        if (at_end(r)) return mt_toml_fail(r, v->line, v->col, "unterminated array");
        return mt_toml_fail(r, r->line, r->col, "expected ',' or ']' in array");
    }
}

static int read_value(mt_toml_reader *r, mt_toml_value *v)
{
    v->line = r->line;
    v->col = r->col;
    int c = peek(r);
    if (c == '"' || c == '\'') {
        v->type = MT_TOML_STR;
        return read_string(r, &v->s, &v->slen);
    }
    if (c == '[') return read_array(r, v);
    if (c == '{') return mt_toml_fail(r, v->line, v->col, "inline tables are not supported");
    return read_scalar(r, v);
}

/* Reads a key (bare or quoted) into buf. */
static int read_key(mt_toml_reader *r, char *buf, size_t cap)
{
    int line = r->line, col = r->col;
    if (peek(r) == '"' || peek(r) == '\'') {
        char *s;
        size_t n;
        if (read_string(r, &s, &n)) return -1;
        if (n == 0 || n >= cap) {
            free(s);
            return mt_toml_fail(r, line, col, "invalid key");
        }
        memcpy(buf, s, n + 1);
        free(s);
    } else {
        size_t n = 0;
        while (!at_end(r) && is_bare(peek(r))) {
            if (n + 1 >= cap) return mt_toml_fail(r, line, col, "key too long");
            buf[n++] = *r->p;
            advance(r);
        }
        buf[n] = '\0';
        if (n == 0) {
            if (peek(r) < 0x20 || peek(r) >= 0x7f)
                return mt_toml_fail(r, line, col, "expected a key");
            return mt_toml_fail(r, line, col, "expected a key, found '%c'", peek(r));
        }
    }
    skip_ws(r);
    if (peek(r) == '.') return mt_toml_fail(r, line, col, "dotted keys are not supported");
    return 0;
}

/* A table header at '[': "[name]" or "[[name]]", then the end of the line. */
static int read_table_header(mt_toml_reader *r, mt_toml_item *it)
{
    it->line = r->line;
    it->col = r->col;
    advance(r);
    it->array = 0;
    if (peek(r) == '[') {
        it->array = 1;
        advance(r);
    }
    skip_ws(r);
    if (read_key(r, it->name, sizeof it->name)) return -1;
    if (peek(r) != ']') return mt_toml_fail(r, r->line, r->col, "expected ']' after table name");
    advance(r);
    if (it->array) {
        if (peek(r) != ']') return mt_toml_fail(r, r->line, r->col, "expected ']]' after table name");
        advance(r);
    }
    return expect_eol(r);
}

/* "key = value", then the end of the line. */
static int read_key_value(mt_toml_reader *r, mt_toml_item *it)
{
    it->line = r->line;
    it->col = r->col;
    if (read_key(r, it->name, sizeof it->name)) return -1;
    skip_ws(r);
    if (peek(r) != '=') return mt_toml_fail(r, r->line, r->col, "expected '=' after key '%s'", it->name);
    advance(r);
    skip_ws(r);
    if (at_end(r) || peek(r) == '\n' || peek(r) == '#')
        return mt_toml_fail(r, r->line, r->col, "missing value for key '%s'", it->name);
    if (read_value(r, &it->value) || expect_eol(r)) {
        mt_toml_value_clear(&it->value);
        return -1;
    }
    return 0;
}

void mt_toml_init(mt_toml_reader *r, const char *text, size_t len, const char *name, char *err, size_t errlen)
{
    *r = (mt_toml_reader){text, text + len, name ? name : "<config>", 1, 1, err, errlen};
    /* A leading UTF-8 byte order mark is allowed. */
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) r->p += 3;
}

int mt_toml_next(mt_toml_reader *r, mt_toml_item *it)
{
    memset(it, 0, sizeof *it);
    while (!at_end(r)) {
        skip_ws(r);
        int c = peek(r);
        if (c == -1) break;
        if (c == '\n' || c == '\r' || c == '#') {
            if (expect_eol(r)) return -1;
            continue;
        }
        if (c == '[') return read_table_header(r, it) ? -1 : MT_TOML_TABLE;
        return read_key_value(r, it) ? -1 : MT_TOML_KEYVAL;
    }
    return MT_TOML_END;
}
