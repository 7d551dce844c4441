/* test_ratelimit.c: per-client token buckets on a fake clock: off by default, request
 * and character limits with exact Retry-After, refill, clients independent, oversized
 * requests, the client table bounded. */
#include <check.h>

#include "check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ratelimit.h"

static char err[256];
static double fake_now;
static double fake_clock(void *user)
{
    (void)user;
    return fake_now;
}

static mt_ratelimit *make(int rpm, long cpm, int max_clients)
{
    mt_ratelimit_options o = mt_ratelimit_options_default();
    o.requests_per_minute = rpm;
    o.chars_per_minute = cpm;
    o.max_clients = max_clients;
    o.clock = fake_clock;
    fake_now = 500;
    mt_ratelimit *rl = mt_ratelimit_create(&o, err, sizeof err);
    ck_assert_msg(rl != NULL, "%s", err);
    return rl;
}

START_TEST(test_off_by_default)
{
    mt_ratelimit_options o = mt_ratelimit_options_default();
    ck_assert_int_eq(o.requests_per_minute, 0);
    ck_assert_int_eq(o.chars_per_minute, 0);
    mt_ratelimit *rl = mt_ratelimit_create(&o, err, sizeof err);
    int ra;
    for (int i = 0; i < 1000; i++) ck_assert_int_eq(mt_ratelimit_check(rl, "a", 100000, &ra), MT_RATE_OK);
    mt_ratelimit_free(rl);
    o.requests_per_minute = -1;
    ck_assert(mt_ratelimit_create(&o, err, sizeof err) == NULL);
}
END_TEST

START_TEST(test_requests)
{
    mt_ratelimit *rl = make(6, 0, 16); /* one request per 10 s, bursts of 6 */
    int ra;
    for (int i = 0; i < 6; i++) ck_assert_int_eq(mt_ratelimit_check(rl, "1.2.3.4", 5, &ra), MT_RATE_OK);
    ck_assert_int_eq(mt_ratelimit_check(rl, "1.2.3.4", 5, &ra), MT_RATE_LIMITED);
    ck_assert_int_eq(ra, 10);
    /* Another client is not affected. */
    ck_assert_int_eq(mt_ratelimit_check(rl, "5.6.7.8", 5, &ra), MT_RATE_OK);
    fake_now += 4;
    ck_assert_int_eq(mt_ratelimit_check(rl, "1.2.3.4", 5, &ra), MT_RATE_LIMITED);
    ck_assert_int_eq(ra, 6);
    fake_now += 6;
    ck_assert_int_eq(mt_ratelimit_check(rl, "1.2.3.4", 5, &ra), MT_RATE_OK);
    ck_assert_int_eq(mt_ratelimit_check(rl, "1.2.3.4", 5, &ra), MT_RATE_LIMITED);
    /* A full minute refills the whole allowance, no more. */
    fake_now += 600;
    for (int i = 0; i < 6; i++) ck_assert_int_eq(mt_ratelimit_check(rl, "1.2.3.4", 5, &ra), MT_RATE_OK);
    ck_assert_int_eq(mt_ratelimit_check(rl, "1.2.3.4", 5, &ra), MT_RATE_LIMITED);
    mt_ratelimit_free(rl);
}
END_TEST

START_TEST(test_chars)
{
    mt_ratelimit *rl = make(0, 600, 16); /* 10 characters per second */
    int ra;
    ck_assert_int_eq(mt_ratelimit_check(rl, "k", 500, &ra), MT_RATE_OK);
    ck_assert_int_eq(mt_ratelimit_check(rl, "k", 150, &ra), MT_RATE_LIMITED);
    ck_assert_int_eq(ra, 5); /* 100 left, 50 more at 10/s */
    ck_assert_int_eq(mt_ratelimit_check(rl, "k", 100, &ra), MT_RATE_OK); /* nothing was charged */
    ck_assert_int_eq(mt_ratelimit_check(rl, "k", 601, &ra), MT_RATE_TOO_LARGE);
    mt_ratelimit_free(rl);
}
END_TEST

START_TEST(test_table_bounded)
{
    mt_ratelimit *rl = make(1, 0, 4);
    int ra;
    char key[32];
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof key, "client-%d", i);
        fake_now += 1;
        ck_assert_int_eq(mt_ratelimit_check(rl, key, 1, &ra), MT_RATE_OK);
    }
    /* The most recent clients are still tracked. */
    ck_assert_int_eq(mt_ratelimit_check(rl, "client-99", 1, &ra), MT_RATE_LIMITED);
    mt_ratelimit_free(rl);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ratelimit");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_off_by_default);
    tcase_add_test(tc, test_requests);
    tcase_add_test(tc, test_chars);
    tcase_add_test(tc, test_table_bounded);
    suite_add_tcase(s, tc);
    return mt_check_run(srunner_create(s));
}
