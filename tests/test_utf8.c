/* test_utf8.c: util/utf8.c's encoder against fixed bytes at every length boundary and
 * against its validator over every code point (what one writes the other reads back). */
#include <check.h>
#include <string.h>

#include "check_main.h"
#include "utf8.h"

START_TEST(put_writes_the_bytes_at_each_boundary)
{
    static const struct {
        uint32_t cp;
        const char *bytes;
    } cases[] = {{0x41, "A"},          {0x7F, "\x7F"},         {0x80, "\xC2\x80"},
                 {0x7FF, "\xDF\xBF"},  {0x800, "\xE0\xA0\x80"}, {0x20AC, "\xE2\x82\xAC"},
                 {0xFFFF, "\xEF\xBF\xBF"}, {0x10000, "\xF0\x90\x80\x80"}, {0x1F642, "\xF0\x9F\x99\x82"},
                 {0x10FFFF, "\xF4\x8F\xBF\xBF"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[4];
        size_t n = mt_utf8_put(cases[i].cp, out);
        ck_assert_uint_eq(n, strlen(cases[i].bytes));
        ck_assert_msg(memcmp(out, cases[i].bytes, n) == 0, "U+%04X", cases[i].cp);
    }
}
END_TEST

START_TEST(every_code_point_reads_back)
{
    for (uint32_t cp = 1; cp <= 0x10FFFF; cp++) {
        if (cp >= 0xD800 && cp <= 0xDFFF) continue; /* surrogates: not characters */
        char out[4];
        uint32_t back = 0;
        size_t n = mt_utf8_put(cp, out);
        /* ck_assert only on failure: a million calls of it take seconds */
        if (mt_utf8_len(out, n, &back) != (int)n || back != cp || !mt_utf8_check(out, n, NULL) ||
            mt_utf8_chars(out, n) != 1)
            ck_abort_msg("U+%04X does not read back (%zu bytes, read U+%04X)", cp, n, back);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("utf8");
    TCase *tc = tcase_create("encode");
    tcase_add_test(tc, put_writes_the_bytes_at_each_boundary);
    tcase_add_test(tc, every_code_point_reads_back);
    suite_add_tcase(s, tc);
    return mt_check_run(srunner_create(s));
}
