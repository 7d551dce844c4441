/* pool.h: the compute threads that split one matrix product or loop into tasks.
 * Public type and lifetime are in model.h (mt_pool_create / mt_pool_free); this is the
 * internal side. Thread-safety: any number of threads may call mt_pool_run on one pool at
 * once; each call's tasks run on the calling thread and on whichever helpers are free. */
#ifndef MT_POOL_H
#define MT_POOL_H

#include "model.h"

typedef void (*mt_pool_fn)(void *ctx, int task, int n_tasks);

/* Helper threads of the pool (0 for NULL). */
int mt_pool_helpers(const mt_pool *pool);

/* Runs fn(ctx, i, n_tasks) for i in [0, n_tasks) on the caller and free helpers; returns
 * when all ran. pool may be NULL (everything runs on the caller). */
void mt_pool_run(mt_pool *pool, mt_pool_fn fn, void *ctx, int n_tasks);

#endif
