/* ep_files.c: file translation in the server: POST /translate_file (multipart
 * form: file, source, target, api_key) answers {"translatedFileUrl": ".../download_file/ID"}
 * at once; the file is translated by a thread of its own through formats/ and the shared
 * translation service (its sentences batch with everyone else's), and lands in the spool
 * (spool/: bounded, expiring, random 128-bit ids). GET /download_file/ID answers 202 with
 * the progress while it runs, then the file under its original name and Content-Type.
 *
 * Limits: [limits] max_file_bytes (413; 0 turns file translation off), max_file_jobs (the
 * spool's entries; 503 beyond), max_file_jobs_per_client (one client's, keyed like the
 * rate limits; 429 beyond), both with a Retry-After of when the first slot that would let
 * the upload in frees; file_ttl (seconds a result stays). Ids are looked up by the spool,
 * which accepts 32 lowercase hex digits and nothing else, so no request path reaches the
 * file system. An upload counts as a request for the rate limit, and the characters of
 * the text extracted from it (not its compressed size) are charged when the job has
 * extracted them: over the limit, the job fails with the wait in its message.
 *
 * Time: [server] file_timeout bounds a job from when it starts here (a shared queue's job:
 * its claim). Its translate calls carry that deadline to the service, which drops their
 * queued sentences when it passes, like /translate's at request_timeout; the job then fails
 * with 504 (DeepL: status "error") and a warning in the log.
 *
 * Translated files have no name in the spool's directory (spool.h), which is $TMPDIR
 * itself unless [server] spool_dir is set: a server that crashes leaves no user's file. */
#include "deepl.h"
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "formats.h"
#include "spool.h"

#define DOWNLOAD_PREFIX "/download_file/"

/* ---------------------------------------------------------------- life cycle */

int srv_files_init(mt_server *s, char *err, size_t errlen)
{
    const mt_config *cfg = s->cfg;
    pthread_mutex_init(&s->files_mu, NULL);
    pthread_cond_init(&s->files_cond, NULL);
    s->files_init = 1;
    if (cfg->max_file_bytes <= 0) return 0;
    mt_format_global_init();
    mt_spool_options o = mt_spool_options_default();
    if (cfg->spool_dir[0]) {
        snprintf(s->spool_dir, sizeof s->spool_dir, "%s", cfg->spool_dir);
    } else {
        /* the files have no names: $TMPDIR itself will do, and is never swept */
        const char *tmp = getenv("TMPDIR");
        snprintf(s->spool_dir, sizeof s->spool_dir, "%s", tmp && *tmp ? tmp : "/tmp");
        o.sweep = 0;
    }
    o.dir = s->spool_dir;
    o.max_per_owner = cfg->max_file_jobs_per_client;
    o.max_file_bytes = (size_t)cfg->max_file_bytes * 4 + (1u << 20); /* translations grow */
    o.max_total_bytes = o.max_file_bytes * (size_t)cfg->max_file_jobs;
    o.max_entries = cfg->max_file_jobs;
    o.ttl = cfg->file_ttl;
    s->spool = mt_spool_open(&o, err, errlen);
    if (!s->spool) return -1;
    /* Documents are read in children of this helper, forked now, while the process has
     * no thread yet (no HTTP daemon, no translation worker): see formats.h. */
    s->isolator = mt_format_isolator_create(err, errlen);
    return s->isolator ? 0 : -1;
}

void srv_files_stop(mt_server *s)
{
    if (!s->files_init) return;
    pthread_mutex_lock(&s->files_mu);
    s->files_stop = 1;
    while (s->files_running > 0) pthread_cond_wait(&s->files_cond, &s->files_mu);
    pthread_mutex_unlock(&s->files_mu);
}

void srv_files_free(mt_server *s)
{
    if (!s->files_init) return;
    srv_files_stop(s);
    mt_spool_close(s->spool);
    s->spool = NULL;
    mt_format_isolator_free(s->isolator);
    s->isolator = NULL;
    if (s->spool_dir_made) rmdir(s->spool_dir);
    pthread_cond_destroy(&s->files_cond);
    pthread_mutex_destroy(&s->files_mu);
    s->files_init = 0;
}


/* ---------------------------------------------------------------- the translating thread */

typedef struct {
    mt_server *srv;
    char id[MT_SPOOL_ID_LEN + 1];
    mt_file_format fmt;
    unsigned char *data;
    size_t len;
    char client[160];  /* the rate limits' client (srv_rate_client) */
    char source[33], target[33]; /* the route, resolved (and detected) at upload */
    void (*progress)(void *user, long done, long total); /* NULL: the spool's entry */
    void *progress_user;
    double t_start, deadline; /* mt_now(); deadline 0: none ([server] file_timeout) */
    long done, total;         /* units translated, of the file's */
    int expired;              /* the deadline passed: the job answers 504 */
    int shutdown;             /* the service stopped under it (shutting down): 503 */
} file_job;

/* The job's deadline passed (before or during a translate call): the call fails, and so
 * does the reader, which stops at a failed call; run_file gives the answer. */
static int job_expired(file_job *fj, const char *why, char *err, size_t errlen)
{
    fj->expired = 1;
    snprintf(err, errlen, "the translation did not finish within server.file_timeout (%g s)%s",
             fj->srv->cfg->file_timeout, why);
    return -1;
}

static int translate_units(void *user, const char *const *texts, const size_t *lens, int n,
                           int html, char **out, char *err, size_t errlen)
{
    file_job *fj = user;
    mt_service_request rq; /* the [decoding] defaults apply, as to /translate */
    mt_service_request_init(&rq);
    rq.source = fj->source;
    rq.target = fj->target;
    rq.n = n;
    rq.texts = texts;
    rq.lens = lens;
    rq.input = html ? MT_FORMAT_HTML : MT_FORMAT_TEXT;
    /* The service drops the call's queued sentences once the deadline passes and stops
     * the running ones at their next decoding step, as for /translate's timeout; the
     * units after this call are never sent. */
    rq.deadline = fj->deadline;
    if (fj->deadline > 0 && mt_now() >= fj->deadline) return job_expired(fj, "", err, errlen);
    int rc = mt_service_translate_texts(fj->srv->svc, &rq, out, err, errlen);
    if (rc == MT_SERVICE_OK) return 0;
    if (rc == MT_SERVICE_DEADLINE) return job_expired(fj, "", err, errlen);
    if (rc == MT_SERVICE_SHUTDOWN) fj->shutdown = 1; /* not our failure: run_file says so */
    if (rc == MT_SERVICE_BUSY && fj->deadline > 0) {
        /* refused at once: the work ahead would outlast what is left of the deadline */
        double left = fj->deadline - mt_now(), backlog = mt_service_backlog_seconds(fj->srv->svc);
        if (backlog > left) {
            char why[160];
            snprintf(why, sizeof why, ": the queue holds about %.0f s of work, %.0f s were left", backlog,
                     left > 0 ? left : 0);
            return job_expired(fj, why, err, errlen);
        }
    }
    return -1;
}

static void report_progress(void *user, long done, long total)
{
    file_job *fj = user;
    fj->done = done;
    fj->total = total;
    if (fj->progress) fj->progress(fj->progress_user, done, total);
    else mt_spool_progress(fj->srv->spool, fj->id, done, total);
}

/* The text is extracted: its characters are charged to the client's rate limit. */
static int on_extracted(void *user, long units, long long chars, char *err, size_t errlen)
{
    (void)units;
    file_job *fj = user;
    srv_deepl_doc_chars(fj->srv, fj->id, chars); /* a DeepL document's billed_characters */
    return srv_charge_chars(fj->srv, fj->client, chars, err, errlen);
}

/* The answer a failed job's download gets: a document the reader refused or that killed
 * it 422, one over a size limit 413, our own failure 500; one over the characters-per-
 * minute limit 422 with the wait in its reason, as that job has always answered (a 429
 * would tell the client to retry the download, which will never succeed). */
static int fail_status(int rc)
{
    switch (rc) {
    case MT_FORMAT_TOO_LARGE: return 413;
    case MT_FORMAT_FAILED: return 500;
    default: return 422;
    }
}

static void remember_failure(mt_server *s, const char *id, int status)
{
    pthread_mutex_lock(&s->files_mu);
    int n = (int)(sizeof s->file_fails / sizeof s->file_fails[0]);
    int k = s->file_fails_next;
    snprintf(s->file_fails[k].id, sizeof s->file_fails[k].id, "%s", id);
    s->file_fails[k].status = (short)status;
    s->file_fails_next = (k + 1) % n;
    pthread_mutex_unlock(&s->files_mu);
}

static int failure_status(mt_server *s, const char *id)
{
    int st = 422;
    pthread_mutex_lock(&s->files_mu);
    int n = (int)(sizeof s->file_fails / sizeof s->file_fails[0]);
    for (int i = 0; i < n; i++)
        if (strcmp(s->file_fails[i].id, id) == 0) st = s->file_fails[i].status;
    pthread_mutex_unlock(&s->files_mu);
    return st;
}

/* Reads, translates and rebuilds fj's file in an isolated reader: 0 with *out (malloc'd),
 * else the HTTP status its download answers with, why in err (logged). */
static int run_file(file_job *fj, unsigned char **out, size_t *out_len, char *err, size_t errlen)
{
    mt_server *s = fj->srv;
    mt_format_options fo = mt_format_options_default();
    fo.max_input_bytes = (size_t)s->cfg->max_file_bytes;
    fo.extracted = on_extracted;
    if (s->cfg->file_reader_cpu_seconds > 0) fo.child_cpu_seconds = s->cfg->file_reader_cpu_seconds;
    if (s->cfg->file_reader_memory_mb > 0) fo.child_memory = (size_t)s->cfg->file_reader_memory_mb << 20;
    *out = NULL;
    *out_len = 0;
    /* From when this process starts on it (a shared queue's job: when claimed), reading
     * included; the reader also has its own limits. */
    fj->t_start = mt_now();
    fj->deadline = s->cfg->file_timeout > 0 ? fj->t_start + s->cfg->file_timeout : 0;
    long restarts = mt_format_isolator_restarts(s->isolator);
    int rc = mt_format_translate_isolated(s->isolator, fj->fmt, fj->data, fj->len, &fo, translate_units,
                                          report_progress, fj, out, out_len, err, errlen);
    if (mt_format_isolator_restarts(s->isolator) != restarts)
        mt_log_write(s->log, MT_LOG_WARN, "files",
                     "msg=\"the document readers' helper process had exited: started a new one\"");
    if (rc == 0) return 0;
    char q[600];
    if (fj->expired) {
        /* 504 as /translate's timeout; the reader's own wording of the failure is dropped */
        char why[400];
        snprintf(why, sizeof why, "%s", err);
        const char *tail = strstr(why, "the translation did not finish");
        snprintf(err, errlen, "%s; %ld of %ld units were translated, the rest dropped",
                 tail ? tail : why, fj->done, fj->total);
        mt_log_write(s->log, MT_LOG_WARN, "files",
                     "id=%s msg=\"file_timeout passed: job stopped, its queued sentences dropped\" status=504 "
                     "seconds=%.1f units_done=%ld units=%ld reason=%s",
                     fj->id, mt_now() - fj->t_start, fj->done, fj->total, mt_log_quote(q, sizeof q, err));
        return 504;
    }
    if (fj->shutdown) {
        /* a chunk cancelled or refused by the shutdown's abort: the server is going away,
         * not failing (a 500 logged as an error at every restart) */
        snprintf(err, errlen, "the server is shutting down; %ld of %ld units were translated, the rest dropped",
                 fj->done, fj->total);
        mt_log_write(s->log, MT_LOG_WARN, "files", "id=%s msg=\"stopped: the server is shutting down\" status=503 "
                     "units_done=%ld units=%ld", fj->id, fj->done, fj->total);
        return 503;
    }
    int status = fail_status(rc);
    /* a reader killed or crashed: the child process's end is in the reason */
    mt_log_write(s->log, status == 500 ? MT_LOG_ERROR : MT_LOG_WARN, "files",
                 "id=%s msg=\"translation failed\" status=%d reason=%s", fj->id, status,
                 mt_log_quote(q, sizeof q, err));
    return status;
}

int srv_files_translate(mt_server *s, const char *client, const char *id, int fmt, const char *source,
                        const char *target, const unsigned char *data, size_t len,
                        void (*progress)(void *user, long done, long total), void *progress_user,
                        unsigned char **out, size_t *out_len, char *err, size_t errlen)
{
    file_job fj = {.srv = s, .fmt = (mt_file_format)fmt, .data = (unsigned char *)data, .len = len,
                   .progress = progress, .progress_user = progress_user};
    snprintf(fj.id, sizeof fj.id, "%s", id);
    snprintf(fj.client, sizeof fj.client, "%s", client);
    snprintf(fj.source, sizeof fj.source, "%s", source);
    snprintf(fj.target, sizeof fj.target, "%s", target);
    return run_file(&fj, out, out_len, err, errlen);
}

static void *file_thread(void *arg)
{
    file_job *fj = arg;
    mt_server *s = fj->srv;
    unsigned char *out = NULL;
    size_t out_len = 0;
    char err[512];
    int status = run_file(fj, &out, &out_len, err, sizeof err);
    if (status == 0) {
        char e2[256];
        if (mt_spool_finish(s->spool, fj->id, out, out_len, e2, sizeof e2)) {
            remember_failure(s, fj->id, 500);
            mt_spool_fail(s->spool, fj->id, e2);
        }
        free(out);
    } else {
        remember_failure(s, fj->id, status);
        mt_spool_fail(s->spool, fj->id, err);
    }
    free(fj->data);
    free(fj);
    pthread_mutex_lock(&s->files_mu);
    s->files_running--;
    pthread_cond_broadcast(&s->files_cond);
    pthread_mutex_unlock(&s->files_mu);
    return NULL;
}

/* ---------------------------------------------------------------- POST /translate_file */

/* One part of an upload (srv_upload_read): the file, a text field kept, or one passed over. */
static int on_part(void *user, const mt_multipart_part *p, char *err, size_t errlen)
{
    srv_upload *u = user;
    if (p->name_len == 4 && memcmp(p->name, "file", 4) == 0) {
        if (u->n_files++) {
            snprintf(err, errlen, "%s", u->deepl ? "Only one file can be uploaded per request."
                                                 : "Invalid request: more than one file part");
            return 400;
        }
        u->file = *p;
        return 0;
    }
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(p->name_len < 63 ? p->name_len : 63), p->name);
    if (u->keep) {
        int kept = 0;
        for (int i = 0; u->keep[i] && !kept; i++) kept = strlen(name) == p->name_len && strcmp(name, u->keep[i]) == 0;
        if (!kept) return 0;
    } else if (p->has_filename) {
        return 0;
    }
    if (p->len > u->max_field || memchr(p->data, '\0', p->len)) {
        if (u->deepl) snprintf(err, errlen, "Value for '%.60s' not supported.", name);
        else snprintf(err, errlen, "Invalid request: form field '%s' is too long or not text", name);
        return 400;
    }
    json_t *v = json_stringn(p->data, p->len);
    if (!v) {
        if (u->deepl) snprintf(err, errlen, "Value for '%s' is not UTF-8.", name);
        else snprintf(err, errlen, "Invalid request: form field '%s' is not valid UTF-8", name);
        return 400;
    }
    json_object_set_new(u->fields, name, v);
    return 0;
}

int srv_upload_read(req_ctx *c, srv_upload *u, char *err, size_t errlen)
{
    u->fields = json_object();
    u->n_files = 0;
    if (!u->fields) {
        snprintf(err, errlen, "out of memory");
        return 500;
    }
    return mt_multipart_parse(c->in.boundary, c->in.body ? c->in.body : "", c->in.len, on_part, u, err, errlen);
}

static const char *field(json_t *obj, const char *k)
{
    const char *v = json_string_value(json_object_get(obj, k));
    return v && *v ? v : NULL;
}

/* The base of URLs we hand out: [server] public_url, else none (a link relative to this
 * server). Never the request's Host header: a client could make us hand out a link to
 * anywhere, and behind a proxy it names the wrong scheme. */
static void base_url(mt_server *s, char *out, size_t cap)
{
    const char *pub = s->cfg->public_url;
    size_t n = strlen(pub);
    while (n && pub[n - 1] == '/') n--;
    snprintf(out, cap, "%.*s", (int)(n < 250 ? n : 250), pub);
}

/* The route into target from the language a file starts in (its first 64 KiB say
 * enough), or -1. */
static int detect_route(mt_server *s, const char *text, size_t len, const char *target)
{
    mt_detect_result res[1];
    if (!target) return -1;
    size_t n = len > 65536 ? 65536 : len;
    while (n < len && n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80) n--;
    if (mt_service_detect(s->svc, text, n, target, res, 1) <= 0) return -1;
    int detected;
    char err[256];
    return mt_service_route(s->svc, res[0].code, target, &detected, err, sizeof err);
}

int srv_files_route(mt_server *s, int fmt, const char *data, size_t len, const char *source, const char *target,
                    char *err, size_t errlen)
{
    int detected = 0, route = -1;
    if (source && strcasecmp(source, "auto") == 0 && (fmt == MT_FILE_TXT || fmt == MT_FILE_SRT || fmt == MT_FILE_HTML))
        route = detect_route(s, data, len, target);
    if (route < 0) route = mt_service_route(s->svc, source, target, &detected, err, errlen);
    return route;
}

int srv_files_submit(mt_server *s, const char *client, const char *name, const char *data, size_t len, int fmt,
                     int route, char *id, double *retry, char *err, size_t errlen)
{
    if (s->jobs) return srv_jobs_submit(s, client, name, data, len, fmt, route, id, retry, err, errlen);
    const mt_route *r = mt_langs_get(mt_service_langs(s->svc), route);
    file_job *fj = calloc(1, sizeof *fj);
    if (fj) fj->data = malloc(len ? len : 1);
    if (!fj || !fj->data) {
        free(fj);
        snprintf(err, errlen, "out of memory");
        return 500;
    }
    memcpy(fj->data, data, len);
    fj->len = len;
    fj->srv = s;
    fj->fmt = (mt_file_format)fmt;
    snprintf(fj->source, sizeof fj->source, "%s", r->source);
    snprintf(fj->target, sizeof fj->target, "%s", r->target);
    snprintf(fj->client, sizeof fj->client, "%s", client);
    *retry = 0;
    int sr = mt_spool_begin_for(s->spool, client, name, mt_format_mime(fj->fmt), fj->id, retry, err, errlen);
    if (sr) {
        free(fj->data), free(fj);
        return sr == MT_SPOOL_OWNER_FULL ? 429 : sr == MT_SPOOL_FULL ? 503 : 500;
    }
    pthread_mutex_lock(&s->files_mu);
    int stopping = s->files_stop;
    if (!stopping) s->files_running++;
    pthread_mutex_unlock(&s->files_mu);
    memcpy(id, fj->id, MT_SPOOL_ID_LEN + 1); /* fj belongs to the thread once it starts */
    pthread_t th;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int perr = stopping ? -1 : pthread_create(&th, &attr, file_thread, fj);
    pthread_attr_destroy(&attr);
    if (perr) {
        mt_spool_fail(s->spool, fj->id, "server is shutting down");
        pthread_mutex_lock(&s->files_mu);
        if (!stopping) s->files_running--;
        pthread_cond_broadcast(&s->files_cond);
        pthread_mutex_unlock(&s->files_mu);
        free(fj->data), free(fj);
        snprintf(err, errlen, "cannot start the file translation; retry later");
        *retry = 1;
        return 503;
    }
    return 0;
}

static enum MHD_Result fail(req_ctx *c, json_t *fields, int status, const char *msg)
{
    json_decref(fields);
    return srv_send_error(c, status, msg);
}

enum MHD_Result srv_ep_translate_file(mt_server *s, req_ctx *c)
{
    char err[512];
    if (!s->spool) return srv_send_error(c, 403, "Files translation are disabled on this server.");
    if (c->in.ctype != MT_CT_MULTIPART)
        return srv_send_error(c, 400, "Invalid request: send the file as multipart/form-data "
                              "(fields file, source, target)");
    static const char *const keep[] = {"source", "target", "api_key", NULL};
    srv_upload u = {.keep = keep, .max_field = 1024};
    int st = srv_upload_read(c, &u, err, sizeof err);
    if (st) return fail(c, u.fields, st, err);
    if ((st = srv_check_api_key(s, c, u.fields, err, sizeof err))) return fail(c, u.fields, st, err);
    if (!u.n_files) return fail(c, u.fields, 400, "Invalid request: missing file parameter");
    const char *target = field(u.fields, "target"), *source = field(u.fields, "source");
    if (!target) return fail(c, u.fields, 400, "Invalid request: missing target parameter");
    if (u.file.len > (size_t)s->cfg->max_file_bytes) {
        snprintf(err, sizeof err, "file too large: %zu bytes (limit %ld)", u.file.len, s->cfg->max_file_bytes);
        return fail(c, u.fields, 413, err);
    }
    char name[1024] = "file"; /* whole: the spool cuts a long one keeping its extension */
    if (u.file.has_filename && u.file.filename_len > 0)
        snprintf(name, sizeof name, "%.*s", (int)(u.file.filename_len < 1023 ? u.file.filename_len : 1023),
                 u.file.filename);
    mt_file_format fmt = mt_format_detect(name, (const unsigned char *)u.file.data, u.file.len);
    if (fmt == MT_FILE_UNKNOWN) {
        snprintf(err, sizeof err, "unsupported file type '%.200s': send one of %s", name, mt_format_extensions());
        for (char *p = err; *p; p++)
            if ((unsigned char)*p < 0x20) *p = '?';
        return fail(c, u.fields, 415, err);
    }
    enum MHD_Result limited;
    /* a request now; its characters once the text is extracted (on_extracted) */
    char client[160];
    srv_rate_client(s, c, field(u.fields, "api_key"), client, sizeof client);
    if (srv_rate_check(s, c, field(u.fields, "api_key"), 0, &limited)) {
        json_decref(u.fields);
        return limited;
    }
    int route = srv_files_route(s, fmt, u.file.data, u.file.len, source, target, err, sizeof err);
    if (route < 0) return fail(c, u.fields, 400, err);
    c->out.model_name =
        mt_service_model_info(s->svc, mt_langs_get(mt_service_langs(s->svc), route)->model)->name;
    json_decref(u.fields);
    double retry = 0;
    char id[MT_SPOOL_ID_LEN + 1];
    st = srv_files_submit(s, client, name, u.file.data, u.file.len, fmt, route, id, &retry, err, sizeof err);
    if (st == 429 || st == 503) {
        /* when the first slot that would let this upload in frees, not "1" */
        char after[32];
        snprintf(after, sizeof after, "%ld", retry > 1 ? (long)(retry + 0.999) : 1L);
        srv_copy_text(c->out.error, sizeof c->out.error, err);
        return srv_send_json(c, st, json_pack("{s:s}", "error", err), MHD_HTTP_HEADER_RETRY_AFTER, after);
    }
    if (st) return srv_send_error(c, st, err);
    char base[300], url[400];
    base_url(s, base, sizeof base);
    snprintf(url, sizeof url, "%s" DOWNLOAD_PREFIX "%s", base, id);
    return srv_send_json(c, 200, json_pack("{s:s}", "translatedFileUrl", url), NULL, NULL);
}

/* ---------------------------------------------------------------- GET /download_file/ID */

enum MHD_Result srv_ep_download(mt_server *s, req_ctx *c)
{
    if (s->jobs) return srv_jobs_download(s, c);
    const char *id = c->path + strlen(DOWNLOAD_PREFIX);
    mt_spool_entry e;
    if (!s->spool || mt_spool_lookup(s->spool, id, &e))
        return srv_send_error(c, 404, "no such file: unknown or expired id");
    if (e.state == MT_SPOOL_RUNNING) {
        double pct = e.total > 0 ? 100.0 * (double)e.done / (double)e.total : 0;
        return srv_send_json(c, 202, json_pack("{s:s, s:i, s:i, s:f}", "status", "running", "done",
                                               (json_int_t)e.done, "total", (json_int_t)e.total,
                                               "progress", (double)(long)(pct * 10) / 10.0),
                             MHD_HTTP_HEADER_RETRY_AFTER, "1");
    }
    if (e.state == MT_SPOOL_FAILED) {
        char msg[300];
        snprintf(msg, sizeof msg, "file translation failed: %s", e.error);
        return srv_send_error(c, failure_status(s, id), msg);
    }
    char *buf, err[200];
    size_t size;
    if (mt_spool_read(s->spool, id, &buf, &size, err, sizeof err)) return srv_send_error(c, 404, err);
    return srv_send_file(c, buf, size, e.name, e.mime);
}

enum MHD_Result srv_send_file(req_ctx *c, char *buf, size_t size, const char *name, const char *mime)
{
    char disp[400];
    snprintf(disp, sizeof disp, "attachment; filename=\"%s\"", name);
    struct MHD_Response *r = MHD_create_response_from_buffer(size, buf, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(buf);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, mime);
    MHD_add_response_header(r, "Content-Disposition", disp);
    srv_add_common_headers(c, r);
    srv_conn_received(c); /* an answer is going out: no 408 may be written now */
    enum MHD_Result ret = MHD_queue_response(c->conn, 200, r);
    MHD_destroy_response(r);
    c->out.status = 200;
    c->out.bytes_out = size;
    c->phase = P_DONE;
    return ret;
}
