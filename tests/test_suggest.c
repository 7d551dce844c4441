/* test_suggest.c: the SQLite suggestions store: create, add, count, reopen (persisted),
 * text with quotes and UTF-8 stored verbatim, errors naming the file. */
#include <check.h>

#include "check_main.h"
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "suggest.h"

static char err[512];

static void temp_path(char *path, size_t cap)
{
    snprintf(path, cap, "/tmp/mt_test_suggest_XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    unlink(path); /* SQLite creates it */
}

START_TEST(test_add_count_reopen)
{
    char path[64];
    temp_path(path, sizeof path);
    mt_suggest *st = mt_suggest_open(path, err, sizeof err);
    ck_assert_msg(st != NULL, "%s", err);
    ck_assert_int_eq(mt_suggest_count(st, err, sizeof err), 0);
    ck_assert_int_eq(mt_suggest_add(st, "Hello", "Hallo", "en", "de", err, sizeof err), 0);
    ck_assert_int_eq(mt_suggest_add(st, "It's \"quoted\"; DROP TABLE x", "Straße — ok",
                                    "en", "de", err, sizeof err), 0);
    ck_assert_int_eq(mt_suggest_count(st, err, sizeof err), 2);
    mt_suggest_close(st);

    st = mt_suggest_open(path, err, sizeof err);
    ck_assert_msg(st != NULL, "%s", err);
    ck_assert_int_eq(mt_suggest_count(st, err, sizeof err), 2);
    mt_suggest_close(st);

    /* Read back with SQLite directly: the text is stored verbatim. */
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *stmt;
    ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT q, s, source, target FROM suggestions "
                                        "ORDER BY id DESC LIMIT 1", -1, &stmt, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(stmt), SQLITE_ROW);
    ck_assert_str_eq((const char *)sqlite3_column_text(stmt, 0), "It's \"quoted\"; DROP TABLE x");
    ck_assert_str_eq((const char *)sqlite3_column_text(stmt, 1), "Straße — ok");
    ck_assert_str_eq((const char *)sqlite3_column_text(stmt, 2), "en");
    ck_assert_str_eq((const char *)sqlite3_column_text(stmt, 3), "de");
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    unlink(path);
}
END_TEST

START_TEST(test_errors)
{
    ck_assert(mt_suggest_open("/nonexistent-dir/x.db", err, sizeof err) == NULL);
    ck_assert_msg(strstr(err, "/nonexistent-dir/x.db") != NULL, "%s", err);
    ck_assert(mt_suggest_open("", err, sizeof err) == NULL);
    char path[64];
    temp_path(path, sizeof path);
    mt_suggest *st = mt_suggest_open(path, err, sizeof err);
    ck_assert(st != NULL);
    ck_assert_int_eq(mt_suggest_add(st, NULL, "x", "en", "de", err, sizeof err), -1);
    ck_assert_int_eq(mt_suggest_count(st, err, sizeof err), 0);
    mt_suggest_close(st);
    unlink(path);
    /* Not a database: a clear error naming the file. */
    FILE *f = fopen(path, "w");
    ck_assert(f != NULL);
    fputs("this is not an SQLite database, just text that is long enough to matter\n", f);
    fclose(f);
    st = mt_suggest_open(path, err, sizeof err);
    ck_assert(st == NULL);
    ck_assert_msg(strstr(err, path) != NULL, "%s", err);
    unlink(path);
    mt_suggest_close(NULL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("suggest");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_add_count_reopen);
    tcase_add_test(tc, test_errors);
    suite_add_tcase(s, tc);
    return mt_check_run(srunner_create(s));
}
