/* test_markup.c: inline HTML taken out of a block and put back around aligned words. */
#include <check.h>

#include "check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "markup.h"

/* Splits html, checks the plain text, restores `translation` with the alignment. */
static char *round_trip(const char *html, const char *want_text, const char *translation,
                        const int (*align)[2], int n_align)
{
    mt_markup *m = mt_markup_split(html, strlen(html));
    ck_assert_ptr_nonnull(m);
    ck_assert_str_eq(mt_markup_text(m), want_text);
    char *out = mt_markup_restore(m, translation, align, n_align);
    ck_assert_ptr_nonnull(out);
    mt_markup_free(m);
    return out;
}

#define CHECK(html, text, tr, al, want) do { \
        char *o_ = round_trip(html, text, tr, al, (int)(sizeof al / sizeof *al)); \
        ck_assert_str_eq(o_, want); \
        free(o_); \
    } while (0)

START_TEST(the_issue_example)
{
    /* A man runs. -> Ein Mann rennt. */
    static const int al[][2] = {{0, 0}, {1, 1}, {2, 2}};
    CHECK("A <b>man</b> runs.", "A man runs.", "Ein Mann rennt.", al, "Ein <b>Mann</b> rennt.");
}
END_TEST

START_TEST(nested_elements_and_link_attributes)
{
    /* A <a href=..><em>brown</em> dog</a> runs. -> Ein braun Hund rennt. */
    static const int al[][2] = {{0, 0}, {1, 1}, {2, 2}, {3, 3}};
    CHECK("A <a href=\"https://x.io/?a=1&amp;b=2\" class='m'><em>brown</em> dog</a> runs.",
          "A brown dog runs.", "Ein brauner Hund rennt.", al,
          "Ein <a href=\"https://x.io/?a=1&amp;b=2\" class='m'><em>brauner</em> Hund</a> rennt.");
}
END_TEST

START_TEST(reordered_words_follow_the_alignment)
{
    /* The dog is <i>running</i> fast. -> Der Hund <i>rennt</i> schnell. with reordering */
    static const int al[][2] = {{0, 0}, {1, 1}, {2, 2}, {3, 2}, {4, 3}};
    CHECK("The dog is <i>running</i> fast.", "The dog is running fast.", "Der Hund rennt schnell.", al,
          "Der Hund <i>rennt</i> schnell.");
    /* <b>red</b> car -> Auto rot: the element moves with its word */
    static const int al2[][2] = {{0, 1}, {1, 0}};
    CHECK("<b>red</b> car", "red car", "Auto rot", al2, "Auto <b>rot</b>");
}
END_TEST

START_TEST(void_elements_comments_and_opaque_parts)
{
    /* a marker that stood before whitespace keeps a space before the next word */
    static const int al[][2] = {{0, 0}, {1, 1}, {2, 2}, {3, 3}};
    CHECK("One line<br>two <img src=\"a.png\" alt=\"x\"> lines<!-- c --> <span translate=\"no\">@bob</span>",
          "One line two  lines ", "Eine Zeile zwei Zeilen", al,
          "Eine Zeile <br>zwei <img src=\"a.png\" alt=\"x\"> Zeilen<!-- c --><span translate=\"no\">@bob</span>");
}
END_TEST

START_TEST(entities_are_decoded_then_escaped)
{
    static const int al[][2] = {{0, 0}, {1, 1}, {2, 2}};
    CHECK("Tom &amp; <b>Jerry&#39;s</b> &lt;3", "Tom & Jerry's <3", "Tom & Jerrys <3", al,
          "Tom &amp; <b>Jerrys</b> &lt;3");
}
END_TEST

START_TEST(unplaceable_elements_are_kept_in_order)
{
    /* nothing aligned to "very": the element stays, empty, after the word aligned before it */
    static const int al[][2] = {{0, 0}, {2, 1}};
    CHECK("A <b>very</b> <i>big</i> house", "A very big house", "Ein Haus", al, "Ein <b></b><i>Haus</i>");
    /* no alignment at all: every element at the end, in order, closed */
    char *out = round_trip("<b>Hello</b> <u>world", "Hello world", "Hallo Welt", NULL, 0);
    ck_assert_str_eq(out, "<b></b>Hallo Welt<u></u>"); /* the start and the end */
    free(out);
}
END_TEST

/* Every tag of out closes what it opened, in order; returns the number of elements. */
static int well_formed(const char *out)
{
    char stack[32][16];
    int depth = 0, elements = 0;
    for (const char *p = strchr(out, '<'); p; p = strchr(p + 1, '<')) {
        if (p[1] == '!')
            continue;
        int closing = p[1] == '/';
        char name[16];
        int k = 0;
        for (const char *q = p + 1 + closing; *q && *q != '>' && *q != ' ' && k < 15; q++)
            name[k++] = *q;
        name[k] = 0;
        if (!strcmp(name, "br") || !strcmp(name, "img"))
            continue;
        if (closing) {
            ck_assert_int_gt(depth, 0);
            ck_assert_str_eq(stack[--depth], name);
        } else {
            ck_assert_int_lt(depth, 32);
            strcpy(stack[depth++], name);
            elements++;
        }
    }
    ck_assert_int_eq(depth, 0);
    return elements;
}

START_TEST(random_alignments_stay_well_formed)
{
    const char *html = "<b>A <i>very <u>big</u></i> dog</b> and <a href=\"#\">a <code>cat</code></a><br> meet "
                       "<span class=\"x\">in <sup>1</sup> park";
    mt_markup *m = mt_markup_split(html, strlen(html));
    ck_assert_ptr_nonnull(m);
    unsigned seed = 12345;
    for (int round = 0; round < 300; round++) {
        int al[24][2], n = 0;
        for (int s = 0; s < 11; s++) {
            seed = seed * 1103515245u + 12345u;
            if ((seed >> 16) % 5 == 0)
                continue; /* unaligned */
            al[n][0] = s;
            al[n][1] = (int)((seed >> 8) % 9);
            n++;
        }
        char *out = mt_markup_restore(m, "w0 w1 w2 w3 w4 w5 w6 w7 w8", (const int (*)[2])al, n);
        ck_assert_ptr_nonnull(out);
        ck_assert_int_eq(well_formed(out), 7); /* b i u a code span sup: none dropped */
        ck_assert_ptr_nonnull(strstr(out, "<a href=\"#\">"));
        ck_assert_ptr_nonnull(strstr(out, "<br>"));
        for (int k = 0; k < 9; k++) { /* every output word exactly once */
            char wd[4];
            snprintf(wd, sizeof wd, "w%d", k);
            const char *hit = strstr(out, wd);
            ck_assert_msg(hit && !strstr(hit + 1, wd), "%s in %s", wd, out);
        }
        free(out);
    }
    mt_markup_free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("markup");
    TCase *tc = tcase_create("markup");
    tcase_add_test(tc, the_issue_example);
    tcase_add_test(tc, nested_elements_and_link_attributes);
    tcase_add_test(tc, reordered_words_follow_the_alignment);
    tcase_add_test(tc, void_elements_comments_and_opaque_parts);
    tcase_add_test(tc, entities_are_decoded_then_escaped);
    tcase_add_test(tc, unplaceable_elements_are_kept_in_order);
    tcase_add_test(tc, random_alignments_stay_well_formed);
    suite_add_tcase(s, tc);
    return mt_check_run(srunner_create(s));
}
