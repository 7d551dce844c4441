/* pool.c: one fork-join pool that any number of threads drive at once (every worker
 * state of every model in a process shares it, so a process runs as many compute threads
 * as it was given, however many models it serves).
 *
 * A driver posts its job (on its own stack) to the pool's list and claims the job's tasks
 * itself too; free helpers claim tasks of any listed job, one at a time under the lock.
 * A job leaves the list when its last task is claimed. A helper touches a job only
 * between claiming a task (while the job is listed) and adding that task to the job's
 * done counter: the driver returns once every task is done, so the job never outlives
 * its driver's stack frame.
 *
 * Helpers spin briefly before sleeping because a decoding step issues dozens of short
 * products back to back: waking a sleeping thread through a condition variable for each
 * would cost more than some products. */
#include "pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

enum { SPIN_ROUNDS = 20000 };

/* One round of a spin-wait: the CPU's pause hint (tens of cycles, less power, no memory
 * order violation to unwind when the awaited store lands), not a bare load loop. */
static inline void spin_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

typedef struct pool_job pool_job;
struct pool_job {
    mt_pool_fn fn;
    void *ctx;
    int n_tasks;
    int next;            /* under the lock: next unclaimed task */
    atomic_int done;     /* tasks finished: the last access of a helper */
    pool_job *prev, *nxt; /* under the lock: listed while tasks are unclaimed */
};

struct mt_pool {
    int helpers;
    pthread_t *ids;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    atomic_uint posted;  /* bumped for every job posted, and once more to stop */
    atomic_int stop;
    int sleepers;        /* under the lock */
    pool_job *head, *tail; /* under the lock */
};

static void unlist(mt_pool *p, pool_job *j)
{
    if (j->prev) j->prev->nxt = j->nxt;
    else p->head = j->nxt;
    if (j->nxt) j->nxt->prev = j->prev;
    else p->tail = j->prev;
    j->prev = j->nxt = NULL;
}

/* Claims the next task of job j (any listed job when j is NULL): the task's number and
 * *from its job, or -1 when none is left. */
static int claim(mt_pool *p, pool_job *j, pool_job **from)
{
    int t = -1;
    pthread_mutex_lock(&p->lock);
    if (!j) j = p->head;
    if (j && j->next < j->n_tasks) {
        t = j->next++;
        if (j->next == j->n_tasks) unlist(p, j);
    }
    pthread_mutex_unlock(&p->lock);
    *from = j;
    return t;
}

static void run_claimed(pool_job *j, int t)
{
    j->fn(j->ctx, t, j->n_tasks);
    atomic_fetch_add_explicit(&j->done, 1, memory_order_release);
}

static void *helper_main(void *arg)
{
    mt_pool *p = arg;
    /* Jobs may be posted before this thread first runs: start from the count the pool
     * was created with, not the current one, or those jobs would wait for their driver. */
    unsigned seen = 0;
    for (;;) {
        int spins = 0;
        while (atomic_load_explicit(&p->posted, memory_order_acquire) == seen) {
            if (++spins < SPIN_ROUNDS) {
                spin_pause();
                continue;
            }
            pthread_mutex_lock(&p->lock);
            p->sleepers++;
            while (atomic_load(&p->posted) == seen)
                pthread_cond_wait(&p->wake, &p->lock);
            p->sleepers--;
            pthread_mutex_unlock(&p->lock);
        }
        seen = atomic_load(&p->posted);
        if (atomic_load(&p->stop)) return NULL;
        pool_job *j;
        int t;
        while ((t = claim(p, NULL, &j)) >= 0) run_claimed(j, t);
    }
}

mt_pool *mt_pool_create(int helpers)
{
    mt_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    if (helpers > 0) {
        if (!(p->ids = calloc((size_t)helpers, sizeof *p->ids))) {
            mt_pool_free(p);
            return NULL;
        }
        for (int i = 0; i < helpers; i++) {
            if (pthread_create(&p->ids[i], NULL, helper_main, p) != 0) {
                mt_pool_free(p); /* joins the p->helpers that started */
                return NULL;
            }
            p->helpers = i + 1;
        }
    }
    return p;
}

void mt_pool_free(mt_pool *p)
{
    if (!p) return;
    if (p->ids) {
        atomic_store(&p->stop, 1);
        pthread_mutex_lock(&p->lock);
        atomic_fetch_add(&p->posted, 1);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->lock);
        for (int i = 0; i < p->helpers; i++) pthread_join(p->ids[i], NULL);
        free(p->ids);
    }
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->wake);
    free(p);
}

int mt_pool_helpers(const mt_pool *p) { return p ? p->helpers : 0; }

void mt_pool_run(mt_pool *p, mt_pool_fn fn, void *ctx, int n_tasks)
{
    if (!p || p->helpers == 0 || n_tasks <= 1) {
        for (int i = 0; i < n_tasks; i++) fn(ctx, i, n_tasks);
        return;
    }
    pool_job job = {.fn = fn, .ctx = ctx, .n_tasks = n_tasks};
    atomic_init(&job.done, 0);
    pthread_mutex_lock(&p->lock);
    job.prev = p->tail;
    if (p->tail) p->tail->nxt = &job;
    else p->head = &job;
    p->tail = &job;
    atomic_fetch_add_explicit(&p->posted, 1, memory_order_release);
    if (p->sleepers) pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    pool_job *j;
    int t;
    while ((t = claim(p, &job, &j)) >= 0) run_claimed(&job, t);
    int spins = 0;
    while (atomic_load_explicit(&job.done, memory_order_acquire) < n_tasks) {
        if (++spins > SPIN_ROUNDS) sched_yield();
        else spin_pause();
    }
}
