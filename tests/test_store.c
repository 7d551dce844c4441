/* test_store.c: the store's interface without a database server: the SQLite backend
 * through mt_store (suggestions kept, keys and counters refused as unsupported), no
 * backend at all, URLs redacted for logs, and a PostgreSQL that cannot be reached refused
 * at open with libpq's reason and never the password. (The PostgreSQL backend itself runs
 * against a real server in tests/test_shared_state.py.) */
#include <check.h>

#include "check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store.h"

static char err[512];

START_TEST(test_sqlite_backend)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/mt_test_store_XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    unlink(path);
    mt_store_options o = mt_store_options_default();
    o.sqlite_path = path;
    mt_store *st = mt_store_open(&o, err, sizeof err);
    ck_assert_msg(st != NULL, "%s", err);
    ck_assert_int_eq(mt_store_shared(st), 0);
    ck_assert_int_eq(mt_store_has_suggestions(st), 1);
    ck_assert_int_eq(mt_store_ping(st, err, sizeof err), MT_STORE_OK);
    ck_assert_int_eq(mt_store_suggest_add(st, "It's \"q\" \\ $1", "Straße", "en", "de", err, sizeof err), 0);
    ck_assert_int_eq(mt_store_suggest_count(st, err, sizeof err), 1);
    mt_store_key k;
    ck_assert_int_eq(mt_store_key_find(st, "k", &k, err, sizeof err), MT_STORE_UNSUPPORTED);
    ck_assert_int_eq(mt_store_key_add(st, "k", "n", 0, err, sizeof err), MT_STORE_UNSUPPORTED);
    ck_assert_msg(strstr(err, "shared_state") != NULL, "%s", err);
    int retry = 0;
    ck_assert_int_eq(mt_store_rate_charge(st, "c", 1, 10, 5, 100, &retry, err, sizeof err), MT_STORE_UNSUPPORTED);
    mt_store_close(st);
    unlink(path);
}
END_TEST

START_TEST(test_no_backend)
{
    mt_store_options o = mt_store_options_default();
    mt_store *st = mt_store_open(&o, err, sizeof err);
    ck_assert(st != NULL);
    ck_assert_int_eq(mt_store_has_suggestions(st), 0);
    ck_assert_int_eq(mt_store_suggest_add(st, "a", "b", "en", "de", err, sizeof err), MT_STORE_UNSUPPORTED);
    mt_store_close(st);
}
END_TEST

START_TEST(test_redact)
{
    char out[300];
    mt_store_redact("postgresql://mt:s3cret@db.example:5432/mt?sslmode=require", out, sizeof out);
    ck_assert_str_eq(out, "postgresql://mt:***@db.example:5432/mt?sslmode=require");
    mt_store_redact("postgresql://mt@db/mt", out, sizeof out);
    ck_assert_str_eq(out, "postgresql://mt@db/mt");
    mt_store_redact("postgresql:///mt?host=/run/pg&password=p%40ss&user=x", out, sizeof out);
    ck_assert_str_eq(out, "postgresql:///mt?host=/run/pg&password=***&user=x");
    mt_store_redact("host=db password=abc dbname=mt", out, sizeof out);
    ck_assert_str_eq(out, "host=db password=*** dbname=mt");
}
END_TEST

START_TEST(test_unreachable_database)
{
    mt_store_options o = mt_store_options_default();
    o.url = "postgresql://mt:s3cret-pw@/mt?host=/nonexistent-mt-dir&port=1";
    o.connect_timeout_s = 2;
    mt_store *st = mt_store_open(&o, err, sizeof err);
    ck_assert(st == NULL);
    ck_assert_msg(strstr(err, "database:") != NULL, "%s", err);
    ck_assert_msg(strstr(err, "s3cret-pw") == NULL, "%s", err);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("store");
    TCase *tc = tcase_create("store");
    tcase_add_test(tc, test_sqlite_backend);
    tcase_add_test(tc, test_no_backend);
    tcase_add_test(tc, test_redact);
    tcase_add_test(tc, test_unreachable_database);
    suite_add_tcase(s, tc);
    return mt_check_run(srunner_create(s));
}
