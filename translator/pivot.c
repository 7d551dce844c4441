/* pivot.c: the two-step routes (pivot.h). They are added after the direct routes, so a
 * direct model always wins (mt_langs_add keeps a pair's first route), and resolution
 * prefers direct routes (langs.c); submit.c runs a pivot route's texts through hop1's
 * model, then hop1's best translations through hop2's. */
#include "pivot.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "service_impl.h"
#include "status.h"

int mt_pivot_add_routes(mt_langs *l, const char *via)
{
    int n = mt_langs_count(l), added = 0;
    for (int a = 0; a < n; a++) {
        const mt_route *in = mt_langs_get(l, a);
        if (in->hop1 >= 0 || strcasecmp(in->target, via) != 0 || strcasecmp(in->source, via) == 0) continue;
        for (int b = 0; b < n; b++) {
            const mt_route *out = mt_langs_get(l, b);
            if (out->hop1 >= 0 || strcasecmp(out->source, via) != 0 || strcasecmp(out->target, via) == 0 ||
                strcasecmp(out->target, in->source) == 0)
                continue;
            int before = mt_langs_count(l);
            /* copies: mt_langs_add may move the table */
            char src[33], tgt[33];
            snprintf(src, sizeof src, "%s", in->source);
            snprintf(tgt, sizeof tgt, "%s", out->target);
            int model = in->model;
            if (mt_langs_add_pivot(l, src, tgt, model, a, b)) return -1;
            added += mt_langs_count(l) - before;
            in = mt_langs_get(l, a);
        }
    }
    return added;
}

/* ---- the two-step job ---- */

struct mt_pivot {
    mt_service *svc;
    int model2;
    mt_service_options opts2;   /* the second step's options */
    char pair2[80];             /* "en->fr", for messages */
    mt_service_job *hop[2];     /* hop[1]: made when hop[0] is done */
    pthread_mutex_t mu;         /* hop[1]'s making against cancel */
    int cancelled;              /* a cancel reason that came before hop[1] existed */
    void (*done)(mt_service_job *, void *);
    void *user;
};

static void fail(mt_service_job *j, int outcome, const char *fmt, const char *a, const char *b)
{
    j->outcome = outcome;
    snprintf(j->message, sizeof j->message, fmt, a, b);
}

/* The options of one step of pivot route `pr` (step 0: source -> via, 1: via -> target),
 * resolved as a direct request on that step's route would be: the request's own options
 * (opts->asked) over the service's defaults over that step's model's defaults (max_length,
 * num_beams, length_penalty differ between models), then checked against that model
 * (max_length against its positions, as a direct route refuses more rather than cutting
 * it). The first step gives one hypothesis to the second: n_best, scores and alignments
 * are the second step's. A message names the step. */
static int step_options(const mt_service *svc, const mt_route *pr, int step, const mt_service_options *opts,
                        mt_service_options *out, char *err, size_t errlen)
{
    const mt_route *r = mt_langs_get(svc->langs, step ? pr->hop2 : pr->hop1);
    mt_service_options d;
    mt_service_options_default(svc, r->model, &d);
    *out = *opts;
    out->search = d.search; /* the step's model data too: bad ids, unknown id */
    out->target_lang = r->by_token ? r->target : NULL;
    mt_decoding asked = opts->asked;
    if (step == 0)
        asked.set &= ~((1u << MT_OPT_N_BEST) | (1u << MT_OPT_RETURN_SCORES) | (1u << MT_OPT_RETURN_ALIGNMENTS));
    char msg[200];
    int rc = mt_service_apply_decoding(svc, &asked, &out->search, msg, sizeof msg);
    if (!rc) rc = mt_service_check_options(svc, r->model, out, msg, sizeof msg);
    if (rc)
        return mt_error(rc, err, errlen, "%s->%s is translated through %s; its %s step %s->%s: %s", pr->source,
                        pr->target, r->source, step ? "second" : "first", r->source, r->target, msg);
    return MT_SERVICE_OK;
}

/* What a pivot route refuses, then both steps' options. */
static int pivot_options(const mt_service *svc, int route, const mt_service_options *opts, mt_service_options *o1,
                         mt_service_options *o2, char *err, size_t errlen)
{
    const mt_route *r = mt_langs_get(svc->langs, route);
    const mt_route *r1 = mt_langs_get(svc->langs, r->hop1), *r2 = mt_langs_get(svc->langs, r->hop2);
    if (opts->input == MT_FORMAT_IDS || opts->output_ids || opts->target_prefix)
        return mt_error(MT_SERVICE_INVALID, err, errlen, "%s-%s is translated through %s (%s-%s, then %s-%s): "
                        "ids in or out and a target prefix belong to one model and are not taken there",
                        r->source, r->target, r1->target, r1->source, r1->target, r2->source, r2->target);
    if (opts->search.return_alignments)
        return mt_error(MT_SERVICE_INVALID, err, errlen, "%s-%s is translated through %s (%s-%s, then %s-%s): "
                        "return_alignments is not available there (the second step's alignments point into "
                        "the %s text between the steps, not into the request's)",
                        r->source, r->target, r1->target, r1->source, r1->target, r2->source, r2->target,
                        r1->target);
    int rc = step_options(svc, r, 0, opts, o1, err, errlen);
    return rc ? rc : step_options(svc, r, 1, opts, o2, err, errlen);
}

int mt_pivot_check_options(const mt_service *svc, int route, const mt_service_options *opts, char *err,
                           size_t errlen)
{
    mt_service_options o1, o2;
    return pivot_options(svc, route, opts, &o1, &o2, err, errlen);
}

int mt_pivot_prepare(mt_service *svc, int route, const mt_service_options *opts, int n, const char *const *texts,
                     const size_t *lens, mt_service_job **job, char *err, size_t errlen)
{
    *job = NULL;
    const mt_route *r = mt_langs_get(svc->langs, route);
    const mt_route *r1 = mt_langs_get(svc->langs, r->hop1), *r2 = mt_langs_get(svc->langs, r->hop2);
    mt_service_options o1;
    mt_service_job *j = calloc(1, sizeof *j);
    struct mt_pivot *p = calloc(1, sizeof *p);
    if (!j || !p) {
        free(j), free(p);
        return mt_error(MT_SERVICE_NOMEM, err, errlen, "out of memory");
    }
    pthread_mutex_init(&p->mu, NULL);
    j->svc = svc;
    j->model = r1->model;
    j->opts = *opts;
    j->n_texts = n;
    j->pivot = p;
    p->svc = svc;
    p->model2 = r2->model;
    snprintf(p->pair2, sizeof p->pair2, "%s->%s", r2->source, r2->target);
    int rc = pivot_options(svc, route, opts, &o1, &p->opts2, err, errlen);
    if (!rc) rc = mt_service_prepare(svc, r1->model, &o1, n, texts, lens, &p->hop[0], err, errlen);
    if (rc) {
        mt_pivot_free(j);
        return rc;
    }
    *job = j;
    return MT_SERVICE_OK;
}

static void hop2_done(mt_service_job *h, void *user)
{
    mt_service_job *j = user;
    struct mt_pivot *p = j->pivot;
    const char *msg;
    j->outcome = mt_service_job_outcome(h, &msg);
    snprintf(j->message, sizeof j->message, "%s", msg ? msg : "");
    if (j->outcome == MT_SERVICE_OK) { /* moved: hop[1] keeps nothing */
        j->results = h->results;
        h->results = NULL;
    }
    p->done(j, p->user);
}

static void hop1_done(mt_service_job *h, void *user)
{
    mt_service_job *j = user;
    struct mt_pivot *p = j->pivot;
    const char *msg;
    int outcome = mt_service_job_outcome(h, &msg), n = j->n_texts;
    if (outcome != MT_SERVICE_OK) {
        fail(j, outcome, "%s%s", msg ? msg : "", "");
        p->done(j, p->user);
        return;
    }
    const char **texts = calloc((size_t)n + 1, sizeof *texts);
    size_t *lens = calloc((size_t)n + 1, sizeof *lens);
    char err[256] = "";
    int rc = texts && lens ? MT_SERVICE_OK : MT_SERVICE_NOMEM;
    for (int k = 0; !rc && k < n; k++) {
        texts[k] = h->results[k].n_best > 0 && h->results[k].texts[0] ? h->results[k].texts[0] : "";
        lens[k] = strlen(texts[k]);
    }
    pthread_mutex_lock(&p->mu);
    if (!rc && p->cancelled)
        rc = p->cancelled;
    else if (!rc)
        rc = mt_service_prepare(p->svc, p->model2, &p->opts2, n, texts, lens, &p->hop[1], err, sizeof err);
    pthread_mutex_unlock(&p->mu);
    free(texts), free(lens);
    int run = rc == MT_SERVICE_OK ? mt_service_run(p->svc, p->hop[1], hop2_done, j) : rc;
    if (rc == MT_SERVICE_OK && run == MT_SERVICE_OK) return;
    if (rc == MT_SERVICE_OK) /* refused: full, or shutting down (for good) */
        fail(j, run, "%s (second step %s)", mt_service_outcome_text(run), p->pair2);
    else if (rc == MT_SERVICE_NOMEM)
        fail(j, MT_SERVICE_FAILED, "out of memory%s%s", "", "");
    else if (rc == MT_SERVICE_INVALID)
        fail(j, MT_SERVICE_FAILED, "second step %s: %s", p->pair2, err);
    else
        j->outcome = rc; /* cancelled before the second step */
    p->done(j, p->user);
}

int mt_pivot_run(mt_service_job *j, void (*done)(mt_service_job *, void *), void *user)
{
    struct mt_pivot *p = j->pivot;
    p->done = done;
    p->user = user;
    return mt_service_run(p->svc, p->hop[0], hop1_done, j);
}

int mt_pivot_cancel(mt_service_job *j, int reason)
{
    struct mt_pivot *p = j->pivot;
    pthread_mutex_lock(&p->mu);
    if (!p->cancelled) p->cancelled = reason;
    mt_service_job *second = p->hop[1];
    pthread_mutex_unlock(&p->mu);
    int did = mt_service_job_cancel(p->hop[0], reason);
    return second ? did | mt_service_job_cancel(second, reason) : did;
}

int mt_pivot_expire(mt_service_job *j, double now)
{
    struct mt_pivot *p = j->pivot;
    pthread_mutex_lock(&p->mu);
    mt_service_job *second = p->hop[1];
    pthread_mutex_unlock(&p->mu);
    int did = mt_service_job_expire(p->hop[0], now);
    return second ? did | mt_service_job_expire(second, now) : did; /* hop[1] has the deadline too */
}

void mt_pivot_stats(const mt_service_job *j, mt_service_stats *st)
{
    struct mt_pivot *p = j->pivot;
    mt_service_job_stats(p->hop[0], st);
    if (!p->hop[1]) return;
    mt_service_stats s;
    mt_service_job_stats(p->hop[1], &s);
    st->sentences += s.sentences;
    st->source_tokens += s.source_tokens;
    st->target_tokens += s.target_tokens;
    if (s.t_done > st->t_done) st->t_done = s.t_done;
}

void mt_pivot_free(mt_service_job *j)
{
    struct mt_pivot *p = j->pivot;
    for (int i = 0; i < 2; i++) mt_service_job_free(p->hop[i]);
    for (int t = 0; j->results && t < j->n_texts; t++) mt_translation_clear(&j->results[t]);
    free(j->results);
    pthread_mutex_destroy(&p->mu);
    free(p);
    free(j);
}
