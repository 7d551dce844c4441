/* test_protect.c: finding protected spans (URLs, e-mail, mentions, hashtags, format
 * placeholders), the cut text, and putting the spans back by alignment. */
#include <check.h>

#include "check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protect.h"

/* The spans of text as "kind:bytes|kind:bytes|..." */
static char *spans_of(const char *text, unsigned kinds, char *buf, size_t cap)
{
    mt_protect *p = mt_protect_create(text, strlen(text), kinds);
    ck_assert_ptr_nonnull(p);
    buf[0] = 0;
    for (int i = 0; i < mt_protect_count(p); i++) {
        const mt_protect_span *s = mt_protect_span_at(p, i);
        size_t l = strlen(buf);
        snprintf(buf + l, cap - l, "%s%d:%.*s", i ? "|" : "", s->kind, (int)s->len, text + s->start);
    }
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
    ck_assert_str_eq(mt_protect_text(p), "Hello world");
    char *out = mt_protect_restore(p, "Hallo Welt", (const int[][2]){{0, 0}, {1, 1}}, 2);
    ck_assert_ptr_nonnull(strstr(out, word));
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

/* Cut, "translate" word by word with the given alignment, restore. */
static char *round_trip(const char *text, const char *want_cut, const char *translation,
                        const int (*align)[2], int n_align)
{
    mt_protect *p = mt_protect_create(text, strlen(text), MT_PROTECT_ALL);
    ck_assert_ptr_nonnull(p);
    ck_assert_str_eq(mt_protect_text(p), want_cut);
    char *out = mt_protect_restore(p, translation, align, n_align);
    ck_assert_ptr_nonnull(out);
    mt_protect_free(p);
    return out;
}

START_TEST(restore_by_alignment)
{
    /* "The file %s could not be saved." -> cut "The file could not be saved." */
    static const int a1[][2] = {{0, 0}, {1, 1}, {2, 3}, {3, 4}, {4, 5}, {5, 2}};
    char *out = round_trip("The file %s could not be saved.", "The file could not be saved.",
                           "Die Datei konnte nicht gespeichert werden.", a1, 6);
    /* %s preceded "could" (source word 2) -> before its aligned output word 3 */
    ck_assert_str_eq(out, "Die Datei konnte %s nicht gespeichert werden.");
    free(out);
    /* glued to the word before: "file:%s." keeps its glue after the aligned word */
    static const int a2[][2] = {{0, 0}, {1, 1}};
    out = round_trip("Open file:%s.", "Open file:.", "Öffne Datei:.", a2, 2);
    ck_assert_str_eq(out, "Öffne Datei:.%s");
    free(out);
}
END_TEST

START_TEST(restore_without_alignment_keeps_every_span_once_in_order)
{
    const char *text = "@alice look at https://x.io/a and #tag, mail help@example.org";
    char *out = round_trip(text, "look at and , mail", "schau und , Post", NULL, 0);
    /* first span at the start, the others at the end in source order */
    ck_assert_str_eq(out, "@alice schau und , Post https://x.io/a #tag help@example.org");
    free(out);
    out = round_trip("%s", "", "", NULL, 0);
    ck_assert_str_eq(out, "%s");
    free(out);
    out = round_trip("  A man runs.  ", "  A man runs.  ", "  Ein Mann rennt.  ", NULL, 0);
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

int main(void)
{
    Suite *s = suite_create("protect");
    TCase *tc = tcase_create("protect");
    tcase_add_test(tc, urls_and_emails);
    tcase_add_test(tc, long_words);
    tcase_add_test(tc, mentions_and_hashtags);
    tcase_add_test(tc, format_placeholders);
    tcase_add_test(tc, restore_by_alignment);
    tcase_add_test(tc, restore_without_alignment_keeps_every_span_once_in_order);
    tcase_add_test(tc, restore_counts_each_span_exactly_once);
    suite_add_tcase(s, tc);
    return mt_check_run(srunner_create(s));
}
