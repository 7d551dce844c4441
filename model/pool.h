/* pool.h: a worker state's own threads for splitting one matrix product or loop.
 * A pool is driven by one thread at a time (its owner); tasks run on the owner and on
 * the pool's threads. Internal to model/. */
#ifndef MT_POOL_H
#define MT_POOL_H

typedef struct mt_pool mt_pool;
typedef void (*mt_pool_fn)(void *ctx, int task, int n_tasks);

/* threads counts the owner: threads == 1 creates no thread. NULL when out of resources. */
mt_pool *mt_pool_create(int threads);
void mt_pool_free(mt_pool *pool);
int mt_pool_threads(const mt_pool *pool);

/* Runs fn(ctx, i, n_tasks) for i in [0, n_tasks) across the pool; returns when all ran. */
void mt_pool_run(mt_pool *pool, mt_pool_fn fn, void *ctx, int n_tasks);

#endif
