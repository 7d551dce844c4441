/* test_detect.c: language identification over libexttextcat: real sentences in the
 * candidate languages, restriction to the candidates, confidences, bad input. */
#include <check.h>

#include "check_main.h"
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "detect.h"

static char err[512];
static const char *const endefr[] = {"en", "de", "fr"};

static mt_detector *make(const char *const *codes, int n)
{
    mt_detector *det = mt_detector_create(codes, n, NULL, err, sizeof err);
    ck_assert_msg(det != NULL, "create: %s", err);
    return det;
}

/* The best answer for text. */
static const char *best(mt_detector *det, const char *text, double *conf)
{
    static mt_detect_result r[5];
    int n = mt_detect(det, text, strlen(text), r, 5);
    ck_assert_msg(n >= 1, "no answer for '%s'", text);
    for (int i = 1; i < n; i++) ck_assert(r[i - 1].confidence >= r[i].confidence);
    if (conf) *conf = r[0].confidence;
    return r[0].code;
}

START_TEST(test_sentences_restricted)
{
    mt_detector *det = make(endefr, 3);
    ck_assert_int_eq(mt_detector_count(det), 3);
    double conf;
    ck_assert_str_eq(best(det, "A man in an orange hat starring at something.", &conf), "en");
    ck_assert(conf > 0 && conf <= 100);
    ck_assert_str_eq(best(det, "Ein Mann mit einem orangefarbenen Hut, der etwas anstarrt.",
                          NULL), "de");
    ck_assert_str_eq(best(det, "Un homme avec un chapeau orange regardant quelque chose.",
                          NULL), "fr");
    ck_assert_str_eq(best(det, "Zwei junge Männer stehen auf der Straße.", NULL), "de");
    mt_detector_free(det);
}
END_TEST

START_TEST(test_all_languages)
{
    mt_detector *det = make(NULL, 0);
    ck_assert_int_gt(mt_detector_count(det), 100);
    ck_assert_str_eq(best(det, "Eine Gruppe von Menschen steht vor einem Iglu und wartet "
                               "darauf, dass die Sonne untergeht.", NULL), "de");
    ck_assert_str_eq(best(det, "Un groupe de personnes se tient devant un igloo et attend "
                               "que le soleil se couche.", NULL), "fr");
    mt_detector_free(det);
}
END_TEST

START_TEST(test_restriction_limits_answers)
{
    /* Spanish text with only en/de candidates must answer one of them, never "es". */
    static const char *const ende[] = {"en", "de"};
    mt_detector *det = make(ende, 2);
    mt_detect_result r[5];
    const char *es = "Un hombre con un sombrero naranja mirando algo en la calle.";
    int n = mt_detect(det, es, strlen(es), r, 5);
    for (int i = 0; i < n; i++)
        ck_assert(strcmp(r[i].code, "en") == 0 || strcmp(r[i].code, "de") == 0);
    mt_detector_free(det);
    /* The same text unrestricted is Spanish. */
    det = make(NULL, 0);
    ck_assert_str_eq(best(det, es, NULL), "es");
    mt_detector_free(det);
}
END_TEST

START_TEST(test_no_evidence_and_errors)
{
    mt_detector *det = make(endefr, 3);
    mt_detect_result r[2];
    ck_assert_int_eq(mt_detect(det, "", 0, r, 2), 0);
    ck_assert_int_eq(mt_detect(det, "x", 1, r, 0), 0);
    ck_assert_int_eq(mt_detect(NULL, "x", 1, r, 2), -1);
    /* Confidences of all answers sum to 100 when all are returned. */
    const char *t = "Hello";
    int n = mt_detect(det, t, strlen(t), r, 2);
    ck_assert_int_ge(n, 0);
    mt_detector_free(det);

    static const char *const bad[] = {"en", "xx-nope"};
    ck_assert(mt_detector_create(bad, 2, NULL, err, sizeof err) == NULL);
    ck_assert_msg(strstr(err, "xx-nope") != NULL, "%s", err);
    ck_assert(mt_detector_create(endefr, 3, "/nonexistent", err, sizeof err) == NULL);
    ck_assert_msg(strstr(err, "/nonexistent/fpdb.conf") != NULL, "%s", err);
    mt_detector_free(NULL);
}
END_TEST

/* The library reads no environment and writes no file: a TMPDIR that does not exist
 * (the old code wrote the language list there) changes nothing, and no descriptor is
 * left open after create. */
START_TEST(test_no_temporary_file)
{
    setenv("TMPDIR", "/nonexistent-mt-detect-tmp", 1);
    int before = open("/dev/null", O_RDONLY);
    ck_assert_int_ge(before, 0);
    close(before);
    mt_detector *det = mt_detector_create(endefr, 3, NULL, err, sizeof err);
    ck_assert_msg(det != NULL, "%s", err);
    int after = open("/dev/null", O_RDONLY);
    ck_assert_int_eq(after, before); /* the lowest free descriptor is the same: none leaked */
    close(after);
    mt_detect_result r[1];
    const char *t = "Das ist ein Haus und wir wohnen darin.";
    ck_assert_int_eq(mt_detect(det, t, strlen(t), r, 1), 1);
    ck_assert_str_eq(r[0].code, "de");
    mt_detector_free(det);
    unsetenv("TMPDIR");
}
END_TEST

START_TEST(test_confidence_sums)
{
    mt_detector *det = make(endefr, 3);
    mt_detect_result r[5];
    const char *t = "Le chat";
    int n = mt_detect(det, t, strlen(t), r, 5);
    double sum = 0;
    for (int i = 0; i < n; i++) sum += r[i].confidence;
    if (n > 0) ck_assert(sum > 99.9 && sum < 100.1);
    mt_detector_free(det);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("detect");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_sentences_restricted);
    tcase_add_test(tc, test_all_languages);
    tcase_add_test(tc, test_restriction_limits_answers);
    tcase_add_test(tc, test_no_evidence_and_errors);
    tcase_add_test(tc, test_confidence_sums);
    tcase_add_test(tc, test_no_temporary_file);
    suite_add_tcase(s, tc);
    return mt_check_run(srunner_create(s));
}
