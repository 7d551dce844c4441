/* fuzz_fixed_time.h: a frozen time(2) for libFuzzer targets that run libxml2. libxml2
 * seeds its string hash tables from time(NULL), and its string comparisons (through the
 * sanitizers' strcmp/memcmp interceptors) feed libFuzzer's mutations, so with the real
 * clock the suite's fixed -seed and -runs try other inputs each second. This definition in
 * the executable takes the place of libc's for libxml2 (and libzip's file times) too.
 * Include it once, in libFuzzer builds only (the replay tools keep the real clock). */
#ifndef MT_FUZZ_FIXED_TIME_H
#define MT_FUZZ_FIXED_TIME_H
#ifdef MT_LIBFUZZER
#include <time.h>

time_t time(time_t *t)
{
    const time_t fixed = 1700000000; /* 2023-11-14 */
    if (t)
        *t = fixed;
    return fixed;
}
#endif
#endif
