/* spans.c: the recognisers of the spans protect.c keeps untranslated (spans.h). Matching
 * is hand-written over bytes (no regex engine) because each rule needs its own
 * word-boundary and trailing-punctuation handling. */
#include "spans.h"

#include <string.h>

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
        if (i + l < n && !strncmp(s + i, starts[k], l) && !mt_span_is_space((unsigned char)s[i + l]))
            j = i + l;
    }
    if (!j)
        return 0;
    while (j < n && !mt_span_is_space((unsigned char)s[j]) && s[j] != '<' && s[j] != '"')
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
static size_t format_len(const char *s, size_t i, size_t n, int strict)
{
    size_t j = i + 1;
    if (s[i] == '{') {
        if ((i + 1 < n && s[i + 1] == '{') || (i > 0 && s[i - 1] == '{')) /* {{ escapes */
            return 0;
        while (j < n && (is_alnum((unsigned char)s[j]) || s[j] == '_' || s[j] == '.'))
            j++;
        if (j < n && s[j] == ':')
            while (j < n && s[j] != '}' && s[j] != '{' && !mt_span_is_space((unsigned char)s[j]))
                j++;
        return j < n && s[j] == '}' ? j + 1 - i : 0;
    }
    if (s[i] != '%' || j >= n)
        return 0;
    if (s[j] == '(') {
        while (j < n && s[j] != ')' && !mt_span_is_space((unsigned char)s[j]))
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
        if (strict && j + 1 < n && is_alnum((unsigned char)s[j + 1]) && s[i + 1] != '(')
            return 0;
        return j + 1 - i;
    }
    return 0;
}

/* Shell-style variables: ${name} (anything but braces and whitespace inside) and $NAME in
 * capitals, digits and '_' (so "$5" and "costs $x" stay text). */
static size_t match_variable(const char *s, size_t i, size_t n)
{
    if (s[i] != '$' || (i > 0 && s[i - 1] == '$') || i + 1 >= n)
        return 0;
    size_t j = i + 1;
    if (s[j] == '{') { /* also after a word ("x${HOME}"): else "{HOME}" alone would be one */
        for (j++; j < n && s[j] != '}' && s[j] != '{' && !mt_span_is_space((unsigned char)s[j]); j++)
            ;
        return j < n && s[j] == '}' && j > i + 2 ? j + 1 - i : 0;
    }
    if (!((s[j] >= 'A' && s[j] <= 'Z') || s[j] == '_') || (i > 0 && is_word((unsigned char)s[i - 1])))
        return 0;
    while (j < n && ((s[j] >= 'A' && s[j] <= 'Z') || (s[j] >= '0' && s[j] <= '9') || s[j] == '_'))
        j++;
    if (j < n && ((s[j] >= 'a' && s[j] <= 'z') || (unsigned char)s[j] >= 0x80)) /* "$Dollars" */
        return 0;
    return j - i >= 3 ? j - i : 0;
}

/* An empty XML element standing for a placeholder, as Weblate sends them: <x id="0"/>,
 * <ph id="1"/> (a name, attributes on one line, "/>"). */
static size_t match_xml_placeholder(const char *s, size_t i, size_t n)
{
    if (s[i] != '<' || i + 1 >= n || !((s[i + 1] | 32) >= 'a' && (s[i + 1] | 32) <= 'z'))
        return 0;
    char q = 0;
    for (size_t j = i + 2; j < n && j - i < 256; j++) {
        if (q) {
            q = s[j] == q ? 0 : q;
        } else if (s[j] == '"' || s[j] == '\'') {
            q = s[j];
        } else if (s[j] == '<' || s[j] == '\n') {
            return 0;
        } else if (s[j] == '>') {
            return s[j - 1] == '/' ? j + 1 - i : 0;
        }
    }
    return 0;
}

/* Code in backticks: `...` on one line, not starting or ending with a space. The gettext
 * quotes `like this' are not code: content that holds "'" followed by a space or at its
 * end is refused. */
static size_t match_code(const char *s, size_t i, size_t n)
{
    if (s[i] != '`' || i + 2 >= n || mt_span_is_space((unsigned char)s[i + 1]) || s[i + 1] == '`')
        return 0;
    for (size_t j = i + 1; j < n && j - i < 512; j++) {
        if (s[j] == '\n' || (s[j] == '\'' && (j + 1 >= n || mt_span_is_space((unsigned char)s[j + 1]) || s[j + 1] == '`')))
            return 0;
        if (s[j] == '`')
            return mt_span_is_space((unsigned char)s[j - 1]) ? 0 : j + 1 - i;
    }
    return 0;
}

/* UTF-8 code point at s[i] (0 with *len 0 when invalid). */
static unsigned long code_point(const char *s, size_t i, size_t n, size_t *len)
{
    const unsigned char *u = (const unsigned char *)s + i;
    size_t l = u[0] < 0x80 ? 1 : (u[0] & 0xE0) == 0xC0 ? 2 : (u[0] & 0xF0) == 0xE0 ? 3 : (u[0] & 0xF8) == 0xF0 ? 4 : 0;
    if (!l || i + l > n) {
        *len = 0;
        return 0;
    }
    unsigned long cp = l == 1 ? u[0] : u[0] & (0x7F >> l);
    for (size_t k = 1; k < l; k++) {
        if ((u[k] & 0xC0) != 0x80) {
            *len = 0;
            return 0;
        }
        cp = cp << 6 | (u[k] & 0x3F);
    }
    *len = l;
    return cp;
}

/* Emoji: a pictograph with its variation selectors, skin tones and zero-width joins, and
 * flags (two regional indicators). Models read them as <unk> and drop them. */
static size_t match_emoji(const char *s, size_t i, size_t n)
{
    size_t k = i, len = 0, l;
    if ((unsigned char)s[i] < 0xE2)
        return 0;
    unsigned long cp = code_point(s, k, n, &l);
    if (cp >= 0x1F1E6 && cp <= 0x1F1FF) { /* a flag: two regional indicators */
        size_t l2;
        unsigned long c2 = code_point(s, k + l, n, &l2);
        return l2 && c2 >= 0x1F1E6 && c2 <= 0x1F1FF ? l + l2 : 0;
    }
    for (;;) {
        cp = code_point(s, k, n, &l);
        if (!l || !((cp >= 0x1F300 && cp <= 0x1FAFF) || (cp >= 0x2600 && cp <= 0x27BF) || (cp >= 0x2B50 && cp <= 0x2B55) ||
                    cp == 0x2B1B || cp == 0x2B1C))
            return len;
        k += l;
        while (k < n && (cp = code_point(s, k, n, &l), l) && (cp == 0xFE0F || (cp >= 0x1F3FB && cp <= 0x1F3FF)))
            k += l;
        len = k - i;
        if (k < n && (cp = code_point(s, k, n, &l), l) && cp == 0x200D)
            k += l; /* joined to the next pictograph */
        else
            return len;
    }
}

/* A letter or digit (of any script) or '_' at s[j]: its length, else 0. */
static size_t name_char_len(const char *s, size_t j, size_t n)
{
    size_t l;
    if ((unsigned char)s[j] < 0x80)
        return is_word((unsigned char)s[j]) ? 1 : 0;
    code_point(s, j, n, &l);
    return l && mt_span_is_word_char(s, j, n, 0) ? l : 0;
}

/* Path characters: ASCII letters, digits and _-.+~@%=:*, and non-ASCII letters (not the
 * quotes, dashes or spaces around a path); never braces (the masks are "{N}"). */
static size_t path_char_len(const char *s, size_t j, size_t n)
{
    unsigned char c = (unsigned char)s[j];
    if (c < 0x80)
        return is_alnum(c) || (c && strchr("_-.+~@%=:*", c)) ? 1 : 0;
    return name_char_len(s, j, n);
}

/* A path's or qualified name's start: the text's start or after a character that is not
 * a letter, digit or path punctuation ("and/or", "km/h", "1/2", "HTTP/1.1", "file:///x"
 * and "x::y" inside "a::x::y" start no span). */
static int at_name_start(const char *s, size_t i, size_t n)
{
    return i == 0 || (!mt_span_is_word_char(s, i - 1, n, 1) && !strchr("/.~-_:\\@%+=*$", s[i - 1]));
}

/* File paths: /a/b or /a/ (two components, or one ending in '/': "/" alone and "/etc" are
 * too likely words or fractions), ~/x, ./x, ../x, then path characters and '/'; trailing
 * sentence punctuation .,;:!?' cut as for URLs (brackets and quotes are no path characters). */
static size_t match_file_path(const char *s, size_t i, size_t n)
{
    size_t p; /* the prefix */
    if (s[i] == '/')
        p = 1;
    else if (s[i] == '~' && i + 1 < n && s[i + 1] == '/')
        p = 2;
    else if (s[i] == '.' && i + 1 < n && s[i + 1] == '/')
        p = 2;
    else if (s[i] == '.' && i + 2 < n && s[i + 1] == '.' && s[i + 2] == '/')
        p = 3;
    else
        return 0;
    if (!at_name_start(s, i, n) || i + p >= n || s[i + p] == '/' || !path_char_len(s, i + p, n))
        return 0;
    size_t j = i + p;
    for (size_t l; j < n && (l = s[j] == '/' ? 1 : path_char_len(s, j, n)) > 0;)
        j += l;
    while (j > i + p && strchr(".,;:!?'", s[j - 1]))
        j--;
    if (j == i + p)
        return 0;
    if (p == 1) { /* a '/' after the first component's characters: /usr/bin, /tmp/ */
        size_t k = i + 1;
        while (k < j && s[k] != '/')
            k++;
        if (k >= j || (k + 1 < j && s[k + 1] == '/'))
            return 0;
    }
    return j - i;
}

/* Qualified names: name parts of letters, digits, _ and - joined by "::", at least two
 * (Class::Accessor::Grouped, Acquire::http::No-Cache, std::vector; not "(::)"). */
static size_t match_qualified(const char *s, size_t i, size_t n)
{
    if (!at_name_start(s, i, n) || !name_char_len(s, i, n))
        return 0;
    size_t j = i, end = 0;
    for (;;) {
        size_t part = j, l;
        while (j < n && (l = s[j] == '-' ? 1 : name_char_len(s, j, n)) > 0)
            j += l;
        while (j > part && s[j - 1] == '-')
            j--;
        if (j == part)
            break;
        end = j;
        if (j + 2 < n && s[j] == ':' && s[j + 1] == ':' && name_char_len(s, j + 2, n))
            j += 2;
        else
            break;
    }
    size_t k = i, parts = 0;
    for (; k + 1 < end; k++)
        parts += s[k] == ':' && s[k + 1] == ':';
    return parts ? end - i : 0;
}

static size_t match_path(const char *s, size_t i, size_t n)
{
    size_t l = match_file_path(s, i, n);
    return l ? l : match_qualified(s, i, n);
}

/* A whitespace-delimited run of more than MT_PROTECT_LONG_WORD_CHARS characters. */
static size_t match_long_word(const char *s, size_t i, size_t n)
{
    if (i > 0 && !mt_span_is_space((unsigned char)s[i - 1]))
        return 0;
    size_t j = i, chars = 0;
    while (j < n && !mt_span_is_space((unsigned char)s[j])) {
        chars += ((unsigned char)s[j] & 0xC0) != 0x80; /* count code points, not bytes */
        j++;
    }
    return chars > MT_PROTECT_LONG_WORD_CHARS ? j - i : 0;
}

/* The length of a placeholder (MT_PROTECT_FORMAT) at s[i], or 0. In a translation, a
 * printf placeholder may take a suffix ("%ss"): not strict there. */
size_t mt_span_placeholder_len(const char *s, size_t i, size_t n, int strict)
{
    size_t l = format_len(s, i, n, strict);
    if (!l)
        l = match_variable(s, i, n);
    if (!l)
        l = match_xml_placeholder(s, i, n);
    return l;
}

static size_t match_placeholder(const char *s, size_t i, size_t n) { return mt_span_placeholder_len(s, i, n, 1); }

/* Characters the model cannot spell from s[i]: a maximal run of valid UTF-8 characters
 * sp->fn says 0 for, ended early where a span of another of `kinds` starts (that one wins). */
static size_t match_unknown(unsigned kinds, const mt_span_spells *sp, const char *s, size_t i, size_t n)
{
    size_t j = i, l;
    if (!sp || !sp->fn || (unsigned char)s[i] < 0x80)
        return 0; /* ASCII is always spelled (masks and markup are made of it) */
    while (j < n && (unsigned char)s[j] >= 0x80 && (code_point(s, j, n, &l), l) && sp->fn(sp->ctx, s + j, l) == 0) {
        int other;
        if (j > i && mt_span_find(kinds & ~(unsigned)MT_PROTECT_UNKNOWN, NULL, s, j, n, &other))
            break;
        j += l;
    }
    return j - i;
}

size_t mt_span_find(unsigned kinds, const mt_span_spells *sp, const char *s, size_t i, size_t n, int *kind)
{
    static const struct {
        int kind;
        size_t (*fn)(const char *, size_t, size_t);
    } rules[] = {{MT_PROTECT_CODE, match_code},         {MT_PROTECT_URL, match_url},
                 {MT_PROTECT_EMAIL, match_email},       {MT_PROTECT_MENTION, match_mention},
                 {MT_PROTECT_HASHTAG, match_hashtag},   {MT_PROTECT_FORMAT, match_placeholder},
                 {MT_PROTECT_PATH, match_path},         {MT_PROTECT_EMOJI, match_emoji},
                 {MT_PROTECT_LONG_WORD, match_long_word}};
    size_t len = 0;
    for (size_t r = 0; r < sizeof rules / sizeof *rules && !len; r++)
        if (kinds & (unsigned)rules[r].kind) {
            len = rules[r].fn(s, i, n);
            *kind = rules[r].kind;
        }
    if (!len && (kinds & MT_PROTECT_UNKNOWN)) {
        len = match_unknown(kinds, sp, s, i, n);
        *kind = MT_PROTECT_UNKNOWN;
    }
    return len;
}

/* 1 when the character at s[i] (before: the one ending at s[i]) is a letter or digit
 * (punctuation such as quotes, dashes and spaces outside ASCII, and emoji are not). */
int mt_span_is_word_char(const char *s, size_t i, size_t n, int before)
{
    if (i >= n)
        return 0;
    if (before)
        while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80)
            i--;
    size_t l;
    unsigned long cp = code_point(s, i, n, &l);
    if (!l)
        return 0;
    if (cp < 0x80)
        return is_word((unsigned char)cp);
    return cp >= 0xC0 && cp != 0xD7 && cp != 0xF7 && !(cp >= 0x2000 && cp <= 0x2BFF) && !(cp >= 0x3000 && cp <= 0x303F) &&
           !(cp >= 0xFE30 && cp <= 0xFE4F) && !(cp >= 0xFF00 && cp <= 0xFF0F) && cp < 0x1F000;
}
