/* test_cache.c: the sentence cache (translator/cache.h): hits return the stored bytes,
 * misses are counted, a key is replaced in place, eviction keeps the byte budget and drops
 * the least recently used entry first, an entry larger than the budget is not stored, and
 * many entries (bucket growth) stay reachable. */
#include <check.h>

#include "check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"

static int get_str(mt_cache *c, const char *key, char *out, size_t cap)
{
    void *v;
    size_t n;
    if (!mt_cache_get(c, key, strlen(key), &v, &n)) return 0;
    ck_assert_uint_lt(n, cap);
    memcpy(out, v, n);
    out[n] = 0;
    free(v);
    return 1;
}

static void put_str(mt_cache *c, const char *key, const char *val)
{
    mt_cache_put(c, key, strlen(key), val, strlen(val));
}

START_TEST(hits_misses_and_replacement)
{
    mt_cache *c = mt_cache_create(1 << 20);
    ck_assert_ptr_nonnull(c);
    char out[64];
    ck_assert_int_eq(get_str(c, "a", out, sizeof out), 0);
    put_str(c, "a", "Ein Mann.");
    ck_assert_int_eq(get_str(c, "a", out, sizeof out), 1);
    ck_assert_str_eq(out, "Ein Mann.");
    put_str(c, "a", "Eine Frau."); /* same key: replaced, not added */
    ck_assert_int_eq(get_str(c, "a", out, sizeof out), 1);
    ck_assert_str_eq(out, "Eine Frau.");
    ck_assert_int_eq(get_str(c, "ab", out, sizeof out), 0); /* keys compare whole */
    mt_cache_stats st;
    mt_cache_get_stats(c, &st);
    ck_assert_int_eq(st.hits, 2);
    ck_assert_int_eq(st.misses, 2);
    ck_assert_int_eq(st.entries, 1);
    ck_assert_uint_gt(st.bytes, strlen("a") + strlen("Eine Frau."));
    mt_cache_free(c);
}
END_TEST

START_TEST(eviction_keeps_the_budget_and_the_recent)
{
    mt_cache *c = mt_cache_create(1000);
    char key[16], val[100], out[128];
    memset(val, 'x', 99);
    val[99] = 0;
    for (int i = 0; i < 50; i++) {
        snprintf(key, sizeof key, "k%d", i);
        put_str(c, key, val);
        if (i >= 1) ck_assert_int_eq(get_str(c, "k0", out, sizeof out), 1); /* k0 kept recent */
        mt_cache_stats st;
        mt_cache_get_stats(c, &st);
        ck_assert_uint_le(st.bytes, 1000);
    }
    ck_assert_int_eq(get_str(c, "k0", out, sizeof out), 1);
    ck_assert_int_eq(get_str(c, "k49", out, sizeof out), 1);
    ck_assert_int_eq(get_str(c, "k1", out, sizeof out), 0); /* least recently used: gone */
    mt_cache_stats st;
    mt_cache_get_stats(c, &st);
    ck_assert_int_gt(st.entries, 1);
    ck_assert_int_lt(st.entries, 10);
    /* an entry larger than the whole budget is not stored, and evicts nothing */
    char big[2000];
    memset(big, 'y', sizeof big - 1);
    big[sizeof big - 1] = 0;
    put_str(c, "big", big);
    ck_assert_int_eq(get_str(c, "big", out, sizeof out), 0);
    ck_assert_int_eq(get_str(c, "k49", out, sizeof out), 1);
    mt_cache_free(c);
}
END_TEST

START_TEST(many_entries_stay_reachable)
{
    mt_cache *c = mt_cache_create(64 << 20);
    char key[32], val[32], out[64];
    for (int i = 0; i < 20000; i++) {
        snprintf(key, sizeof key, "sentence %d", i);
        snprintf(val, sizeof val, "Satz %d", i);
        put_str(c, key, val);
    }
    for (int i = 0; i < 20000; i += 997) {
        snprintf(key, sizeof key, "sentence %d", i);
        snprintf(val, sizeof val, "Satz %d", i);
        ck_assert_int_eq(get_str(c, key, out, sizeof out), 1);
        ck_assert_str_eq(out, val);
    }
    mt_cache_stats st;
    mt_cache_get_stats(c, &st);
    ck_assert_int_eq(st.entries, 20000);
    mt_cache_free(c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cache");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, hits_misses_and_replacement);
    tcase_add_test(tc, eviction_keeps_the_budget_and_the_recent);
    tcase_add_test(tc, many_entries_stay_reachable);
    suite_add_tcase(s, tc);
    return mt_check_run(srunner_create(s));
}
