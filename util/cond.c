/* cond.c: see cond.h. */
#include "cond.h"

int mt_cond_init_monotonic(pthread_cond_t *cond)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(cond, &ca);
    pthread_condattr_destroy(&ca);
    return rc;
}

double mt_cond_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct timespec mt_cond_deadline(double sec)
{
    double t = mt_cond_now() + sec;
    struct timespec ts;
    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    return ts;
}
