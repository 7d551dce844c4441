/* submit.c: the request layer. A request is routed (source "auto": each text's language
 * detected, routing.c), split into one part per route, each part's options resolved for its model
 * (the request's over the service's defaults over the model's, then the policy), and
 * each part prepared as a job of the per-model layer (service.c). The parts run at once,
 * side by side in the shared queue; when the last finishes, their translations are put
 * back in request order and their stats merged, and the caller's callback runs once.
 *
 * A glossary (glossary.h) masks, in each text holding one of its source terms, the terms
 * as brace fields. The text's answer is the plain translation when every target term is
 * in it (the model chose the term and inflected the words around it), else the masked
 * copy's translation with the target terms put in (measured by tools/eval_glossary.py:
 * masking every text costs about 4 chrF points on software messages). The plain texts
 * run first; only the masked copies of those whose translation lacks a term run after,
 * on each part's saved options (most plain translations already hold their terms, and
 * translating every copy alongside doubled the time). With a target prefix (per text,
 * owned by the caller) both run in one go as before. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pivot.h"
#include "status.h"
#include "service_impl.h"

typedef struct {
    int route;
    int n;                /* texts of the request routed here */
    int *texts;           /* their indexes in the request (second phase: in gmask) */
    mt_service_job *job;
    mt_service_options opts; /* resolved for the route, for the second phase */
} part;

struct mt_service_task {
    mt_service *svc;
    int n_texts, n_parts, main_route, detected;
    int refused;          /* a part's refusal: MT_SERVICE_BUSY or _SHUTDOWN (else 0) */
    part *parts;
    int *route_of;        /* per text: a route, or MT_ROUTE_SAME */
    char **same;          /* per MT_ROUTE_SAME text: its copy, the answer (else NULL) */
    mt_route same_route;  /* what MT_ROUTE_SAME texts report: target -> target, a model into it */
    double *conf;         /* per text: detection confidence (100: not detected per text) */
    mt_translation *results;
    /* a glossary: texts [n_asked, n_texts) are masked copies of texts extra_of[k - n_asked] */
    int n_asked;
    int *extra_of;
    mt_glossary_masked **gmask; /* per extra text */
    /* two phases: gmask[k] masks text extra_of[k], k < n_masked; parts2 its second phase */
    int two_phase, n_masked, n_parts2, refused2, cancelled;
    part *parts2;
    pthread_mutex_t mu;   /* parts2's making against cancel and expire */
    atomic_int pending2;
    atomic_int pending;   /* parts not finished, + 1 while start runs */
    int outcome;
    char message[256];
    void (*done)(mt_service_task *, void *);
    void *user;
};

void mt_service_request_init(mt_service_request *rq)
{
    memset(rq, 0, sizeof *rq);
    rq->input = MT_FORMAT_TEXT;
    rq->protect = MT_PROTECT_ALL;
}

/* ---------------------------------------------------------------- options */

#define GIVEN(set, id) ((set) & (1u << (id)))

int mt_service_apply_decoding(const mt_service *svc, const mt_decoding *asked, mt_search_options *o, char *err,
                              size_t errlen)
{
    mt_decoding d = {{0}, 0};
    mt_decoding_merge(&d, &svc->defaults);
    mt_decoding_merge(&d, asked);
    mt_decoding_apply(&d, o); /* the model's defaults, then d over them */
    unsigned set = asked->set;
    if (!GIVEN(svc->defaults.set | set, MT_OPT_N_BEST)) o->n_best = 1;
    /* n_best without a beam size widens the beam; sampling draws one hypothesis */
    if (GIVEN(set, MT_OPT_N_BEST) && !GIVEN(set, MT_OPT_BEAM_SIZE) && o->beam_size < o->n_best)
        o->beam_size = o->n_best;
    if (o->sampling_topk != 1 && !GIVEN(set, MT_OPT_BEAM_SIZE) && o->n_best <= 1) o->beam_size = 1;
    if (o->n_best > o->beam_size)
        return mt_error(MT_SERVICE_INVALID, err, errlen, "n_best (%d) must not exceed beam_size (%d)", o->n_best,
                        o->beam_size);
    return MT_SERVICE_OK;
}

int mt_service_resolve_options(const mt_service *svc, int route, const mt_service_request *rq,
                               mt_service_options *opts, char *err, size_t errlen)
{
    const mt_route *r = mt_langs_get(svc->langs, route);
    mt_service_options_default(svc, r->model, opts);
    opts->input = rq->input;
    opts->output_ids = rq->output_ids;
    opts->target_lang = r->by_token ? r->target : NULL;
    opts->target_prefix = rq->target_prefix;
    opts->prefix_ids = rq->prefix_ids;
    opts->protect = rq->protect;
    opts->one_sentence = rq->one_sentence;
    opts->deadline = rq->deadline;
    opts->asked = rq->decoding;
    int rc = mt_service_apply_decoding(svc, &rq->decoding, &opts->search, err, errlen);
    if (rc) return rc;
    if (r->hop1 >= 0) /* each step against its own model */
        return mt_pivot_check_options(svc, route, opts, err, errlen);
    return mt_service_check_options(svc, r->model, opts, err, errlen);
}

int mt_service_resolve(const mt_service *svc, int route, const mt_service_request *rq, mt_decoding *out, char *err,
                       size_t errlen)
{
    mt_service_options opts;
    int rc = mt_service_resolve_options(svc, route, rq, &opts, err, errlen);
    if (rc) return rc;
    for (int id = 0; id < MT_OPT_COUNT; id++) out->v[id] = mt_option_get(&opts.search, id);
    out->set = (1u << MT_OPT_COUNT) - 1;
    return MT_SERVICE_OK;
}

/* ---------------------------------------------------------------- submit */

void mt_service_task_free(mt_service_task *t)
{
    if (!t) return;
    for (int p = 0; p < t->n_parts; p++) {
        mt_service_job_free(t->parts[p].job);
        free(t->parts[p].texts);
    }
    for (int p = 0; p < t->n_parts2; p++) {
        mt_service_job_free(t->parts2[p].job);
        free(t->parts2[p].texts);
    }
    free(t->parts2);
    pthread_mutex_destroy(&t->mu);
    for (int i = 0; t->results && i < t->n_texts; i++) mt_translation_clear(&t->results[i]);
    free(t->results);
    int n_masks = t->two_phase ? t->n_masked : t->n_texts - t->n_asked;
    for (int k = 0; t->gmask && k < n_masks; k++) mt_glossary_masked_free(t->gmask[k]);
    free(t->gmask);
    free(t->extra_of);
    free(t->parts);
    for (int i = 0; t->same && i < t->n_texts; i++) free(t->same[i]);
    free(t->same);
    free(t->route_of);
    free(t->conf);
    free(t);
}

/* Groups the texts by route, routes in order of their first text. */
static int make_parts(mt_service_task *t)
{
    t->parts = calloc((size_t)t->n_texts + 1, sizeof *t->parts);
    if (!t->parts) return -1;
    for (int i = 0; i < t->n_texts; i++) {
        int p = 0;
        if (t->route_of[i] == MT_ROUTE_SAME) continue; /* answered by finish() */
        while (p < t->n_parts && t->parts[p].route != t->route_of[i]) p++;
        if (p == t->n_parts) {
            t->parts[p].route = t->route_of[i];
            if (!(t->parts[p].texts = calloc((size_t)t->n_texts, sizeof(int)))) return -1;
            t->n_parts++;
        }
        t->parts[p].texts[t->parts[p].n++] = i;
    }
    if (t->n_texts == 0) { /* nothing to translate: one empty part answers for the route */
        t->parts[0].route = t->main_route;
        t->n_parts = 1;
    }
    return 0;
}

/* A job of n texts on route, with its resolved options. */
static int prepare_route(mt_service *svc, int route, const mt_service_options *opts, int n, const char *const *texts,
                         const size_t *lens, mt_service_job **job, char *err, size_t errlen)
{
    if (mt_langs_get(svc->langs, route)->hop1 >= 0) /* through a pivot language */
        return mt_pivot_prepare(svc, route, opts, n, texts, lens, job, err, errlen);
    return mt_service_prepare(svc, mt_langs_get(svc->langs, route)->model, opts, n, texts, lens, job, err, errlen);
}

/* Resolves part p's options and prepares its texts. */
static int prepare_part(mt_service_task *t, int p, const mt_service_request *rq, char *err, size_t errlen)
{
    part *pt = &t->parts[p];
    size_t cap = (size_t)pt->n + 1;
    const char **texts = calloc(cap, sizeof *texts), **prefix = calloc(cap, sizeof *prefix);
    size_t *lens = calloc(cap, sizeof *lens);
    int rc = MT_SERVICE_NOMEM;
    if (!texts || !prefix || !lens) {
        mt_error(-1, err, errlen, "out of memory");
        goto out;
    }
    for (int k = 0; k < pt->n; k++) {
        texts[k] = rq->texts[pt->texts[k]];
        lens[k] = rq->lens[pt->texts[k]];
        prefix[k] = rq->target_prefix ? rq->target_prefix[pt->texts[k]] : NULL;
    }
    mt_service_request sub = *rq;
    sub.target_prefix = rq->target_prefix ? prefix : NULL;
    mt_service_options opts;
    if ((rc = mt_service_resolve_options(t->svc, pt->route, &sub, &opts, err, errlen))) goto out;
    rc = prepare_route(t->svc, pt->route, &opts, pt->n, texts, lens, &pt->job, err, errlen);
    pt->opts = opts;
    pt->opts.target_prefix = NULL; /* prefix[] goes; the second phase runs without prefixes */
out:
    free(texts), free(prefix), free(lens);
    return rc;
}

static int submit_texts(mt_service *svc, const mt_service_request *rq, mt_service_task **task, char *err,
                        size_t errlen);

/* rq with a glossary: its texts, then (in the same run only with target prefixes) a
 * masked copy of each that holds a term. */
static int submit_glossary(mt_service *svc, const mt_service_request *rq, mt_service_task **task, char *err,
                           size_t errlen)
{
    int n = rq->n, m = 0, rc = MT_SERVICE_NOMEM, two_phase = !rq->target_prefix;
    mt_glossary_masked **gm = calloc((size_t)n + 1, sizeof *gm);
    const char **texts = calloc(2 * (size_t)n + 1, sizeof *texts), **prefix = calloc(2 * (size_t)n + 1, sizeof *prefix);
    size_t *lens = calloc(2 * (size_t)n + 1, sizeof *lens);
    int *extra_of = calloc((size_t)n + 1, sizeof *extra_of);
    if (!gm || !texts || !prefix || !lens || !extra_of) goto out;
    for (int i = 0; i < n; i++) {
        texts[i] = rq->texts[i], lens[i] = rq->lens[i];
        prefix[i] = rq->target_prefix ? rq->target_prefix[i] : NULL;
    }
    for (int i = 0; i < n; i++) {
        mt_glossary_masked *g = mt_glossary_mask(rq->glossary, rq->texts[i], rq->lens[i], rq->input == MT_FORMAT_HTML);
        if (!g) goto out;
        if (!mt_glossary_masked_count(g)) {
            mt_glossary_masked_free(g);
            continue;
        }
        gm[m] = g;
        extra_of[m] = i;
        texts[n + m] = mt_glossary_masked_text(g);
        lens[n + m] = strlen(texts[n + m]);
        prefix[n + m] = prefix[i];
        m++;
    }
    mt_service_request x = *rq;
    x.n = two_phase ? n : n + m;
    x.texts = texts;
    x.lens = lens;
    x.target_prefix = rq->target_prefix ? prefix : NULL;
    /* the masks are kept and placed as placeholders are; the plain texts run with the
     * same protection, so that their translations do not depend on the phases */
    if (m) x.protect |= MT_PROTECT_FORMAT;
    if ((rc = submit_texts(svc, &x, task, err, errlen)) == MT_SERVICE_OK) {
        (*task)->n_asked = n;
        (*task)->two_phase = two_phase && m > 0;
        (*task)->n_masked = m;
        (*task)->gmask = gm, gm = NULL;
        (*task)->extra_of = extra_of, extra_of = NULL;
    }
out:
    for (int k = 0; gm && k < m; k++) mt_glossary_masked_free(gm[k]);
    free(gm), free(texts), free(prefix), free(lens), free(extra_of);
    if (rc == MT_SERVICE_NOMEM) mt_error(rc, err, errlen, "out of memory");
    return rc;
}

int mt_service_submit(mt_service *svc, const mt_service_request *rq, mt_service_task **task, char *err,
                      size_t errlen)
{
    *task = NULL;
    if (rq->glossary && rq->input != MT_FORMAT_IDS && !rq->output_ids && rq->n > 0)
        return submit_glossary(svc, rq, task, err, errlen);
    int rc = submit_texts(svc, rq, task, err, errlen);
    if (rc == MT_SERVICE_OK) (*task)->n_asked = rq->n;
    return rc;
}

static int submit_texts(mt_service *svc, const mt_service_request *rq, mt_service_task **task, char *err,
                        size_t errlen)
{
    *task = NULL;
    mt_service_task *t = calloc(1, sizeof *t);
    if (t) {
        t->svc = svc;
        t->n_texts = rq->n;
        t->route_of = calloc((size_t)rq->n + 1, sizeof *t->route_of);
        t->conf = calloc((size_t)rq->n + 1, sizeof *t->conf);
        pthread_mutex_init(&t->mu, NULL);
    }
    if (!t || !t->route_of || !t->conf) {
        mt_service_task_free(t);
        return mt_error(MT_SERVICE_NOMEM, err, errlen, "out of memory");
    }
    int per_text = mt_service_detect_routes(t->svc, rq, t->route_of, t->conf, &t->same_route, &t->same, err, errlen);
    if (per_text == -2) {
        mt_service_task_free(t);
        return MT_SERVICE_INVALID;
    }
    if (per_text < 0) {
        mt_service_task_free(t);
        return mt_error(MT_SERVICE_NOMEM, err, errlen, "out of memory");
    }
    if (per_text) {
        t->detected = 2;
        t->main_route = t->route_of[0];
    } else {
        t->main_route = mt_service_route(svc, rq->source, rq->target, &t->detected, err, errlen);
        if (t->main_route < 0) {
            mt_service_task_free(t);
            return MT_SERVICE_INVALID;
        }
        for (int i = 0; i < rq->n; i++) t->route_of[i] = t->main_route, t->conf[i] = 100;
    }
    if (make_parts(t)) {
        mt_service_task_free(t);
        return mt_error(MT_SERVICE_NOMEM, err, errlen, "out of memory");
    }
    for (int p = 0; p < t->n_parts; p++) {
        int rc = prepare_part(t, p, rq, err, errlen);
        if (rc) {
            mt_service_task_free(t);
            return rc;
        }
    }
    *task = t;
    return MT_SERVICE_OK;
}

/* ---------------------------------------------------------------- running */

/* A glossary's texts: each asked text's translation holds every target term, else its
 * masked copy's (terms put in) takes its place; the copies go. */
static void choose_glossary(mt_service_task *t)
{
    for (int k = 0; k < t->n_texts - t->n_asked; k++) {
        mt_translation *plain = &t->results[t->extra_of[k]], *masked = &t->results[t->n_asked + k];
        const mt_glossary_masked *g = t->gmask[k];
        if (t->outcome == MT_SERVICE_OK && !(plain->n_best > 0 && mt_glossary_masked_present(g, plain->texts[0]))) {
            for (int b = 0; b < masked->n_best; b++) {
                char *u = mt_glossary_unmask(g, masked->texts[b]);
                if (!u) {
                    t->outcome = MT_SERVICE_FAILED;
                    snprintf(t->message, sizeof t->message, "out of memory");
                    break;
                }
                free(masked->texts[b]);
                masked->texts[b] = u;
            }
            mt_translation_clear(plain);
            *plain = *masked;
            memset(masked, 0, sizeof *masked);
        }
        mt_translation_clear(masked);
    }
}

static void fail_task(mt_service_task *t, int outcome, const char *message)
{
    t->outcome = outcome;
    snprintf(t->message, sizeof t->message, "%s", message);
}

static void report_translated(mt_service_task *t, const part *pt)
{
    if (!t->svc->obs.translated || pt->n == 0) return;
    mt_service_stats st;
    mt_service_job_stats(pt->job, &st);
    t->svc->obs.translated(t->svc->obs.user, pt->job->model, st.sentences, st.source_tokens, st.target_tokens);
}

/* The second phase is finished: its masked translations, terms put in, replace the plain
 * ones they were made for. */
static void finish_masked(mt_service_task *t)
{
    if (t->refused2) fail_task(t, t->refused2, mt_service_outcome_text(t->refused2));
    for (int p = 0; p < t->n_parts2 && t->outcome == MT_SERVICE_OK; p++) {
        const char *msg;
        int outcome = mt_service_job_outcome(t->parts2[p].job, &msg);
        if (outcome != MT_SERVICE_OK) fail_task(t, outcome, outcome == MT_SERVICE_FAILED && msg ? msg : "");
    }
    for (int p = 0; p < t->n_parts2 && t->outcome == MT_SERVICE_OK; p++) {
        part *pt = &t->parts2[p];
        for (int q = 0; q < pt->n && t->outcome == MT_SERVICE_OK; q++) {
            int k = pt->texts[q];
            mt_translation *masked = &pt->job->results[q], *plain = &t->results[t->extra_of[k]];
            for (int b = 0; b < masked->n_best; b++) {
                char *u = mt_glossary_unmask(t->gmask[k], masked->texts[b]);
                if (!u) {
                    fail_task(t, MT_SERVICE_FAILED, "out of memory");
                    break;
                }
                free(masked->texts[b]);
                masked->texts[b] = u;
            }
            mt_translation_clear(plain); /* moved: the job keeps an empty translation */
            *plain = *masked;
            memset(masked, 0, sizeof *masked);
        }
        report_translated(t, pt);
    }
    t->done(t, t->user);
}

static void masked_done(mt_service_job *job, void *user)
{
    (void)job;
    mt_service_task *t = user;
    if (atomic_fetch_sub(&t->pending2, 1) == 1) finish_masked(t);
}

/* The first phase is done and OK: the masked copies of the texts whose plain translation
 * lacks a target term are translated, grouped by their text's part (route and options).
 * 1 when that started (finish_masked answers), 0 when nothing is needed or it failed
 * (t->outcome says which). */
static int start_masked(mt_service_task *t)
{
    int m = t->n_masked, n2 = 0, rc = MT_SERVICE_OK;
    char err[256] = "out of memory";
    part *parts2 = calloc((size_t)t->n_parts + 1, sizeof *parts2);
    const char **texts = calloc((size_t)m + 1, sizeof *texts);
    size_t *lens = calloc((size_t)m + 1, sizeof *lens);
    if (!parts2 || !texts || !lens) rc = MT_SERVICE_NOMEM;
    for (int p = 0; p < t->n_parts && !rc; p++) {
        part *q = &parts2[n2];
        for (int k = 0; k < m; k++) {
            int i = t->extra_of[k];
            const mt_translation *r = &t->results[i];
            /* a text already in the target language (detected) is answered as it came */
            if (t->route_of[i] != t->parts[p].route) continue;
            if (r->n_best > 0 && mt_glossary_masked_present(t->gmask[k], r->texts[0])) continue;
            if (!q->texts && !(q->texts = calloc((size_t)m, sizeof *q->texts))) {
                rc = MT_SERVICE_NOMEM;
                break;
            }
            texts[q->n] = mt_glossary_masked_text(t->gmask[k]);
            lens[q->n] = strlen(texts[q->n]);
            q->texts[q->n++] = k;
        }
        if (rc || q->n == 0) continue;
        q->route = t->parts[p].route;
        q->opts = t->parts[p].opts;
        n2++;
        rc = prepare_route(t->svc, q->route, &q->opts, q->n, texts, lens, &q->job, err, sizeof err);
    }
    free(texts), free(lens);
    pthread_mutex_lock(&t->mu);
    if (!rc && t->cancelled) rc = t->cancelled;
    if (!rc) t->parts2 = parts2, t->n_parts2 = n2;
    pthread_mutex_unlock(&t->mu);
    if (rc) {
        for (int p = 0; parts2 && p < t->n_parts + 1; p++) {
            mt_service_job_free(parts2[p].job);
            free(parts2[p].texts);
        }
        free(parts2);
        if (rc == MT_SERVICE_NOMEM || rc == MT_SERVICE_INVALID)
            fail_task(t, MT_SERVICE_FAILED, err);
        else
            fail_task(t, rc, ""); /* cancelled before the second phase */
        return 0;
    }
    if (n2 == 0) return 0;
    atomic_store(&t->pending2, n2 + 1);
    for (int p = 0; p < n2; p++) {
        int run = mt_service_run(t->svc, parts2[p].job, masked_done, t);
        if (run == MT_SERVICE_OK) continue;
        t->refused2 = run; /* the parts started stop; the task answers with the refusal */
        for (int q = 0; q < p; q++) mt_service_job_cancel(parts2[q].job, MT_SERVICE_SHUTDOWN);
        atomic_fetch_sub(&t->pending2, n2 - p);
        mt_service_purge(t->svc);
        break;
    }
    if (atomic_fetch_sub(&t->pending2, 1) == 1) finish_masked(t);
    return 1;
}

/* Every part is finished: the outcome, the results in request order, the metrics. */
static void finish(mt_service_task *t)
{
    t->outcome = t->refused ? t->refused : MT_SERVICE_OK;
    for (int p = 0; p < t->n_parts && t->outcome == MT_SERVICE_OK; p++) {
        const char *msg;
        t->outcome = mt_service_job_outcome(t->parts[p].job, &msg);
        if (t->outcome == MT_SERVICE_FAILED) snprintf(t->message, sizeof t->message, "%s", msg);
    }
    if (t->outcome == MT_SERVICE_OK && !(t->results = calloc((size_t)t->n_texts + 1, sizeof *t->results))) {
        t->outcome = MT_SERVICE_FAILED;
        snprintf(t->message, sizeof t->message, "out of memory");
    }
    for (int p = 0; p < t->n_parts && t->outcome == MT_SERVICE_OK; p++) {
        part *pt = &t->parts[p];
        for (int k = 0; k < pt->n; k++) { /* moved: the job keeps empty translations */
            t->results[pt->texts[k]] = pt->job->results[k];
            memset(&pt->job->results[k], 0, sizeof pt->job->results[k]);
        }
        report_translated(t, pt);
    }
    for (int i = 0; t->same && i < t->n_texts && t->outcome == MT_SERVICE_OK; i++) {
        mt_translation *r = &t->results[i];
        if (!t->same[i]) continue;
        if (!(r->texts = calloc(1, sizeof *r->texts)) || !(r->scores = calloc(1, sizeof *r->scores))) {
            t->outcome = MT_SERVICE_FAILED;
            snprintf(t->message, sizeof t->message, "out of memory");
            break;
        }
        r->texts[0] = t->same[i], t->same[i] = NULL;
        r->n_best = 1;
    }
    if (t->outcome == MT_SERVICE_OK && t->two_phase && start_masked(t)) return;
    if (t->outcome == MT_SERVICE_OK && t->n_texts > t->n_asked) choose_glossary(t);
    t->done(t, t->user);
}

static void part_done(mt_service_job *job, void *user)
{
    (void)job;
    mt_service_task *t = user;
    if (atomic_fetch_sub(&t->pending, 1) == 1) finish(t);
}

int mt_service_task_start(mt_service_task *t, void (*done)(mt_service_task *, void *), void *user)
{
    t->done = done;
    t->user = user;
    atomic_store(&t->pending, t->n_parts + 1);
    for (int p = 0; p < t->n_parts; p++) {
        int run = mt_service_run(t->svc, t->parts[p].job, part_done, t);
        if (run == MT_SERVICE_OK) continue;
        if (p == 0) return run; /* nothing started: done will not run */
        t->refused = run; /* the parts started stop; the task answers with the refusal */
        for (int q = 0; q < p; q++) mt_service_job_cancel(t->parts[q].job, MT_SERVICE_SHUTDOWN);
        atomic_fetch_sub(&t->pending, t->n_parts - p);
        mt_service_purge(t->svc);
        break;
    }
    if (atomic_fetch_sub(&t->pending, 1) == 1) finish(t);
    return MT_SERVICE_OK;
}

int mt_service_task_cancel(mt_service_task *t, int reason)
{
    int did = 0;
    for (int p = 0; p < t->n_parts; p++) did |= mt_service_job_cancel(t->parts[p].job, reason);
    pthread_mutex_lock(&t->mu);
    if (!t->cancelled) t->cancelled = reason;
    part *parts2 = t->parts2;
    int n2 = t->n_parts2;
    pthread_mutex_unlock(&t->mu);
    for (int p = 0; p < n2; p++) did |= mt_service_job_cancel(parts2[p].job, reason);
    return did;
}

int mt_service_task_expire(mt_service_task *t, double now)
{
    int did = 0;
    for (int p = 0; p < t->n_parts; p++) did |= mt_service_job_expire(t->parts[p].job, now);
    pthread_mutex_lock(&t->mu);
    part *parts2 = t->parts2;
    int n2 = t->n_parts2;
    pthread_mutex_unlock(&t->mu);
    for (int p = 0; p < n2; p++) did |= mt_service_job_expire(parts2[p].job, now); /* they have the deadline too */
    return did;
}

int mt_service_task_outcome(const mt_service_task *t, const char **message)
{
    if (message) *message = t->message;
    return t->outcome;
}

const mt_translation *mt_service_task_results(const mt_service_task *t) { return t->results; }

const mt_route *mt_service_task_route(const mt_service_task *t, int i)
{
    int r = i >= 0 && i < t->n_texts ? t->route_of[i] : t->main_route;
    return r == MT_ROUTE_SAME ? &t->same_route : mt_langs_get(t->svc->langs, r);
}

int mt_service_task_detected(const mt_service_task *t) { return t->detected; }

double mt_service_task_confidence(const mt_service_task *t, int i)
{
    return i >= 0 && i < t->n_texts ? t->conf[i] : 100;
}

void mt_service_task_stats(const mt_service_task *t, mt_service_stats *st)
{
    memset(st, 0, sizeof *st);
    st->texts = t->n_asked;
    for (int p = 0; p < t->n_parts + t->n_parts2; p++) {
        mt_service_stats s;
        mt_service_job_stats(p < t->n_parts ? t->parts[p].job : t->parts2[p - t->n_parts].job, &s);
        st->sentences += s.sentences;
        st->source_tokens += s.source_tokens;
        st->target_tokens += s.target_tokens;
        if (s.t_submitted > 0 && (st->t_submitted == 0 || s.t_submitted < st->t_submitted))
            st->t_submitted = s.t_submitted;
        if (s.t_started > 0 && (st->t_started == 0 || s.t_started < st->t_started)) st->t_started = s.t_started;
        if (s.t_done > st->t_done) st->t_done = s.t_done;
    }
}

/* ---------------------------------------------------------------- blocking use */

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int done;
} waiter;

static void wake(mt_service_task *t, void *user)
{
    (void)t;
    waiter *w = user;
    pthread_mutex_lock(&w->mu);
    w->done = 1;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->mu);
}

int mt_service_task_run(mt_service_task *t, char *err, size_t errlen)
{
    waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    int rc = mt_service_task_start(t, wake, &w);
    if (rc) {
        mt_error(-1, err, errlen, "%s", mt_service_outcome_text(rc));
    } else {
        pthread_mutex_lock(&w.mu);
        while (!w.done) pthread_cond_wait(&w.cond, &w.mu);
        pthread_mutex_unlock(&w.mu);
        const char *msg;
        rc = mt_service_task_outcome(t, &msg);
        if (rc == MT_SERVICE_FAILED) mt_error(-1, err, errlen, "%s", msg);
        else if (rc != MT_SERVICE_OK) mt_error(-1, err, errlen, "%s", mt_service_outcome_text(rc));
    }
    pthread_cond_destroy(&w.cond);
    pthread_mutex_destroy(&w.mu);
    return rc;
}

int mt_service_translate_request(mt_service *svc, const mt_service_request *rq, mt_translation *out, char *err,
                                 size_t errlen)
{
    memset(out, 0, sizeof *out * (size_t)rq->n);
    mt_service_task *t;
    int rc = mt_service_submit(svc, rq, &t, err, errlen);
    if (rc) return rc;
    rc = mt_service_task_run(t, err, errlen);
    if (rc == MT_SERVICE_OK) {
        for (int i = 0; i < rq->n; i++) {
            out[i] = t->results[i];
            memset(&t->results[i], 0, sizeof t->results[i]);
        }
    }
    mt_service_task_free(t);
    return rc;
}

int mt_service_translate_texts(mt_service *svc, const mt_service_request *rq, char **out, char *err,
                               size_t errlen)
{
    for (int i = 0; i < rq->n; i++) out[i] = NULL;
    mt_translation *res = calloc((size_t)rq->n, sizeof *res);
    if (!res) return mt_error(MT_SERVICE_NOMEM, err, errlen, "out of memory");
    int rc = mt_service_translate_request(svc, rq, res, err, errlen);
    if (rc != MT_SERVICE_OK) {
        free(res);
        return rc;
    }
    for (int i = 0; i < rq->n; i++) {
        if (rc == MT_SERVICE_OK) {
            out[i] = strdup(res[i].n_best > 0 ? res[i].texts[0] : "");
            if (!out[i]) rc = mt_error(MT_SERVICE_NOMEM, err, errlen, "out of memory");
        }
        mt_translation_clear(&res[i]);
    }
    free(res);
    if (rc != MT_SERVICE_OK)
        for (int i = 0; i < rq->n; i++) free(out[i]), out[i] = NULL;
    return rc;
}
