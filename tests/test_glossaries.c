/* test_glossaries.c: glossaries kept per API key (include/mt/store_glossaries.h) in SQLite (a file,
 * and ":memory:"), and in PostgreSQL when MT_TEST_PG_URL names a database (set by
 * tests/test_glossaries_pg.py, which starts a private PostgreSQL 15): create, list, get
 * with entries, delete, another key's glossary unknown, ids that are no UUID unknown,
 * limits on entries, bytes and glossaries per key with their own results, SQL-special
 * text stored unchanged, and the glossaries still there after the file is opened again. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "store_glossaries.h"

static char err[512];

static int count_cb(void *user, const mt_glossary_info *g)
{
    int *n = user;
    (*n)++;
    ck_assert_int_eq((int)strlen(g->id), 36);
    return 0;
}

/* The whole life of glossaries on gs (a fresh backend; no glossary of "key-a" or "key-b"). */
static void exercise(mt_glossaries *gs)
{
    const char *special = "It's \"q\"; DROP TABLE mt_glossaries; -- \\ $1 %s Straße 日本語";
    mt_glossary_info a, b, got;
    ck_assert_int_eq(mt_glossaries_create(gs, "key-a", special, "en", "de", "file\tDatei\nserver\tServer\n", 2, &a,
                                          err, sizeof err), MT_STORE_OK);
    ck_assert_int_eq((int)strlen(a.id), 36);
    ck_assert_int_eq(a.id[14], '4'); /* version 4 */
    ck_assert_str_eq(a.name, special);
    ck_assert_int_eq(a.entry_count, 2);
    ck_assert_msg(strlen(a.created) == 24 && a.created[10] == 'T' && a.created[23] == 'Z', "created %s", a.created);
    ck_assert_int_eq(mt_glossaries_create(gs, "key-a", "two", "de", "en", "Datei\tfile\n", 1, &b, err, sizeof err),
                     MT_STORE_OK);
    ck_assert_str_ne(a.id, b.id);
    int n = 0;
    ck_assert_int_eq(mt_glossaries_list(gs, "key-a", count_cb, &n, err, sizeof err), 2);
    ck_assert_int_eq(n, 2);
    n = 0;
    ck_assert_int_eq(mt_glossaries_list(gs, "key-b", count_cb, &n, err, sizeof err), 0);
    char *entries = NULL;
    ck_assert_int_eq(mt_glossaries_get(gs, "key-a", a.id, &got, &entries, err, sizeof err), 1);
    ck_assert_str_eq(entries, "file\tDatei\nserver\tServer\n");
    ck_assert_str_eq(got.name, special);
    ck_assert_str_eq(got.source, "en");
    ck_assert_str_eq(got.target, "de");
    ck_assert_str_eq(got.created, a.created);
    free(entries);
    /* upper-case ids are the same id; another key's glossary and non-UUIDs are unknown */
    char upper[40];
    snprintf(upper, sizeof upper, "%s", a.id);
    for (char *p = upper; *p; p++)
        if (*p >= 'a' && *p <= 'f') *p = (char)(*p - 32);
    ck_assert_int_eq(mt_glossaries_get(gs, "key-a", upper, &got, NULL, err, sizeof err), 1);
    ck_assert_int_eq(mt_glossaries_get(gs, "key-b", a.id, &got, &entries, err, sizeof err), 0);
    ck_assert_ptr_null(entries);
    ck_assert_int_eq(mt_glossaries_get(gs, "key-a", "x' OR '1'='1", &got, NULL, err, sizeof err), 0);
    ck_assert_int_eq(mt_glossaries_delete(gs, "key-b", a.id, err, sizeof err), 0);
    ck_assert_int_eq(mt_glossaries_delete(gs, "key-a", a.id, err, sizeof err), 1);
    ck_assert_int_eq(mt_glossaries_delete(gs, "key-a", a.id, err, sizeof err), 0);
    ck_assert_int_eq(mt_glossaries_get(gs, "key-a", a.id, &got, NULL, err, sizeof err), 0);
    ck_assert_int_eq(mt_glossaries_delete(gs, "key-a", b.id, err, sizeof err), 1);
}

/* Limits of 2 entries, 20 bytes, 2 glossaries per key. */
static void limits(mt_glossaries *gs)
{
    mt_glossary_info g;
    ck_assert_int_eq(mt_glossaries_create(gs, "key-l", "n", "en", "de", "a\tb\nc\td\ne\tf\n", 3, &g, err, sizeof err),
                     MT_GLOSSARIES_TOO_LARGE);
    ck_assert_msg(strstr(err, "at most 2 entries"), "%s", err);
    ck_assert_int_eq(mt_glossaries_create(gs, "key-l", "n", "en", "de", "aaaaaaaaaaaaaaaaaaaaa\tb\n", 1, &g, err,
                                          sizeof err), MT_GLOSSARIES_TOO_LARGE);
    ck_assert_int_eq(mt_glossaries_create(gs, "key-l", "1", "en", "de", "a\tb\n", 1, &g, err, sizeof err), MT_STORE_OK);
    ck_assert_int_eq(mt_glossaries_create(gs, "key-l", "2", "en", "de", "a\tb\n", 1, &g, err, sizeof err), MT_STORE_OK);
    ck_assert_int_eq(mt_glossaries_create(gs, "key-l", "3", "en", "de", "a\tb\n", 1, &g, err, sizeof err),
                     MT_GLOSSARIES_TOO_MANY);
    ck_assert_msg(strstr(err, "2 glossaries"), "%s", err);
    /* another key has its own count */
    ck_assert_int_eq(mt_glossaries_create(gs, "key-m", "1", "en", "de", "a\tb\n", 1, &g, err, sizeof err), MT_STORE_OK);
    ck_assert_int_eq(mt_glossaries_create(gs, "key-m", "", "en", "de", "a\tb\n", 1, &g, err, sizeof err), MT_STORE_ERROR);
}

static const mt_glossaries_limits SMALL = {2, 20, 2};

START_TEST(sqlite_memory)
{
    mt_glossaries *gs = mt_glossaries_open(NULL, NULL, NULL, err, sizeof err);
    ck_assert_msg(gs != NULL, "%s", err);
    ck_assert_int_eq(mt_glossaries_shared(gs), 0);
    exercise(gs);
    mt_glossaries_close(gs);
    gs = mt_glossaries_open(NULL, ":memory:", &SMALL, err, sizeof err);
    ck_assert_msg(gs != NULL, "%s", err);
    limits(gs);
    mt_glossaries_close(gs);
}
END_TEST

START_TEST(sqlite_file)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/mt_test_glossaries_XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    mt_glossaries *gs = mt_glossaries_open(NULL, path, NULL, err, sizeof err);
    ck_assert_msg(gs != NULL, "%s", err);
    exercise(gs);
    mt_glossary_info g;
    ck_assert_int_eq(mt_glossaries_create(gs, "key-a", "kept", "en", "de", "a\tb\n", 1, &g, err, sizeof err), 0);
    mt_glossaries_close(gs);
    gs = mt_glossaries_open(NULL, path, NULL, err, sizeof err); /* opened again: still there */
    ck_assert_msg(gs != NULL, "%s", err);
    mt_glossary_info got;
    ck_assert_int_eq(mt_glossaries_get(gs, "key-a", g.id, &got, NULL, err, sizeof err), 1);
    ck_assert_str_eq(got.name, "kept");
    mt_glossaries_close(gs);
    unlink(path);
    /* a file that cannot be made: refused with its path */
    ck_assert_ptr_null(mt_glossaries_open(NULL, "/nonexistent-dir/g.db", NULL, err, sizeof err));
    ck_assert_msg(strstr(err, "/nonexistent-dir/g.db"), "%s", err);
}
END_TEST

START_TEST(postgresql)
{
    const char *url = getenv("MT_TEST_PG_URL");
    mt_store_options o = mt_store_options_default();
    o.url = url;
    mt_store *st = mt_store_open(&o, err, sizeof err);
    ck_assert_msg(st != NULL, "%s", err);
    mt_glossaries *gs = mt_glossaries_open(st, "/nonexistent-dir/unused.db", NULL, err, sizeof err);
    ck_assert_msg(gs != NULL, "%s", err);
    ck_assert_int_eq(mt_glossaries_shared(gs), 1);
    exercise(gs);
    mt_glossaries_close(gs);
    gs = mt_glossaries_open(st, NULL, &SMALL, err, sizeof err);
    limits(gs);
    mt_glossaries_close(gs);
    mt_store_close(st);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("glossaries");
    TCase *tc = tcase_create("sqlite");
    tcase_add_test(tc, sqlite_memory);
    tcase_add_test(tc, sqlite_file);
    suite_add_tcase(s, tc);
    if (getenv("MT_TEST_PG_URL") && *getenv("MT_TEST_PG_URL")) {
        TCase *pg = tcase_create("postgresql");
        tcase_set_timeout(pg, 60);
        tcase_add_test(pg, postgresql);
        suite_add_tcase(s, pg);
    }
    return mt_check_run(srunner_create(s));
}
