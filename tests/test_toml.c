/* test_toml.c: the TOML-subset reader of config files on its own (config/toml.h): the
 * items it yields, value types and escapes, and errors that name line and column. What
 * the items mean to mt-server (settings, [[models]]) is test_config.c's part. */
#include <check.h>

#include "check_main.h"
#include <stdlib.h>
#include <string.h>

#include "../config/toml.h"

static char err[256];

/* Reads every item of text; returns the number read, or -1 on error (err says why). */
static int read_all(const char *text, mt_toml_item *items, int cap)
{
    mt_toml_reader r;
    mt_toml_init(&r, text, strlen(text), "t.toml", err, sizeof err);
    err[0] = '\0';
    int n = 0, ev;
    mt_toml_item it;
    while ((ev = mt_toml_next(&r, &it)) > 0) {
        ck_assert_int_lt(n, cap);
        items[n++] = it;
    }
    return ev < 0 ? -1 : n;
}

static void clear_all(mt_toml_item *items, int n)
{
    for (int i = 0; i < n; i++) mt_toml_value_clear(&items[i].value);
}

static void expect_error(const char *text, const char *want)
{
    mt_toml_item items[8];
    int n = read_all(text, items, 8);
    ck_assert_msg(n == -1, "expected failure for: %s", text);
    ck_assert_msg(strstr(err, want) != NULL, "message '%s' lacks '%s'", err, want);
}

START_TEST(items_in_order_with_positions)
{
    mt_toml_item it[8];
    const char *text = "\xEF\xBB\xBF# comment\n[server]\nport = 8_080 # why\n\n[[models]]\r\n"
                       "path = 'm'\n\"quoted key\" = [\"a\", \"b\",]\n";
    int n = read_all(text, it, 8);
    ck_assert_msg(n == 5, "%d items: %s", n, err);
    ck_assert_str_eq(it[0].name, "server");
    ck_assert_int_eq(it[0].array, 0);
    ck_assert_int_eq(it[0].line, 2);
    ck_assert_str_eq(it[1].name, "port");
    ck_assert_int_eq(it[1].value.type, MT_TOML_INT);
    ck_assert_int_eq(it[1].value.i, 8080);
    ck_assert_int_eq(it[1].line, 3);
    ck_assert_int_eq(it[1].value.col, 8);
    ck_assert_str_eq(it[2].name, "models");
    ck_assert_int_eq(it[2].array, 1);
    ck_assert_int_eq(it[3].value.type, MT_TOML_STR);
    ck_assert_str_eq(it[3].value.s, "m");
    ck_assert_str_eq(it[4].name, "quoted key");
    ck_assert_int_eq(it[4].value.type, MT_TOML_ARRAY);
    ck_assert_int_eq(it[4].value.n_items, 2);
    ck_assert_str_eq(it[4].value.items[1], "b");
    clear_all(it, n);
}
END_TEST

START_TEST(value_types_and_escapes)
{
    mt_toml_item it[8];
    int n = read_all("a = -12\nb = 2.5e1\nc = true\nd = false\ne = \"x\\u00e9\\t\\\"\"\nf = 'c:\\\\n'\n", it, 8);
    ck_assert_msg(n == 6, "%s", err);
    ck_assert_int_eq(it[0].value.i, -12);
    ck_assert_int_eq(it[1].value.type, MT_TOML_FLOAT);
    ck_assert_double_eq(it[1].value.f, 25.0);
    ck_assert_int_eq(it[2].value.type, MT_TOML_BOOL);
    ck_assert_int_eq(it[2].value.b, 1);
    ck_assert_int_eq(it[3].value.b, 0);
    ck_assert_str_eq(it[4].value.s, "x\xC3\xA9\t\"");
    ck_assert_str_eq(it[5].value.s, "c:\\\\n"); /* literal strings keep backslashes */
    ck_assert_str_eq(mt_toml_type_name(MT_TOML_ARRAY), "an array");
    clear_all(it, n);
    ck_assert_int_eq(read_all("", it, 8), 0);
    ck_assert_int_eq(read_all("# only a comment", it, 8), 0);
}
END_TEST

START_TEST(errors_name_line_and_column)
{
    expect_error("a = \"abc\n", "t.toml:1:5: unterminated string");
    expect_error("\nport 8080\n", "t.toml:2:6: expected '=' after key 'port'");
    expect_error("a = 1 2\n", "t.toml:1:7: expected end of line");
    expect_error("a =\n", "t.toml:1:4: missing value for key 'a'");
    expect_error("a = {b = 1}\n", "t.toml:1:5: inline tables are not supported");
    expect_error("a.b = 1\n", "t.toml:1:1: dotted keys are not supported");
    expect_error("a = 0x10\n", "t.toml:1:5: invalid value '0x10'");
    expect_error("a = [1]\n", "t.toml:1:6: arrays may only hold strings");
    expect_error("a = \"\xC3\x28\"\n", "t.toml:1:6: invalid UTF-8 in string");
    expect_error("[server\n", "expected ']' after table name");
    expect_error("[[models]\n", "expected ']]' after table name");
    expect_error("= 3\n", "t.toml:1:1: expected a key, found '='");
    expect_error("a = \"\xC3\xA9\" x\n", "t.toml:1:9: expected end of line"); /* columns count characters */
}
END_TEST

int main(void)
{
    Suite *s = suite_create("toml");
    TCase *tc = tcase_create("toml");
    tcase_add_test(tc, items_in_order_with_positions);
    tcase_add_test(tc, value_types_and_escapes);
    tcase_add_test(tc, errors_name_line_and_column);
    suite_add_tcase(s, tc);
    return mt_check_run(srunner_create(s));
}
