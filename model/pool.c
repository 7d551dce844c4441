/* pool.c: a small fork-join pool. Workers spin briefly before sleeping because a
 * decoding step issues dozens of short products back to back: waking a sleeping
 * thread through a condition variable for each would cost more than some products. */
#include "pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

enum { SPIN_ROUNDS = 20000 };

struct mt_pool {
    int threads;
    pthread_t *ids;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    atomic_uint generation;   /* bumped for every job, and once more to stop */
    atomic_int stop;
    atomic_int next_task;
    atomic_int unfinished;    /* workers still busy with the current job */
    int sleepers;             /* under lock */
    mt_pool_fn fn;
    void *ctx;
    int n_tasks;
};

static void run_tasks(mt_pool *p)
{
    for (;;) {
        int t = atomic_fetch_add(&p->next_task, 1);
        if (t >= p->n_tasks)
            return;
        p->fn(p->ctx, t, p->n_tasks);
    }
}

static void *worker_main(void *arg)
{
    mt_pool *p = arg;
    /* Jobs may be posted before this thread first runs: start from the generation the
     * pool was created with, not the current one, or the first job would be missed. */
    unsigned seen = 0;
    for (;;) {
        int spins = 0;
        while (atomic_load_explicit(&p->generation, memory_order_acquire) == seen) {
            if (++spins < SPIN_ROUNDS)
                continue;
            pthread_mutex_lock(&p->lock);
            p->sleepers++;
            while (atomic_load(&p->generation) == seen)
                pthread_cond_wait(&p->wake, &p->lock);
            p->sleepers--;
            pthread_mutex_unlock(&p->lock);
        }
        seen = atomic_load(&p->generation);
        if (atomic_load(&p->stop))
            return NULL;
        run_tasks(p);
        atomic_fetch_sub_explicit(&p->unfinished, 1, memory_order_release);
    }
}

mt_pool *mt_pool_create(int threads)
{
    mt_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->threads = threads < 1 ? 1 : threads;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    if (p->threads > 1) {
        p->ids = calloc((size_t)p->threads - 1, sizeof *p->ids);
        if (!p->ids) {
            mt_pool_free(p);
            return NULL;
        }
        for (int i = 0; i < p->threads - 1; i++) {
            if (pthread_create(&p->ids[i], NULL, worker_main, p) != 0) {
                p->threads = i + 1; /* join only the ones that started */
                mt_pool_free(p);
                return NULL;
            }
        }
    }
    return p;
}

void mt_pool_free(mt_pool *p)
{
    if (!p)
        return;
    if (p->ids) {
        atomic_store(&p->stop, 1);
        pthread_mutex_lock(&p->lock);
        atomic_fetch_add(&p->generation, 1);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->lock);
        for (int i = 0; i < p->threads - 1; i++)
            pthread_join(p->ids[i], NULL);
        free(p->ids);
    }
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->wake);
    free(p);
}

int mt_pool_threads(const mt_pool *p) { return p->threads; }

void mt_pool_run(mt_pool *p, mt_pool_fn fn, void *ctx, int n_tasks)
{
    if (p->threads == 1 || n_tasks <= 1) {
        for (int i = 0; i < n_tasks; i++)
            fn(ctx, i, n_tasks);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    p->n_tasks = n_tasks;
    atomic_store(&p->next_task, 0);
    atomic_store(&p->unfinished, p->threads - 1);
    pthread_mutex_lock(&p->lock);
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    if (p->sleepers)
        pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    run_tasks(p);
    int spins = 0;
    while (atomic_load_explicit(&p->unfinished, memory_order_acquire) > 0)
        if (++spins > SPIN_ROUNDS)
            sched_yield();
}
