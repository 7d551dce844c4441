/* ep_jobs.c: file jobs in the queue every replica shares (server.shared_state set;
 * include/mt/store_jobs.h). An upload on any replica inserts its job (srv_files_submit
 * lands here); this replica's file workers (server.file_workers threads) claim jobs from
 * the queue, whoever received them, translate them through ep_files.c's reader and the
 * service, and store the result in the database, where GET /download_file/ID on any replica
 * finds it (202 with the progress, 200 with the file, 404 unknown or expired, the job's
 * status when it failed; 503 while the database cannot be reached). A replica that stops
 * (SIGTERM) hands its jobs back to the queue at once; one that dies loses them when their
 * leases expire (server.job_lease_seconds), and another replica takes them over.
 *
 * Without shared state, file jobs stay in this process (ep_files.c, spool/). */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cond.h"
#include "formats.h"
#include "log.h"
#include "spool.h"
#include "store.h"
#include "store_jobs.h"

#define DOWNLOAD_PREFIX "/download_file/"

struct srv_jobs {
    mt_jobs *q;
    pthread_t *threads;
    int n_threads;
    pthread_mutex_t mu;
    pthread_cond_t cond; /* stop */
    int stop;
};

int srv_jobs_init(mt_server *s, char *err, size_t errlen)
{
    const mt_config *cfg = s->cfg;
    if (!s->spool || !cfg->shared_state[0]) return 0;
    srv_jobs *sj = calloc(1, sizeof *sj);
    if (!sj) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pthread_mutex_init(&sj->mu, NULL);
    mt_cond_init_monotonic(&sj->cond);
    s->jobs = sj;
    char host[128] = "", worker[200];
    gethostname(host, sizeof host - 1);
    snprintf(worker, sizeof worker, "%.120s:%ld", host[0] ? host : "replica", (long)getpid());
    mt_jobs_options o = mt_jobs_options_default();
    o.url = cfg->shared_state;
    o.worker = worker;
    /* made when needed: one per worker, one for the background, and the HTTP threads'
     * lookups and uploads */
    o.pool_size = cfg->file_workers + 1 + (cfg->http_threads < 32 ? cfg->http_threads : 32);
    o.lease_s = cfg->job_lease_seconds;
    o.max_attempts = cfg->job_max_attempts;
    o.ttl = cfg->file_ttl;
    o.max_jobs = cfg->max_file_jobs;
    o.max_per_owner = cfg->max_file_jobs_per_client;
    sj->q = mt_jobs_open(&o, err, errlen);
    return sj->q ? 0 : -1;
}

/* ---------------------------------------------------------------- a file worker */

typedef struct {
    mt_jobs *q;
    const mt_jobs_claimed *job;
    double last; /* when progress was last written: at most twice a second */
} progress_ctx;

static void on_progress(void *user, long done, long total)
{
    progress_ctx *p = user;
    double t = mt_cond_now();
    if (t - p->last < 0.5 && done < total) return;
    p->last = t;
    mt_jobs_progress(p->q, p->job, done, total);
}

/* Waits up to sec seconds or until the workers stop; 1 when they stop. */
static int pause_or_stop(srv_jobs *sj, double sec)
{
    struct timespec ts = mt_cond_deadline(sec);
    pthread_mutex_lock(&sj->mu);
    while (!sj->stop)
        if (pthread_cond_timedwait(&sj->cond, &sj->mu, &ts) == ETIMEDOUT) break;
    int stop = sj->stop;
    pthread_mutex_unlock(&sj->mu);
    return stop;
}

static void run_job(mt_server *s, mt_jobs_claimed *job)
{
    srv_jobs *sj = s->jobs;
    char q1[300];
    mt_log_write(s->log, MT_LOG_INFO, "files", "id=%s msg=\"claimed from the shared queue\" attempt=%d bytes=%zu",
                 job->id, job->attempts, job->len);
    progress_ctx pc = {sj->q, job, 0};
    /* the characters are charged to the owner's bucket, which the store knows by the same
     * hash the queue keeps (never a key) */
    char client[120];
    snprintf(client, sizeof client, "sha256:%s", job->owner);
    unsigned char *out = NULL;
    size_t out_len = 0;
    char err[512];
    int status = srv_files_translate(s, client, job->id, job->format, job->source, job->target, job->input,
                                     job->len, on_progress, &pc, &out, &out_len, err, sizeof err);
    if (status && atomic_load(&s->draining)) {
        /* the service was stopped under it: another replica does it */
        mt_jobs_release(sj->q, job);
        mt_log_write(s->log, MT_LOG_INFO, "files", "id=%s msg=\"handed back to the queue (stopping)\"", job->id);
        free(out);
        return;
    }
    size_t max_out = (size_t)s->cfg->max_file_bytes * 4 + (1u << 20); /* as the spool's */
    if (!status && out_len > max_out) {
        status = 500;
        snprintf(err, sizeof err, "the translated file has %zu bytes, more than the limit of %zu", out_len, max_out);
    }
    /* the database may be down for a moment: keep trying while the lease may still hold */
    double until = mt_cond_now() + s->cfg->job_lease_seconds;
    for (;;) {
        char e2[300] = "database: unknown error";
        int rc = status ? mt_jobs_fail(sj->q, job, status, err)
                        : mt_jobs_finish(sj->q, job, out, out_len, e2, sizeof e2);
        if (rc >= 0) {
            if (rc == 0)
                mt_log_write(s->log, MT_LOG_WARN, "files",
                             "id=%s msg=\"lease lost: another replica took the job over; result dropped\"", job->id);
            else
                mt_log_write(s->log, MT_LOG_INFO, "files", "id=%s msg=\"%s\" bytes=%zu", job->id,
                             status ? "failed" : "done", out_len);
            break;
        }
        if (mt_cond_now() >= until || pause_or_stop(sj, 1.0)) {
            mt_log_write(s->log, MT_LOG_WARN, "files", "id=%s msg=\"result not stored: database\" reason=%s",
                         job->id, mt_log_quote(q1, sizeof q1, e2));
            break;
        }
    }
    free(out);
}

static void *worker_main(void *arg)
{
    mt_server *s = arg;
    srv_jobs *sj = s->jobs;
    for (;;) {
        pthread_mutex_lock(&sj->mu);
        int stop = sj->stop;
        pthread_mutex_unlock(&sj->mu);
        if (stop) break;
        if (atomic_load(&s->draining)) { /* stopping: claim nothing more */
            pause_or_stop(sj, 1.0);
            continue;
        }
        mt_jobs_claimed job;
        char err[300];
        int rc = mt_jobs_claim(sj->q, 5.0, &job, err, sizeof err);
        if (rc < 0) {
            pause_or_stop(sj, 1.0); /* the database is down: try again in a second */
            continue;
        }
        if (rc == 0) continue;
        run_job(s, &job);
        mt_jobs_claimed_clear(&job);
    }
    return NULL;
}

int srv_jobs_start(mt_server *s, char *err, size_t errlen)
{
    srv_jobs *sj = s->jobs;
    if (!sj || sj->threads) return 0;
    int n = s->cfg->file_workers > 0 ? s->cfg->file_workers : 1;
    sj->threads = calloc((size_t)n, sizeof *sj->threads);
    if (!sj->threads) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (pthread_create(&sj->threads[i], NULL, worker_main, s)) {
            snprintf(err, errlen, "cannot start a file worker thread");
            return -1;
        }
        sj->n_threads++;
    }
    return 0;
}

void srv_jobs_free(mt_server *s)
{
    srv_jobs *sj = s->jobs;
    if (!sj) return;
    pthread_mutex_lock(&sj->mu);
    sj->stop = 1;
    pthread_cond_broadcast(&sj->cond);
    pthread_mutex_unlock(&sj->mu);
    mt_jobs_wake(sj->q);
    for (int i = 0; i < sj->n_threads; i++) pthread_join(sj->threads[i], NULL);
    free(sj->threads);
    mt_jobs_close(sj->q);
    pthread_cond_destroy(&sj->cond);
    pthread_mutex_destroy(&sj->mu);
    free(sj);
    s->jobs = NULL;
}

/* ---------------------------------------------------------------- submit, look up */

static int submit(mt_server *s, const char *client, const char *name, const char *data, size_t len, int fmt,
                  int route, const char *options_json, char *id, double *retry, char *err, size_t errlen)
{
    const mt_route *r = mt_langs_get(mt_service_langs(s->svc), route);
    char dl[256];
    mt_spool_download_name(name, dl, sizeof dl);
    mt_jobs_new n = {.owner = client, .name = dl, .mime = mt_format_mime((mt_file_format)fmt), .format = fmt,
                     .source = r->source, .target = r->target, .options_json = options_json, .input = data,
                     .len = len};
    *retry = 0;
    int rc = mt_jobs_submit(s->jobs->q, &n, id, err, errlen);
    if (rc == MT_STORE_OK) return 0;
    if (rc == MT_JOBS_OWNER_FULL || rc == MT_JOBS_FULL) {
        *retry = 5; /* a slot frees when a job of another replica expires: ask again soon */
        return rc == MT_JOBS_OWNER_FULL ? 429 : 503;
    }
    if (rc == MT_STORE_DOWN) {
        char why[300];
        snprintf(why, sizeof why, "%s", err);
        snprintf(err, errlen, "file jobs are kept in the shared database, which cannot be reached now (%s)", why);
        *retry = 1;
        return 503;
    }
    return 500;
}

int srv_jobs_submit(mt_server *s, const char *client, const char *name, const char *data, size_t len, int fmt,
                    int route, char *id, double *retry, char *err, size_t errlen)
{
    return submit(s, client, name, data, len, fmt, route, NULL, id, retry, err, errlen);
}

/* ---------------------------------------------------------------- DeepL's documents */

/* A DeepL document's id and its key's SHA-256 travel in the job's options, so that any
 * replica can answer for it; the key itself is never stored. */
int srv_jobs_submit_document(mt_server *s, const char *client, const char *name, const char *data, size_t len,
                             int fmt, int route, const char *doc_id, const char *doc_key, char *id, double *retry,
                             char *err, size_t errlen)
{
    char h[MT_STORE_SHA256_HEX];
    mt_store_sha256_hex(doc_key, h);
    json_t *o = json_pack("{s:s, s:s}", "deepl_id", doc_id, "deepl_key", h);
    char *opts = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!opts) {
        snprintf(err, errlen, "out of memory");
        return 500;
    }
    int st = submit(s, client, name, data, len, fmt, route, opts, id, retry, err, errlen);
    free(opts);
    return st;
}

int srv_jobs_find_document(mt_server *s, const char *doc_id, const char *doc_key, char *job_id, double *t_start,
                           long long *chars)
{
    char upper[33], opts[1024], err[300];
    snprintf(upper, sizeof upper, "%s", doc_id);
    for (char *p = upper; *p; p++)
        if (*p >= 'a' && *p <= 'f') *p = (char)(*p - 'a' + 'A');
    double age = 0;
    if (mt_jobs_find_by_option(s->jobs->q, "deepl_id", upper, job_id, &age, opts, sizeof opts, err, sizeof err) != 1)
        return -1;
    json_t *o = json_loads(opts, 0, NULL);
    const char *stored = json_string_value(json_object_get(o, "deepl_key"));
    char h[MT_STORE_SHA256_HEX];
    mt_store_sha256_hex(doc_key, h);
    int ok = stored && srv_key_equal(stored, h); /* in constant time */
    json_t *c = json_object_get(o, "chars");
    *chars = json_is_integer(c) ? (long long)json_integer_value(c) : -1;
    *t_start = mt_now() - age;
    json_decref(o);
    return ok ? 0 : -1;
}

void srv_jobs_note_chars(mt_server *s, const char *job_id, long long chars)
{
    char json[64], err[300];
    snprintf(json, sizeof json, "{\"chars\": %lld}", chars);
    mt_jobs_annotate(s->jobs->q, job_id, json, err, sizeof err);
}

char *srv_jobs_metrics(mt_server *s, char *text)
{
    long n[4];
    char err[300];
    if (!s->jobs || !text || mt_jobs_counts(s->jobs->q, n, err, sizeof err)) return text;
    char add[600];
    int len = snprintf(add, sizeof add,
                       "# HELP mt_file_jobs File jobs in the queue the replicas share, by state (the same on "
                       "every replica; queued + running is the autoscaling signal).\n"
                       "# TYPE mt_file_jobs gauge\n"
                       "mt_file_jobs{state=\"queued\"} %ld\nmt_file_jobs{state=\"running\"} %ld\n"
                       "mt_file_jobs{state=\"done\"} %ld\nmt_file_jobs{state=\"failed\"} %ld\n",
                       n[MT_JOBS_QUEUED], n[MT_JOBS_RUNNING], n[MT_JOBS_DONE], n[MT_JOBS_FAILED]);
    size_t have = strlen(text);
    char *out = realloc(text, have + (size_t)len + 1);
    if (!out) return text;
    memcpy(out + have, add, (size_t)len + 1);
    return out;
}

static void to_spool_entry(const mt_jobs_entry *j, mt_spool_entry *e)
{
    memset(e, 0, sizeof *e);
    e->state = j->state == MT_JOBS_DONE ? MT_SPOOL_DONE : j->state == MT_JOBS_FAILED ? MT_SPOOL_FAILED
                                                                                  : MT_SPOOL_RUNNING;
    e->done = j->done;
    e->total = j->total;
    snprintf(e->name, sizeof e->name, "%s", j->name);
    snprintf(e->mime, sizeof e->mime, "%s", j->mime);
    e->size = j->size;
    snprintf(e->error, sizeof e->error, "%s", j->error);
}

int srv_files_lookup(mt_server *s, const char *id, mt_spool_entry *out)
{
    if (!s->jobs) return s->spool ? mt_spool_lookup(s->spool, id, out) : -1;
    mt_jobs_entry je;
    char err[300];
    if (mt_jobs_lookup(s->jobs->q, id, &je, err, sizeof err) != 1) return -1;
    to_spool_entry(&je, out);
    return 0;
}

int srv_files_read(mt_server *s, const char *id, char **data, size_t *len, char *err, size_t errlen)
{
    if (!s->jobs) return s->spool ? mt_spool_read(s->spool, id, data, len, err, errlen) : -1;
    int rc = mt_jobs_result(s->jobs->q, id, data, len, err, errlen);
    if (rc == 0) snprintf(err, errlen, "no such file: unknown or expired id");
    return rc == 1 ? 0 : -1;
}

enum MHD_Result srv_jobs_download(mt_server *s, req_ctx *c)
{
    const char *id = c->path + strlen(DOWNLOAD_PREFIX);
    mt_jobs_entry e;
    char err[400];
    int rc = mt_jobs_lookup(s->jobs->q, id, &e, err, sizeof err);
    if (rc < 0) {
        char msg[500];
        snprintf(msg, sizeof msg, "file jobs are kept in the shared database, which cannot be reached now (%s)", err);
        srv_copy_text(c->out.error, sizeof c->out.error, msg);
        return srv_send_json(c, 503, json_pack("{s:s}", "error", msg), MHD_HTTP_HEADER_RETRY_AFTER, "1");
    }
    if (rc == 0) return srv_send_error(c, 404, "no such file: unknown or expired id");
    if (e.state == MT_JOBS_QUEUED || e.state == MT_JOBS_RUNNING) {
        double pct = e.total > 0 ? 100.0 * (double)e.done / (double)e.total : 0;
        return srv_send_json(c, 202, json_pack("{s:s, s:i, s:i, s:f}", "status",
                                               e.state == MT_JOBS_QUEUED ? "queued" : "running", "done",
                                               (json_int_t)e.done, "total", (json_int_t)e.total, "progress",
                                               (double)(long)(pct * 10) / 10.0),
                             MHD_HTTP_HEADER_RETRY_AFTER, "1");
    }
    if (e.state == MT_JOBS_FAILED) {
        char msg[300];
        snprintf(msg, sizeof msg, "file translation failed: %s", e.error);
        return srv_send_error(c, e.status >= 400 && e.status < 600 ? e.status : 422, msg);
    }
    char *buf;
    size_t size;
    rc = mt_jobs_result(s->jobs->q, id, &buf, &size, err, sizeof err);
    if (rc < 0) return srv_send_error(c, 503, err);
    if (rc == 0) return srv_send_error(c, 404, "no such file: unknown or expired id");
    return srv_send_file(c, buf, size, e.name, e.mime);
}
