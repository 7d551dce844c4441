/* pivot.h: routes through a pivot language (English), as LibreTranslate does: where no
 * model translates source -> target but source -> en and en -> target are loaded, the
 * pair is served in two steps (internal to translator/). */
#ifndef MT_TRANSLATOR_PIVOT_H
#define MT_TRANSLATOR_PIVOT_H

#include "langs.h"
#include "service_engine.h"

/* Adds a route source -> target (hop1: source -> via, hop2: via -> target) for every
 * pair of routes that meet in `via` and whose pair no route serves yet; call once every
 * direct route is in. Returns the number added, or -1 (no memory). */
int mt_pivot_add_routes(mt_langs *l, const char *via);

/* Checks opts (resolved for pivot route `route`) as mt_pivot_prepare will use them: each
 * step's options are resolved from opts->asked over its own model's defaults and checked
 * against that model. MT_SERVICE_OK, or MT_SERVICE_INVALID with a message naming the step. */
int mt_pivot_check_options(const mt_service *svc, int route, const mt_service_options *opts, char *err,
                           size_t errlen);

/* A job for pivot route `route` (its texts as mt_service_prepare takes them, opts resolved
 * for the route): it runs the texts through hop1's model (one hypothesis each), then those
 * translations through hop2's, each step with the options mt_pivot_check_options describes
 * (n_best, markup and protected spans work as in a direct job); its outcome, results and
 * stats are the whole. Ids in or out, a target prefix and returned alignments are refused
 * (INVALID): they belong to one model. service.c hands run, cancel, expire, stats and free
 * of such a job (job->pivot set) to the functions below. */
int mt_pivot_prepare(mt_service *svc, int route, const mt_service_options *opts, int n, const char *const *texts,
                     const size_t *lens, mt_service_job **job, char *err, size_t errlen);
int mt_pivot_run(mt_service_job *job, void (*done)(mt_service_job *, void *), void *user);
int mt_pivot_cancel(mt_service_job *job, int reason);
int mt_pivot_expire(mt_service_job *job, double now);
void mt_pivot_stats(const mt_service_job *job, mt_service_stats *st);
void mt_pivot_free(mt_service_job *job);

#endif
