/* cond.h: a condition variable whose timed waits measure CLOCK_MONOTONIC, the clock of
 * every deadline and lease timer here (a step of the wall clock must neither cut a wait
 * short nor stretch it). Used by the service's queue, the server's watchers and the
 * store's connection pool and job claims.
 *
 * Thread-safety: as pthread_cond_init: once per variable, before any thread uses it.
 * Errors: pthread_cond_init's result (0: done). Ownership: the caller destroys it with
 * pthread_cond_destroy.
 */
#ifndef MT_UTIL_COND_H
#define MT_UTIL_COND_H

#include <pthread.h>

int mt_cond_init_monotonic(pthread_cond_t *cond);

#endif
