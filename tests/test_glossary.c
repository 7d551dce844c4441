/* test_glossary.c: DeepL's glossary entry formats (include/mt/glossary.h): TSV and CSV
 * entries, the rules every entry is held to, the line each error names, and TSV written
 * back. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "glossary.h"
#include "utf8.h"

static mt_glossary *ok(const char *text, mt_glossary_format fmt)
{
    char err[256] = "";
    mt_glossary *g = NULL;
    int rc = mt_glossary_parse(text, strlen(text), fmt, "en", "de", &g, err, sizeof err);
    ck_assert_msg(rc == 0 && g, "'%s' refused: %s", text, err);
    return g;
}

static void bad(const char *text, size_t len, mt_glossary_format fmt, const char *fragment)
{
    char err[256] = "";
    mt_glossary *g = (mt_glossary *)1;
    int rc = mt_glossary_parse(text, len, fmt, "en", "de", &g, err, sizeof err);
    ck_assert_msg(rc == -1 && g == NULL, "'%s' accepted", text);
    ck_assert_msg(strstr(err, fragment), "'%s': message '%s' lacks '%s'", text, err, fragment);
}

START_TEST(tsv_entries)
{
    mt_glossary *g = ok("artist\tKünstler\r\n\nprize\tPreis\rthe  prize \t  der Preis \n", MT_GLOSSARY_TSV);
    ck_assert_int_eq(mt_glossary_count(g), 3);
    ck_assert_str_eq(mt_glossary_source(g, 0), "artist");
    ck_assert_str_eq(mt_glossary_target(g, 0), "Künstler");
    ck_assert_str_eq(mt_glossary_source(g, 2), "the  prize"); /* inner spaces kept */
    ck_assert_str_eq(mt_glossary_target(g, 2), "der Preis");
    char *tsv = mt_glossary_tsv(g);
    ck_assert_str_eq(tsv, "artist\tKünstler\nprize\tPreis\nthe  prize\tder Preis\n");
    mt_glossary *h = ok(tsv, MT_GLOSSARY_TSV);
    ck_assert_int_eq(mt_glossary_count(h), 3);
    free(tsv);
    mt_glossary_free(g);
    mt_glossary_free(h);
    g = ok("\xEF\xBB\xBF" "a\tb", MT_GLOSSARY_TSV); /* a BOM and no final newline */
    ck_assert_str_eq(mt_glossary_source(g, 0), "a");
    mt_glossary_free(g);
}
END_TEST

START_TEST(tsv_errors)
{
    bad("", 0, MT_GLOSSARY_TSV, "no entries");
    bad("\n\r\n", 3, MT_GLOSSARY_TSV, "no entries");
    bad("a\tb\nno tab here\n", 16, MT_GLOSSARY_TSV, "line 2: no tab");
    bad("a\tb\tc\n", 6, MT_GLOSSARY_TSV, "line 1: more than one tab");
    bad("a\t \n", 4, MT_GLOSSARY_TSV, "line 1: the target term is empty");
    bad("\tb\n", 3, MT_GLOSSARY_TSV, "source term is empty");
    bad("a\tb\nc\td\na\te\n", 12, MT_GLOSSARY_TSV, "line 3: the source term \"a\" is already on line 1");
    bad("a\x01x\tb\n", 6, MT_GLOSSARY_TSV, "U+0001");
    bad("a\tb\xC2\x85\n", 6, MT_GLOSSARY_TSV, "U+0085");
    bad("a\xE2\x80\xA8\tb\n", 7, MT_GLOSSARY_TSV, "U+2028");
    bad("a\xFF\tb\n", 5, MT_GLOSSARY_TSV, "not valid UTF-8");
    /* found by fuzz-glossary: a BOM after spaces, trimmed to the term's start, was lost
     * when the TSV written back was read again */
    bad("   \xEF\xBB\xBF" "a\t!   ", 10, MT_GLOSSARY_TSV, "U+FEFF");
    bad("a\0b\tc", 5, MT_GLOSSARY_TSV, "U+0000");
}
END_TEST

START_TEST(csv_entries)
{
    mt_glossary *g = ok("artist,Künstler\n\"prize, first\",\"der \"\"erste\"\" Preis\"\r\nsun,Sonne,EN,DE\n",
                        MT_GLOSSARY_CSV);
    ck_assert_int_eq(mt_glossary_count(g), 3);
    ck_assert_str_eq(mt_glossary_source(g, 1), "prize, first");
    ck_assert_str_eq(mt_glossary_target(g, 1), "der \"erste\" Preis");
    ck_assert_str_eq(mt_glossary_target(g, 2), "Sonne");
    mt_glossary_free(g);
}
END_TEST

START_TEST(csv_errors)
{
    bad("a,b,c\n", 6, MT_GLOSSARY_CSV, "line 1: 3 fields");
    bad("a,b\nc\n", 6, MT_GLOSSARY_CSV, "line 2: 1 fields");
    bad("a,b,c,d,e\n", 10, MT_GLOSSARY_CSV, "more than 4 fields");
    bad("a,b,fr,de\n", 10, MT_GLOSSARY_CSV, "not the glossary's");
    bad("\"a,b\n", 5, MT_GLOSSARY_CSV, "not closed");
    bad("\"a\"x,b\n", 7, MT_GLOSSARY_CSV, "after a closing quote");
    bad("a\"b,c\n", 6, MT_GLOSSARY_CSV, "quote inside an unquoted field");
    bad("\"a\nb\",c\n", 8, MT_GLOSSARY_CSV, "U+000A");
    bad("x,y\nx,z\n", 8, MT_GLOSSARY_CSV, "line 2: the source term \"x\" is already on line 1");
}
END_TEST

/* text masked with g: the masked text is want. */
static mt_glossary_masked *masked(const mt_glossary *g, const char *text, int markup, const char *want)
{
    mt_glossary_masked *m = mt_glossary_mask(g, text, strlen(text), markup);
    ck_assert_ptr_nonnull(m);
    ck_assert_msg(strcmp(mt_glossary_masked_text(m), want) == 0, "'%s' masked as '%s', not '%s'", text,
                  mt_glossary_masked_text(m), want);
    return m;
}

static void unmasked(const mt_glossary_masked *m, const char *translation, const char *want)
{
    char *u = mt_glossary_unmask(m, translation);
    ck_assert_ptr_nonnull(u);
    ck_assert_msg(strcmp(u, want) == 0, "'%s' unmasked as '%s', not '%s'", translation, u, want);
    free(u);
}

/* Terms and languages in messages are cut to whole UTF-8 characters (the server puts the
 * message in a JSON answer). */
START_TEST(messages_valid_utf8)
{
    char text[400] = "x", err[256]; /* odd: a cut at an even byte count splits a character */
    for (int i = 0; i < 40; i++) strcat(text, "\xC3\xBC"); /* 80 bytes of "ü" */
    strcat(text, "\tx\n");
    char twice[900];
    snprintf(twice, sizeof twice, "a\tb\n%s%s", text, text);
    mt_glossary *g = NULL;
    ck_assert_int_eq(mt_glossary_parse(twice, strlen(twice), MT_GLOSSARY_TSV, NULL, NULL, &g, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "is already on line 2") && mt_utf8_check(err, strlen(err), NULL), "%s", err);
    const char *csv = "a,b,\xC3\xBC\xC3\xBC\xC3\xBC\xC3\xBC\xC3\xBC\xC3\xBC\xC3\xBC\xC3\xBC\xC3\xBC\xC3\xBC\xC3\xBC\xC3\xBC,\xFF\n";
    ck_assert_int_eq(mt_glossary_parse(csv, strlen(csv), MT_GLOSSARY_CSV, "en", "de", &g, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "not the glossary's") && mt_utf8_check(err, strlen(err), NULL), "%s", err);
}
END_TEST

START_TEST(mask_terms)
{
    mt_glossary *g = ok("file\tDatei\nfile manager\tDateimanager\nC++\tC++\nüber\tueber\n"
                        "click\tklicken\nname\tName\n.NET\tPunktNET\n", MT_GLOSSARY_TSV);
    /* word boundaries; the longest term; first letter in either case; a text's own "{1}"
     * puts the masks above it */
    mt_glossary_masked *m = masked(g, "File manager: the file, profile, files, {1} C++.", 0,
                                   "{2}: the {3}, profile, files, {1} {4}.");
    ck_assert_int_eq(mt_glossary_masked_count(m), 3);
    unmasked(m, "{2}: die {3}, Profil, {1} {4}.", "Dateimanager: die Datei, Profil, {1} C++.");
    unmasked(m, "die {3} {3} und {2}", "die Datei und Dateimanager C++"); /* copy dropped, lost one added */
    /* a plain translation that holds every target term (first letter either way, inside a
     * compound too) needs no masks; one with a term too few does */
    ck_assert_int_eq(mt_glossary_masked_present(m, "Der Dateimanager: die datei, C++"), 1);
    ck_assert_int_eq(mt_glossary_masked_present(m, "Der Ordner: die Datei, C++"), 0);
    mt_glossary_masked_free(m);
    /* a capital at the start comes back at the start; inside the sentence it does not */
    m = masked(g, "Click here.", 0, "{0} here.");
    unmasked(m, "\"{0} hier.", "\"Klicken hier.");
    unmasked(m, "Hier {0}.", "Hier klicken.");
    mt_glossary_masked_free(m);
    m = masked(g, "Über alles, click", 0, "{0} alles, {1}"); /* Latin-1 capitals fold */
    unmasked(m, "{0} alles {1}", "Ueber alles klicken");
    mt_glossary_masked_free(m);
    /* nothing inside placeholders, URLs or (markup) tags and entities */
    m = masked(g, "{name} %(name)s https://x.org/file name", 0, "{name} %(name)s https://x.org/file {0}");
    mt_glossary_masked_free(m);
    m = masked(g, "<a title=\"file\" href=\"/click\">file</a> &name; x.NET", 1,
               "<a title=\"file\" href=\"/click\">{0}</a> &name; x{1}");
    mt_glossary_masked_free(m);
    m = masked(g, "nothing here", 0, "nothing here");
    ck_assert_int_eq(mt_glossary_masked_count(m), 0);
    mt_glossary_masked_free(m);
    mt_glossary_free(g);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("glossary");
    TCase *tc = tcase_create("formats");
    tcase_add_test(tc, tsv_entries);
    tcase_add_test(tc, tsv_errors);
    tcase_add_test(tc, csv_entries);
    tcase_add_test(tc, csv_errors);
    tcase_add_test(tc, messages_valid_utf8);
    suite_add_tcase(s, tc);
    TCase *te = tcase_create("enforcement");
    tcase_add_test(te, mask_terms);
    suite_add_tcase(s, te);
    return mt_check_run(srunner_create(s));
}
