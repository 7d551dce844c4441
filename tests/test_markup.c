/* test_markup.c: inline HTML taken out of a block and put back around aligned words. */
#include <check.h>

#include "check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "markup.h"
#include "protect.h"

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
    CHECK("One line<br>two lines<!-- c --> <span translate=\"no\">@bob</span>",
          "One line two lines ", "Eine Zeile zwei Zeilen", al,
          "Eine Zeile <br>zwei Zeilen<!-- c --><span translate=\"no\">@bob</span>");
    /* amid the text an element goes as a mask; the model dropped it: placed by alignment
     * (at the block's end, the opaque one goes to the end as before) */
    static const int al2[][2] = {{0, 0}, {1, 1}, {2, 2}, {4, 3}};
    CHECK("One line<br>two <img src=\"a.png\" alt=\"x\"> lines<!-- c --> <span translate=\"no\">@bob</span>",
          "One line two {1} lines ", "Eine Zeile zwei Zeilen", al2,
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

/* "<b><b>...x...</b></b>" nested `depth` deep (malloc'd). */
static char *nested(int depth, const char *open, const char *close, const char *inner)
{
    size_t lo = strlen(open), lc = strlen(close), li = strlen(inner);
    char *s = malloc((lo + lc) * (size_t)depth + li + 1), *p = s;
    ck_assert_ptr_nonnull(s);
    for (int i = 0; i < depth; i++, p += lo)
        memcpy(p, open, lo);
    memcpy(p, inner, li);
    p += li;
    for (int i = 0; i < depth; i++, p += lc)
        memcpy(p, close, lc);
    *p = 0;
    return s;
}

static size_t count_of(const char *s, const char *needle)
{
    size_t n = 0, l = strlen(needle); /* not strstr: ASan's measures the rest every call */
    for (; *s; s++)
        n += !strncmp(s, needle, l);
    return n;
}

START_TEST(deep_nesting_does_not_recurse)
{
    /* 300,000 nested inline elements in one paragraph (2.1 MB): the restore used to
     * recurse once per level and overflow the stack. */
    enum { DEPTH = 300000 };
    char *html = nested(DEPTH, "<b>", "</b>", "Hallo");
    mt_markup *m = mt_markup_split(html, strlen(html));
    ck_assert_ptr_nonnull(m);
    ck_assert_str_eq(mt_markup_text(m), "Hallo");
    ck_assert_int_eq(mt_markup_count(m), DEPTH);
    static const int al[][2] = {{0, 0}};
    char *out = mt_markup_restore(m, "Hello", al, 1);
    ck_assert_ptr_nonnull(out);
    char *want = nested(DEPTH, "<b>", "</b>", "Hello");
    ck_assert_str_eq(out, want);
    free(out);
    /* unclosed: every level gets its closing tag */
    html[strlen(html) - 4 * DEPTH] = 0;
    mt_markup_free(m);
    m = mt_markup_split(html, strlen(html));
    ck_assert_ptr_nonnull(m);
    out = mt_markup_restore(m, "Hello", NULL, 0);
    ck_assert_ptr_nonnull(out);
    ck_assert_uint_eq(count_of(out, "</b>"), DEPTH);
    free(out);
    mt_markup_free(m);
    free(want);
    free(html);
}
END_TEST

/* Split and restore of html with `words` words and the identity alignment: their steps. */
static size_t work_of(const char *html, int words)
{
    mt_markup *m = mt_markup_split(html, strlen(html));
    ck_assert_ptr_nonnull(m);
    int (*al)[2] = malloc(sizeof *al * (size_t)(words + 1));
    char *tr = malloc((size_t)words * 8 + 1), *p = tr;
    ck_assert(al && tr);
    for (int k = 0; k < words; k++) {
        al[k][0] = al[k][1] = k;
        p += sprintf(p, k ? " w%d" : "w%d", k % 1000);
    }
    *p = 0;
    size_t steps = 0;
    char *out = mt_markup_restore_steps(m, tr, (const int(*)[2])al, words, &steps);
    ck_assert_ptr_nonnull(out);
    steps += mt_markup_split_steps(m);
    free(out);
    free(tr);
    free(al);
    mt_markup_free(m);
    return steps;
}

/* n sibling elements, each around one word (malloc'd). */
static char *siblings(int n)
{
    char *s = malloc((size_t)n * 16 + 1), *p = s;
    ck_assert_ptr_nonnull(s);
    for (int k = 0; k < n; k++)
        p += sprintf(p, "<i>w%d</i> ", k % 1000);
    *p = 0;
    return s;
}

START_TEST(work_is_linear_in_siblings)
{
    /* N sibling elements in one paragraph: every element used to scan all N nodes for
     * its children (quadratic). The work is counted, not timed: four times the
     * elements cost at most five times the work (a log factor allowed), and a bounded
     * number of steps per input byte. */
    size_t w[3];
    int n[3] = {2000, 8000, 32000};
    for (int i = 0; i < 3; i++) {
        char *html = siblings(n[i]);
        w[i] = work_of(html, n[i]);
        ck_assert_msg(w[i] < 64 * strlen(html), "%zu steps for %zu bytes", w[i], strlen(html));
        free(html);
    }
    ck_assert_msg(w[1] < 5 * w[0] && w[2] < 5 * w[1], "steps %zu %zu %zu", w[0], w[1], w[2]);
}
END_TEST

START_TEST(work_is_linear_in_depth_and_stray_tags)
{
    /* Deep nesting around many words, and stray closing tags inside deep nesting (each
     * used to walk the whole open chain). */
    size_t w[2];
    for (int i = 0; i < 2; i++) {
        int depth = i ? 40000 : 10000;
        char *inner = siblings(depth), *html = nested(depth, "<b>", "</u>", inner);
        w[i] = work_of(html, depth);
        ck_assert_msg(w[i] < 64 * strlen(html), "%zu steps for %zu bytes", w[i], strlen(html));
        free(html);
        free(inner);
    }
    ck_assert_msg(w[1] < 5 * w[0], "steps %zu %zu", w[0], w[1]);
}
END_TEST

START_TEST(notranslate_attributes_are_parsed)
{
    static const int al[][2] = {{0, 0}, {1, 1}, {2, 2}};
    /* class="notranslate" (a token of the list) is opaque, like translate="no" */
    CHECK("Say <span class=\"x notranslate\">hi there</span> now", "Say {0} now", "Sag {0} jetzt", al,
          "Sag <span class=\"x notranslate\">hi there</span> jetzt");
    CHECK("Say <a translate=no>hi there</a> now", "Say {0} now", "Sag {0} jetzt", al,
          "Sag <a translate=no>hi there</a> jetzt");
    /* not "no", and not an attribute: translated */
    static const int al4[][2] = {{0, 0}, {1, 1}, {2, 2}, {3, 3}};
    CHECK("Say <span translate=\"nope\">hi there</span> now", "Say hi there now", "Sag hallo da jetzt", al4,
          "Sag <span translate=\"nope\">hallo da</span> jetzt");
    CHECK("Say <span title=\"a translate=no\">hi there</span> now", "Say hi there now", "Sag hallo da jetzt", al4,
          "Sag <span title=\"a translate=no\">hallo da</span> jetzt");
    CHECK("Say <span class=\"notranslated\">hi there</span> now", "Say hi there now", "Sag hallo da jetzt", al4,
          "Sag <span class=\"notranslated\">hallo da</span> jetzt");
}
END_TEST

/* The service's path for one HTML block: protected spans wrapped, markup taken out; the
 * plain text the model would see. */
static char *model_text_of(const char *block)
{
    char *wrapped = mt_html_wrap_protected(block, strlen(block), MT_PROTECT_ALL | MT_PROTECT_LONG_WORD);
    ck_assert_ptr_nonnull(wrapped);
    mt_markup *m = mt_markup_split(wrapped, strlen(wrapped));
    ck_assert_ptr_nonnull(m);
    char *text = strdup(mt_markup_text(m));
    mt_markup_free(m);
    free(wrapped);
    return text;
}

START_TEST(notranslate_links_are_kept_whole)
{
    /* <a class="notranslate"> / <a translate="no">: the link's end was computed from the
     * whole element's end, a negative size (malloc(2^64-3)); now the element is kept. */
    const char *cases[] = {
        "See <a class=\"notranslate\" href=\"/x\">the Home page</a> now.",
        "See <a translate=\"no\" href=\"/x\">the Home page</a> now.",
        "See <a href=\"/x\" translate=no>the Home page</a> now.",
        "See <span class=\"menu notranslate\">the Home page</span> now.",
        "See <A CLASS='notranslate'>the <b>Home</b> page</A> now.",
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const char *in = cases[k];
        char *wrapped = mt_html_wrap_protected(in, strlen(in), MT_PROTECT_ALL | MT_PROTECT_LONG_WORD);
        ck_assert_ptr_nonnull(wrapped);
        const char *start = strchr(in, '<'), *end = strstr(in, " now.");
        char want[512];
        snprintf(want, sizeof want, "See %s%.*s%s now.", MT_HTML_KEEP_OPEN, (int)(end - start), start,
                 MT_HTML_KEEP_CLOSE);
        ck_assert_str_eq(wrapped, want);
        mt_html_unwrap_protected(wrapped);
        ck_assert_str_eq(wrapped, in);
        free(wrapped);
        char *text = model_text_of(in);
        ck_assert_msg(!strstr(text, "Home"), "'%s' sent for %s", text, in);
        free(text);
    }
}
END_TEST

START_TEST(translate_attribute_values_are_read_exactly)
{
    /* translate="nope", translate=no inside another attribute's value, a class that only
     * contains the word: translated */
    const char *cases[] = {
        "See <a translate=\"nope\" href=\"/x\">the Home page</a> now.",
        "See <a title=\"translate=no\" href=\"/x\">the Home page</a> now.",
        "See <a title='a translate=\"no\" b'>the Home page</a> now.",
        "See <span data-x=\" translate=no\">the Home page</span> now.",
        "See <span class=\"notranslated\">the Home page</span> now.",
        "See <span data-class=\"notranslate\">the Home page</span> now.",
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        char *text = model_text_of(cases[k]);
        ck_assert_msg(strstr(text, "the Home page"), "'%s' sent for %s", text, cases[k]);
        free(text);
    }
}
END_TEST

START_TEST(nested_links_are_linear)
{
    /* 20,000 nested <a> (unclosed inner ones): each used to scan to the first </a> and
     * decode everything up to it. The wrapped block is the input byte for byte. */
    char *html = nested(20000, "<a href=x>", "</a>", "Hello world");
    char *wrapped = mt_html_wrap_protected(html, strlen(html), MT_PROTECT_ALL | MT_PROTECT_LONG_WORD);
    ck_assert_ptr_nonnull(wrapped);
    ck_assert_str_eq(wrapped, html);
    free(wrapped);
    free(html);
}
END_TEST

START_TEST(masked_elements_keep_their_quotes)
{
    /* Opaque and void elements go to the model as masks "{N}" with the text around them
     * as written: the quotes and brackets stay on the right side, where the model put
     * them (as markers placed by alignment: "Drücke '' <x id="1"/>zum Beenden"). */
    static const int al[][2] = {{0, 0}, {1, 1}, {2, 2}, {3, 3}};
    CHECK("Press '<x id=\"1\"/>' to quit", "Press '{0}' to quit", "Drücke '{0}' zum Beenden", al,
          "Drücke '<x id=\"1\"/>' zum Beenden");
    CHECK("Press (<x id=\"1\"/>) to quit", "Press ({0}) to quit", "Drücke „{0}“ zum Beenden", al,
          "Drücke „<x id=\"1\"/>“ zum Beenden");
    /* the service's wrapped protected span: an opaque element like any other */
    CHECK("See \"" MT_HTML_KEEP_OPEN "https://x.io/a" MT_HTML_KEEP_CLOSE "\" now", "See \"{0}\" now",
          "Siehe \"{0}\"jetzt", al, "Siehe \"" MT_HTML_KEEP_OPEN "https://x.io/a" MT_HTML_KEEP_CLOSE "\"jetzt");
    /* a second copy is dropped; the text's own "{0}" is text (masks are numbered above it) */
    CHECK("Got {0} and <img src=a> here", "Got {0} and {1} here", "Habe {0} und {1} {1} hier", al,
          "Habe {0} und <img src=a>  hier");
    /* inside an element, the mask's element stays inside it */
    CHECK("Click <b>the <img src=i> icon</b>", "Click the {1} icon", "Klicke das {1} Symbol", al,
          "Klicke <b>das <img src=i> Symbol</b>");
}
END_TEST

START_TEST(processing_instructions_are_one_marker)
{
    /* "<?" opens a processing instruction (HTML5: a bogus comment) that runs to the first
     * '>', whatever it holds: html.c, the service's wrapping and the split read the same
     * markup, and what looks like an end tag inside it closes nothing. */
    const char *pi = "<a><?</a<mt-keep tran>";
    ck_assert_uint_eq(mt_html_tag_end(pi, strlen(pi), 3), strlen(pi));
    char *wrapped = mt_html_wrap_protected(pi, strlen(pi), MT_PROTECT_ALL | MT_PROTECT_LONG_WORD);
    ck_assert_ptr_nonnull(wrapped);
    ck_assert_str_eq(wrapped, pi);
    free(wrapped);
    mt_markup *m = mt_markup_split(pi, strlen(pi));
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(mt_markup_count(m), 2); /* the link and the marker */
    mt_markup_free(m);
    static const int none[][2] = {{0, 0}};
    /* the link was never closed: it gets its closing tag after the marker */
    char *out = round_trip(pi, "", "", none, 0);
    ck_assert_str_eq(out, "<a><?</a<mt-keep tran></a>");
    free(out);
    /* inside an element's words it stays a marker; the element closes at its own end tag */
    static const int al[][2] = {{0, 0}, {1, 1}, {2, 2}};
    CHECK("<b>big<?x </b> dog</b> runs", "big dog runs", "grosser Hund rennt", al,
          "<b>grosser <?x </b> Hund</b> rennt");
}
END_TEST

START_TEST(slash_in_an_unquoted_value_opens_an_element)
{
    /* "<a href=http://x.org/>" opens a link (HTML5: the '/' belongs to the unquoted value):
     * the link moves with its word; the split used to read it as a self-closed tag and the
     * "</a>" as a stray one, so the words left the link behind */
    static const int al[][2] = {{0, 2}, {1, 1}, {2, 0}};
    CHECK("Go <a href=http://x.org/>here</a> now", "Go here now", "jetzt hier los", al,
          "jetzt <a href=http://x.org/>hier</a> los");
    /* the same for a do-not-translate link: html.c's wrapper and the split agree (a
     * fuzzing finding: the block came back with an extra "</a>") */
    const char *nt = "<a>x <a class=\"notranslate\" h=i/>y</a>.</a>";
    char *w = mt_html_wrap_protected(nt, strlen(nt), MT_PROTECT_ALL | MT_PROTECT_LONG_WORD);
    ck_assert_ptr_nonnull(w);
    mt_markup *m = mt_markup_split(w, strlen(w));
    ck_assert_ptr_nonnull(m);
    ck_assert_str_eq(mt_markup_text(m), "x {1}."); /* the kept link is one placeholder */
    static const int al2[][2] = {{0, 0}, {1, 1}};
    char *out = mt_markup_restore(m, "x {1}.", al2, 2);
    ck_assert_ptr_nonnull(out);
    mt_html_unwrap_protected(out);
    ck_assert_str_eq(out, nt);
    free(out);
    mt_markup_free(m);
    free(w);
}
END_TEST

START_TEST(end_tags_are_read_as_html_c_reads_them)
{
    /* "</a/>", "</a >" and "</A x>" end a link for html.c and the split alike, so the
     * service's wrapper around a link that is one URL ends there too: it used to look for
     * "</a>" only and wrap across the enclosing link ("<a><KEEP><a>URL</a/>x</a></KEEP>"). */
    const unsigned kinds = MT_PROTECT_ALL | MT_PROTECT_LONG_WORD;
    const char *nested = "<a><a>https://x.io/</a/>x</a>";
    char *w = mt_html_wrap_protected(nested, strlen(nested), kinds);
    ck_assert_ptr_nonnull(w);
    ck_assert_str_eq(w, "<a>" MT_HTML_KEEP_OPEN "<a>https://x.io/</a/>" MT_HTML_KEEP_CLOSE "x</a>");
    free(w);
    const char *spaced = "<b><a href=\"https://x.io/\">https://x.io/</A x></b>";
    w = mt_html_wrap_protected(spaced, strlen(spaced), kinds);
    ck_assert_ptr_nonnull(w);
    ck_assert_str_eq(w, "<b>" MT_HTML_KEEP_OPEN "<a href=\"https://x.io/\">https://x.io/</A x>" MT_HTML_KEEP_CLOSE "</b>");
    free(w);
    /* a name html.c reads as another element ("a.b") is no link */
    const char *other = "<a.b>https://x.io/</a.b>";
    w = mt_html_wrap_protected(other, strlen(other), kinds);
    ck_assert_ptr_nonnull(w);
    ck_assert_str_eq(w, "<a.b>" MT_HTML_KEEP_OPEN "https://x.io/" MT_HTML_KEEP_CLOSE "</a.b>");
    free(w);
    /* an opaque element ends at its first matching end tag, "</span/>" included, as in
     * html.c: what follows is text to translate */
    mt_markup *m = mt_markup_split("<span translate=\"no\">x</span/> y</span>", 39);
    ck_assert_ptr_nonnull(m);
    ck_assert_str_eq(mt_markup_text(m), " y");
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
    tcase_add_test(tc, deep_nesting_does_not_recurse);
    tcase_add_test(tc, work_is_linear_in_siblings);
    tcase_add_test(tc, work_is_linear_in_depth_and_stray_tags);
    tcase_add_test(tc, notranslate_attributes_are_parsed);
    tcase_add_test(tc, notranslate_links_are_kept_whole);
    tcase_add_test(tc, translate_attribute_values_are_read_exactly);
    tcase_add_test(tc, nested_links_are_linear);
    tcase_add_test(tc, masked_elements_keep_their_quotes);
    tcase_add_test(tc, processing_instructions_are_one_marker);
    tcase_add_test(tc, end_tags_are_read_as_html_c_reads_them);
    tcase_add_test(tc, slash_in_an_unquoted_value_opens_an_element);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return mt_check_run(srunner_create(s));
}
