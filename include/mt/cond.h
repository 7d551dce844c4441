/* cond.h: a condition variable whose timed waits measure CLOCK_MONOTONIC, the clock of
 * every deadline and lease timer here (a step of the wall clock must neither cut a wait
 * short nor stretch it). Used by the service's queue, the server's watchers and the
 * store's connection pool and job claims.
 *
 * Thread-safety: mt_cond_init_monotonic as pthread_cond_init: once per variable, before
 * any thread uses it; the clock functions are pure.
 * Errors: pthread_cond_init's result (0: done). Ownership: the caller destroys it with
 * pthread_cond_destroy.
 */
#ifndef MT_UTIL_COND_H
#define MT_UTIL_COND_H

#include <pthread.h>
#include <time.h>

int mt_cond_init_monotonic(pthread_cond_t *cond);

/* CLOCK_MONOTONIC now, in seconds: the clock of these waits and of timers beside them. */
double mt_cond_now(void);

/* The CLOCK_MONOTONIC time `sec` seconds from now, as pthread_cond_timedwait takes it. */
struct timespec mt_cond_deadline(double sec);

#endif
