/* test_protect.c: finding protected spans (URLs, e-mail, mentions, hashtags, format
 * placeholders, code, emoji, file paths and "::" names, and characters the model cannot
 * spell, told by a stub spells function), the text the model reads, and putting the spans
 * back from synthetic model outputs. */
#include <check.h>

#include "check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protect.h"

/* p's spans of text as "kind:bytes|kind:bytes|..." in buf. */
static void describe_spans(const mt_protect *p, const char *text, char *buf, size_t cap)
{
    buf[0] = 0;
    for (int i = 0; i < mt_protect_count(p); i++) {
        const mt_protect_span *s = mt_protect_span_at(p, i);
        size_t l = strlen(buf);
        snprintf(buf + l, cap - l, "%s%d:%.*s", i ? "|" : "", s->kind, (int)s->len, text + s->start);
    }
}

/* The spans of text as "kind:bytes|kind:bytes|..." */
static char *spans_of(const char *text, unsigned kinds, char *buf, size_t cap)
{
    mt_protect *p = mt_protect_create(text, strlen(text), kinds);
    ck_assert_ptr_nonnull(p);
    describe_spans(p, text, buf, cap);
    mt_protect_free(p);
    return buf;
}

#define SPANS(text, want) do { char b_[1024]; ck_assert_str_eq(spans_of(text, MT_PROTECT_ALL, b_, sizeof b_), want); } while (0)

START_TEST(long_words)
{
    char text[400], want[400], b[1024];
    /* 64 characters is a word; 65 is not (counted in code points: "ä" is two bytes) */
    memset(text, 'a', 64);
    snprintf(text + 64, sizeof text - 64, " ok");
    ck_assert_str_eq(spans_of(text, MT_PROTECT_LONG_WORD, b, sizeof b), "");
    char word[200] = "";
    for (int i = 0; i < 65; i++) strcat(word, "\xc3\xa4");
    snprintf(text, sizeof text, "Hello %s world", word);
    snprintf(want, sizeof want, "32:%s", word);
    ck_assert_str_eq(spans_of(text, MT_PROTECT_LONG_WORD, b, sizeof b), want);
    /* the kind is off unless asked for (the service always asks) */
    ck_assert_str_eq(spans_of(text, MT_PROTECT_ALL, b, sizeof b), "");
    mt_protect *p = mt_protect_create(text, strlen(text), MT_PROTECT_LONG_WORD);
    ck_assert_str_eq(mt_protect_text(p), "Hello {0} world"); /* never sent to the model */
    char *out = mt_protect_restore(p, "Hallo Welt", (const int[][2]){{0, 0}, {2, 1}}, 2);
    snprintf(want, sizeof want, "Hallo %s Welt", word); /* the dropped mask: after "Hallo" */
    ck_assert_str_eq(out, want);
    free(out);
    mt_protect_free(p);
}
END_TEST

START_TEST(urls_and_emails)
{
    SPANS("See https://example.org/a?b=1&c=(2). Now", "1:https://example.org/a?b=1&c=(2)");
    SPANS("(see http://x.io/p)", "1:http://x.io/p");
    SPANS("go to www.example.com, then", "1:www.example.com");
    SPANS("Write to help@example.org.", "2:help@example.org");
    SPANS("mail first.last+tag@mail.example.co.uk now", "2:first.last+tag@mail.example.co.uk");
    SPANS("no url: http:// alone, no mail: a@b", "");
}
END_TEST

START_TEST(mentions_and_hashtags)
{
    SPANS("Thanks @alice and @bob@mastodon.social!", "4:@alice|4:@bob@mastodon.social");
    SPANS("An #offenerMund post #2024 #café_au_lait.", "8:#offenerMund|8:#café_au_lait");
    SPANS("C# and a#b and &#39; are not tags", "");
    SPANS("mail me@example.org, not a mention", "2:me@example.org");
}
END_TEST

START_TEST(format_placeholders)
{
    SPANS("The file %s could not be saved.", "16:%s");
    SPANS("%d of %1$s, %(name)s and %5.2f%%", "16:%d|16:%1$s|16:%(name)s|16:%5.2f");
    SPANS("{count} files in {0} or {} or {x:>4}", "16:{count}|16:{0}|16:{}|16:{x:>4}");
    SPANS("50% discount, 100%done, {{literal}}", "");
    char b[256];
    ck_assert_str_eq(spans_of("%s at https://a.io #x @y", MT_PROTECT_FORMAT, b, sizeof b), "16:%s");
}
END_TEST

#define PATHS(text, want) do { char b_[1024]; ck_assert_str_eq(spans_of(text, MT_PROTECT_PATH, b_, sizeof b_), want); } while (0)

START_TEST(paths_and_qualified_names)
{
    PATHS("Edit /etc/apt/sources.list and run ./configure.", "512:/etc/apt/sources.list|512:./configure");
    PATHS("See /usr/share/doc/ or ~/.bashrc, then ../x!", "512:/usr/share/doc/|512:~/.bashrc|512:../x");
    PATHS("such as /sys/ or /proc/.", "512:/sys/|512:/proc/");
    PATHS("(in /var/lib/dpkg/status)", "512:/var/lib/dpkg/status");
    PATHS("\xe2\x80\x9e/etc/hosts\xe2\x80\x9c and /home/j\xc3\xbcrgen/x", "512:/etc/hosts|512:/home/j\xc3\xbcrgen/x");
    PATHS("Class::Accessor::Grouped is a module.", "512:Class::Accessor::Grouped");
    PATHS("Set Acquire::http::No-Cache, use std::vector: ok", "512:Acquire::http::No-Cache|512:std::vector");
    /* not paths: a lone slash, one component, slashes inside words, numbers and protocols */
    PATHS("/ alone, /etc, //x/y, and/or, km/h, 1/2, HTTP/1.1, TCP/IP, text/*, a / b", "");
    PATHS("file:///etc/x, x//y/z, </b> and <br/>, ~/ and ./ and ../", "");
    /* not qualified names: a lone or half "::" */
    PATHS("a double colon (::), a:: and ::b, a:b", "");
    /* other kinds win: a URL holding a path stays one URL span */
    char b[1024];
    ck_assert_str_eq(spans_of("Get https://example.org/a/b/c.tar.gz now", MT_PROTECT_ALL | MT_PROTECT_PATH, b, sizeof b),
                     "1:https://example.org/a/b/c.tar.gz");
    ck_assert_str_eq(spans_of("Run `ls /etc/apt` and see /etc/apt/x", MT_PROTECT_ALL | MT_PROTECT_PATH, b, sizeof b),
                     "64:`ls /etc/apt`|512:/etc/apt/x");
    /* off unless asked for */
    ck_assert_str_eq(spans_of("Edit /etc/apt/sources.list", MT_PROTECT_ALL & ~(unsigned)MT_PROTECT_PATH, b, sizeof b), "");
    /* put back byte for byte */
    const char *text = "Edit /etc/apt/sources.list and Class::Accessor::Grouped.";
    mt_protect *p = mt_protect_create(text, strlen(text), MT_PROTECT_PATH);
    ck_assert_ptr_nonnull(p);
    ck_assert_str_eq(mt_protect_text(p), "Edit {0} and {1}.");
    char *out = mt_protect_restore(p, "Bearbeiten Sie {0} und {1}.", NULL, 0);
    ck_assert_str_eq(out, "Bearbeiten Sie /etc/apt/sources.list und Class::Accessor::Grouped.");
    free(out);
    mt_protect_free(p);
}
END_TEST

START_TEST(text_sent_to_the_model)
{
    /* placeholders as written; other spans as masks "{N}"; everything around them kept */
    mt_protect *p = mt_protect_create("x", 1, MT_PROTECT_ALL);
    mt_protect_free(p);
    const char *cases[][2] = {
        {"File '%.255s' (%s) not found.", "File '%.255s' (%s) not found."},
        {"See \"https://x.io/a\" or (www.x.io), mail me@x.io.", "See \"{0}\" or ({1}), mail {2}."},
        {"Thanks @bob! #rust `make -j` \xf0\x9f\x98\x80.", "Thanks {0}! {1} {2} {3}."},
        {"{0} and {1} at http://a.io", "{0} and {1} at {4}"}, /* masks above the text's own fields */
        {"Hi {7}: {a} http://a.io", "Hi {7}: {a} {10}"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        p = mt_protect_create(cases[k][0], strlen(cases[k][0]), MT_PROTECT_ALL);
        ck_assert_ptr_nonnull(p);
        ck_assert_str_eq(mt_protect_text(p), cases[k][1]);
        mt_protect_free(p);
    }
}
END_TEST

/* Restores `translation` of text's masked text with the alignment. */
static char *restored(const char *text, const char *translation, const int (*align)[2], int n_align)
{
    mt_protect *p = mt_protect_create(text, strlen(text), MT_PROTECT_ALL);
    ck_assert_ptr_nonnull(p);
    char *out = mt_protect_restore(p, translation, align, n_align);
    ck_assert_ptr_nonnull(out);
    mt_protect_free(p);
    return out;
}

#define RESTORED(text, tr, want) do { \
        char *o_ = restored(text, tr, NULL, 0); \
        ck_assert_str_eq(o_, want); \
        free(o_); \
    } while (0)

START_TEST(spans_keep_their_quotes_and_brackets)
{
    /* The quotes and brackets travel with the text the model writes, on either side of
     * the span as the model puts them (cutting the span out used to leave them behind:
     * "'%.255s'" -> "''%.255s", "(%s)" -> "()%s", "\"https://x/\"" -> "\"\"https://x/"). */
    RESTORED("Cannot open '%.255s'.", "Kann '%.255s' nicht öffnen.", "Kann '%.255s' nicht öffnen.");
    RESTORED("Cannot open '%.255s'.", "Kann »%.255s« nicht öffnen.", "Kann »%.255s« nicht öffnen.");
    RESTORED("Error (%s).", "Fehler (%s).", "Fehler (%s).");
    RESTORED("See \"https://x/\".", "Siehe \"{0}\".", "Siehe \"https://x/\".");
    RESTORED("See \"https://x/\".", "Siehe „{0}“.", "Siehe „https://x/“.");
    RESTORED("Visit (https://x/a).", "Besuche ({0}).", "Besuche (https://x/a).");
    RESTORED("Visit https://x/a, then", "{0} besuchen, dann", "https://x/a besuchen, dann");
    RESTORED("Mail <me@x.io> now", "Schreib <{0}> jetzt", "Schreib <me@x.io> jetzt");
    RESTORED("Run `make all` as $USER in ${HOME}", "Führe {0} als $USER in ${HOME} aus",
             "Führe `make all` als $USER in ${HOME} aus");
    RESTORED("Press <x id=\"0\"/> to save", "Drücke <x id=\"0\"/> zum Speichern",
             "Drücke <x id=\"0\"/> zum Speichern");
    RESTORED("Nice \xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd day", "Schöner {0} Tag", "Schöner \xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd Tag");
}
END_TEST

START_TEST(spans_are_not_glued_to_words)
{
    /* where the source had whitespace, a span the model glued to a word gets a space
     * (a URL glued to the next word is another link); glue the source had stays */
    RESTORED("Go to https://x/ now", "Geh zu {0}jetzt", "Geh zu https://x/ jetzt");
    RESTORED("Go to https://x/ now", "Geh zu jetzt{0}", "Geh zu jetzt https://x/");
    RESTORED("Saved to {file} now", "In {file}gespeichert", "In {file} gespeichert");
    RESTORED("See https://x/. Next", "Siehe {0}weiter", "Siehe https://x/ weiter");
    RESTORED("See @bob's post", "Siehe {0}s Post", "Siehe @bob s Post");
    RESTORED("The %s's head", "Der %ss Kopf", "Der %ss Kopf");
    RESTORED("Open file:%s.", "Öffne Datei:%s.", "Öffne Datei:%s.");
}
END_TEST

START_TEST(damaged_extra_and_missing_copies)
{
    /* a placeholder the model changed is replaced by the one it stood for */
    RESTORED("At least %(major)d.%(feature)d.%(minor)d", "Mindestens %(major)d.%(function)d.%(minor)d",
             "Mindestens %(major)d.%(feature)d.%(minor)d");
    /* a copy too many, or one the model made up, is dropped */
    RESTORED("By %s and %s.", "Von %s, %s und %s.", "Von %s, %s und.");
    RESTORED("By %s and %s.", "Von %s %s und %s.", "Von %s %s und.");
    RESTORED("Hello %s", "Hallo %d %s", "Hallo %s");
    RESTORED("See http://a.io", "Siehe {0} {0}", "Siehe http://a.io");
    /* a mask inside what reads as a placeholder ("$" + "{0}") is still the mask */
    RESTORED("Pay $#tag now", "Zahle ${0} jetzt", "Zahle $#tag jetzt");
    /* a look-alike glued to a word is text unless a placeholder needs it */
    RESTORED("Got 100%done and %d", "Habe 100%done und %d", "Habe 100%done und %d");
    /* a dropped mask goes after the output word aligned to the source word before it */
    static const int al[][2] = {{0, 0}, {1, 1}, {3, 2}};
    char *out = restored("Visit the https://x/ page", "Besuche die Seite", al, 3);
    ck_assert_str_eq(out, "Besuche die https://x/ Seite");
    free(out);
    /* ... else before the one aligned to the word after it */
    static const int al2[][2] = {{3, 0}, {0, 1}};
    out = restored("Visit the https://x/ page", "Seite besuchen", al2, 2);
    ck_assert_str_eq(out, "https://x/ Seite besuchen");
    free(out);
    /* a missing placeholder the same way */
    static const int al3[][2] = {{0, 0}, {1, 1}, {3, 2}};
    out = restored("The file %s is gone", "Die Datei fehlt", al3, 3);
    ck_assert_str_eq(out, "Die Datei %s fehlt");
    free(out);
}
END_TEST

START_TEST(restore_without_alignment_keeps_every_span_once_in_order)
{
    /* masks the model dropped: the first at the start, the others at the end */
    const char *text = "@alice look at https://x.io/a and #tag, mail help@example.org";
    char *out = restored(text, "schau und , Post", NULL, 0);
    ck_assert_str_eq(out, "@alice schau und , Post https://x.io/a #tag help@example.org");
    free(out);
    out = restored("%s", "", NULL, 0);
    ck_assert_str_eq(out, "%s");
    free(out);
    out = restored("  A man runs.  ", "  Ein Mann rennt.  ", NULL, 0);
    ck_assert_str_eq(out, "  Ein Mann rennt.  ");
    free(out);
}
END_TEST

START_TEST(restore_counts_each_span_exactly_once)
{
    const char *text = "Hi @bob, %1$s and %2$s at {0} see www.a.io #x";
    mt_protect *p = mt_protect_create(text, strlen(text), MT_PROTECT_ALL);
    ck_assert_int_eq(mt_protect_count(p), 6);
    static const int al[][2] = {{0, 2}, {1, 0}, {2, 1}, {3, 1}, {4, 2}};
    char *out = mt_protect_restore(p, "und bei Hallo sieh", al, 5);
    for (int i = 0; i < mt_protect_count(p); i++) {
        const mt_protect_span *s = mt_protect_span_at(p, i);
        char needle[64];
        snprintf(needle, sizeof needle, "%.*s", (int)s->len, text + s->start);
        const char *hit = strstr(out, needle);
        ck_assert_msg(hit && !strstr(hit + 1, needle), "%s not exactly once in '%s'", needle, out);
    }
    free(out);
    mt_protect_free(p);
}
END_TEST


/* A stub for the model's tokenizer: it cannot spell the characters listed in ctx (a
 * NUL-terminated UTF-8 string), and says -1 for a "character" that is not one. */
static int stub_spells(const void *ctx, const char *ch, size_t n)
{
    char c[8];
    ck_assert_msg(n >= 1 && n <= 4, "spells asked about %zu bytes", n);
    memcpy(c, ch, n);
    c[n] = 0;
    return strstr(ctx, c) ? 0 : 1;
}

static char *unknown_spans(const char *text, unsigned kinds, const char *unknown, char *buf, size_t cap)
{
    mt_protect *p = mt_protect_create_with(text, strlen(text), kinds, stub_spells, unknown);
    ck_assert_ptr_nonnull(p);
    describe_spans(p, text, buf, cap);
    /* the masked text, translated as itself, comes back byte for byte */
    char *back = mt_protect_restore(p, mt_protect_text(p), NULL, 0);
    ck_assert_ptr_nonnull(back);
    ck_assert_str_eq(back, text);
    free(back);
    mt_protect_free(p);
    return buf;
}

#define UNKNOWN(text, unknown, want) do { char b_[1024]; \
        ck_assert_str_eq(unknown_spans(text, MT_PROTECT_ALL, unknown, b_, sizeof b_), want); } while (0)

START_TEST(unknown_characters)
{
    /* "€" the model cannot spell: one span, masked, put back */
    UNKNOWN("It costs \xe2\x82\xac" "5.", "\xe2\x82\xac", "256:\xe2\x82\xac");
    mt_protect *p = mt_protect_create_with("It costs \xe2\x82\xac" "5.", 14, MT_PROTECT_ALL, stub_spells, "\xe2\x82\xac");
    ck_assert_str_eq(mt_protect_text(p), "It costs {0}5.");
    char *o = mt_protect_restore(p, "Es kostet {0}5.", NULL, 0);
    ck_assert_str_eq(o, "Es kostet \xe2\x82\xac" "5.");
    free(o);
    o = mt_protect_restore(p, "Es kostet 5.", (const int[][2]){{0, 0}, {1, 1}}, 2); /* dropped: put back */
    ck_assert_ptr_nonnull(strstr(o, "\xe2\x82\xac"));
    free(o);
    mt_protect_free(p);
    /* a maximal run is one span; whitespace, ASCII and spelled characters end it */
    UNKNOWN("Ich wohne in \xe6\x9d\xb1\xe4\xba\xac seit 2010 \xe2\x89\x88\xe2\x89\x88 ok",
            "\xe6\x9d\xb1\xe4\xba\xac\xe2\x89\x88",
            "256:\xe6\x9d\xb1\xe4\xba\xac|256:\xe2\x89\x88\xe2\x89\x88");
    UNKNOWN("\xe2\x82\xac" "a\xe2\x82\xac\xc3\xa4\xe2\x82\xac", "\xe2\x82\xac",
            "256:\xe2\x82\xac|256:\xe2\x82\xac|256:\xe2\x82\xac");
    /* a spelled character ("ä") is never cut out; nothing unknown: no span */
    UNKNOWN("B\xc3\xa4r \xe2\x82\xac", "", "");
    /* other kinds win where they overlap: a URL with a "€" stays a URL, a hashtag a hashtag,
     * an emoji an emoji (the run stops where one starts) */
    UNKNOWN("see http://x.io/\xe2\x82\xac now", "\xe2\x82\xac", "1:http://x.io/\xe2\x82\xac");
    UNKNOWN("\xe2\x82\xac http://x.io #\xe2\x82\xac" "uro", "\xe2\x82\xac",
            "256:\xe2\x82\xac|1:http://x.io|8:#\xe2\x82\xac" "uro");
    UNKNOWN("\xe2\x82\xac\xf0\x9f\x99\x82\xe2\x82\xac", "\xe2\x82\xac\xf0\x9f\x99\x82",
            "256:\xe2\x82\xac|128:\xf0\x9f\x99\x82|256:\xe2\x82\xac");
    /* without the kind, or without a spells function, no such span */
    char b[256];
    ck_assert_str_eq(unknown_spans("It costs \xe2\x82\xac" "5.", MT_PROTECT_ALL & ~MT_PROTECT_UNKNOWN, "\xe2\x82\xac", b,
                                   sizeof b), "");
    p = mt_protect_create("It costs \xe2\x82\xac" "5.", 14, MT_PROTECT_ALL);
    ck_assert_int_eq(mt_protect_count(p), 0);
    mt_protect_free(p);
    p = mt_protect_create_with("It costs \xe2\x82\xac" "5.", 14, MT_PROTECT_ALL, NULL, NULL);
    ck_assert_int_eq(mt_protect_count(p), 0);
    mt_protect_free(p);
}
END_TEST

/* Invalid UTF-8 never reaches the spells function as a character and never crashes:
 * truncated, stray continuation and 0xFF bytes around and inside runs, and at the end. */
START_TEST(unknown_characters_in_invalid_utf8)
{
    const char *texts[] = {"\xe2\x82", "\xe2\x82\xac\xe2\x82", "\xff\xe2\x82\xac\x80\xe2\x82\xac\xfe",
                           "a \xe2\x82\xac\xc3 b", "\xf0\x9f\x99", "\xe2\x82\xac\xe2\x82\xac\xe2"};
    const char *want[] = {"", "256:\xe2\x82\xac", "256:\xe2\x82\xac|256:\xe2\x82\xac", "256:\xe2\x82\xac", "",
                          "256:\xe2\x82\xac\xe2\x82\xac"};
    for (size_t k = 0; k < sizeof texts / sizeof *texts; k++)
        UNKNOWN(texts[k], "\xe2\x82\xac", want[k]);
    /* a spells function that calls everything unknown: only whole characters are cut */
    UNKNOWN("\xff\xe2\x82\xac\x80\xc3\xa4 x", "\xe2\x82\xac\xc3\xa4", "256:\xe2\x82\xac|256:\xc3\xa4");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("protect");
    TCase *tc = tcase_create("protect");
    tcase_add_test(tc, urls_and_emails);
    tcase_add_test(tc, long_words);
    tcase_add_test(tc, mentions_and_hashtags);
    tcase_add_test(tc, format_placeholders);
    tcase_add_test(tc, paths_and_qualified_names);
    tcase_add_test(tc, text_sent_to_the_model);
    tcase_add_test(tc, spans_keep_their_quotes_and_brackets);
    tcase_add_test(tc, spans_are_not_glued_to_words);
    tcase_add_test(tc, damaged_extra_and_missing_copies);
    tcase_add_test(tc, restore_without_alignment_keeps_every_span_once_in_order);
    tcase_add_test(tc, restore_counts_each_span_exactly_once);
    tcase_add_test(tc, unknown_characters);
    tcase_add_test(tc, unknown_characters_in_invalid_utf8);
    suite_add_tcase(s, tc);
    return mt_check_run(srunner_create(s));
}
