/* jobs_pg.c: mt_jobs on PostgreSQL (libpq). See include/mt/store_jobs.h for the contract.
 *
 * Connections: a small pool for calls (each used by one thread at a time, dropped when it
 * fails and made again later, at most one attempt a second while the database is down)
 * and one connection of the background thread's own that LISTENs. The background thread
 * also renews the leases of every job this mt_jobs holds (one UPDATE for all of them, by
 * its lease token) and sweeps expired jobs.
 *
 * The table has its own schema version (mt_jobs_schema) migrated under an advisory lock
 * of its own, beside the store's (store_pg.c), so the two evolve apart. */
#include "cond.h"
#include "store_jobs.h"
#include "store.h"
#include "store_pg.h"

#include <errno.h>
#include <libpq-fe.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* pg_advisory_lock key held while the jobs table is migrated ("mt-jobs" in ASCII) */
#define JOBS_SCHEMA_LOCK 0x6d742d6a6f6273LL
#define CHANNEL "mt_jobs"

/* The jobs table, one step a version; each runs in one transaction under the lock. */
static const char *const JOB_MIGRATIONS[] = {
    /* 1: the queue. input is dropped once a job ends; result kept until ttl. */
    "CREATE TABLE mt_jobs (id text PRIMARY KEY, owner_hash text NOT NULL,"
    " state text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'done', 'failed')),"
    " name text NOT NULL, mime text NOT NULL, format integer NOT NULL,"
    " source text NOT NULL, target text NOT NULL, options jsonb NOT NULL DEFAULT '{}',"
    " input bytea, result bytea, error text, status integer,"
    " done bigint NOT NULL DEFAULT 0, total bigint NOT NULL DEFAULT 0,"
    " lease_owner text, lease_expires timestamptz, attempts integer NOT NULL DEFAULT 0,"
    " created timestamptz NOT NULL DEFAULT clock_timestamp(), started timestamptz,"
    " finished timestamptz);"
    "CREATE INDEX mt_jobs_waiting ON mt_jobs (created) WHERE state IN ('queued', 'running');"
    "CREATE INDEX mt_jobs_owner ON mt_jobs (owner_hash);"
    "CREATE INDEX mt_jobs_finished ON mt_jobs (finished) WHERE finished IS NOT NULL;",
};
static const store_pg_schema JOBS_SCHEMA = {"mt_jobs_schema", JOBS_SCHEMA_LOCK, "jobs schema", JOB_MIGRATIONS,
                                             sizeof JOB_MIGRATIONS / sizeof JOB_MIGRATIONS[0]};

struct mt_jobs {
    mt_jobs_options o;
    store_pg *pg;         /* the connection pool for calls (store_pg.c) */
    char token[160];     /* lease_owner of the jobs held through this mt_jobs */
    char lease[32], ttl[32], max_attempts[16];
    pthread_mutex_t mu;
    pthread_cond_t cond;  /* wakeups of claims (gen) */
    unsigned long gen;    /* counts notifications and wakes */
    int stop;
    int wake_pipe[2];     /* wakes the background thread's poll at close */
    pthread_t bg;
    int bg_started;
    int sync_init;        /* mu and cond made */
};

mt_jobs_options mt_jobs_options_default(void)
{
    return (mt_jobs_options){.statement_timeout_ms = 5000, .connect_timeout_s = 3, .pool_size = 4,
                             .lease_s = 30, .max_attempts = 3, .ttl = 3600, .poll_s = 5};
}

/* One statement on the pool (store_pg_query_params: lens and formats NULL for text, a
 * broken connection made again once at once): the result, or NULL with *rc MT_STORE_DOWN
 * or MT_STORE_ERROR. */
static PGresult *jq(mt_jobs *j, const char *sql, int n, const char *const *vals, const int *lens,
                    const int *formats, int binary_result, ExecStatusType want, int *rc, char *err,
                    size_t errlen)
{
    return store_pg_query_params(j->pg, sql, n, vals, lens, formats, binary_result, want == PGRES_TUPLES_OK, rc,
                                 err, errlen);
}

static int is_id(const char *s)
{
    if (!s) return 0;
    for (int i = 0; i < MT_JOBS_ID_LEN; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return s[MT_JOBS_ID_LEN] == '\0';
}

static int random_hex(char *out, size_t bytes)
{
    unsigned char rnd[32];
    if (bytes > sizeof rnd || getrandom(rnd, bytes, 0) != (ssize_t)bytes) return -1;
    for (size_t i = 0; i < bytes; i++) sprintf(out + 2 * i, "%02x", rnd[i]);
    return 0;
}

/* ---------------------------------------------------------------- background thread */

static void bump(mt_jobs *j)
{
    pthread_mutex_lock(&j->mu);
    j->gen++;
    pthread_cond_broadcast(&j->cond);
    pthread_mutex_unlock(&j->mu);
}

void mt_jobs_wake(mt_jobs *j)
{
    if (j) bump(j);
}

static int give_up(mt_jobs *j, char *err, size_t errlen);

static void renew(mt_jobs *j)
{
    const char *v[] = {j->token, j->lease};
    int rc;
    char err[300];
    PQclear(jq(j, "UPDATE mt_jobs SET lease_expires = clock_timestamp() + $2::float8 * interval '1 second'"
                  " WHERE lease_owner = $1 AND state = 'running'",
               2, v, NULL, NULL, 0, PGRES_COMMAND_OK, &rc, err, sizeof err));
}

/* LISTENs on its own connection; renews leases every lease / 3; sweeps every minute
 * (or ttl / 4); wakes the claims on every notification and at least every poll_s. */
static void *bg_main(void *arg)
{
    mt_jobs *j = arg;
    PGconn *lc = NULL;
    double last_connect = 0, next_renew = 0, next_sweep = mt_cond_now() + 1, next_poll = mt_cond_now() + j->o.poll_s;
    double renew_every = j->o.lease_s / 3, sweep_every = j->o.ttl / 4 < 60 ? j->o.ttl / 4 : 60;
    if (sweep_every < 1) sweep_every = 1;
    for (;;) {
        pthread_mutex_lock(&j->mu);
        int stop = j->stop;
        pthread_mutex_unlock(&j->mu);
        if (stop) break;
        double t = mt_cond_now();
        if (!lc && t - last_connect >= 1.0) {
            char err[300];
            last_connect = t;
            lc = store_pg_listen(j->pg, CHANNEL, err, sizeof err);
            bump(j); /* a notification may have been missed meanwhile */
        }
        if (t >= next_renew) {
            char err[300];
            renew(j);
            give_up(j, err, sizeof err); /* as often: a dead replica's last attempt fails soon */
            next_renew = mt_cond_now() + renew_every;
        }
        if (t >= next_sweep) {
            char err[300];
            mt_jobs_sweep(j, err, sizeof err);
            next_sweep = mt_cond_now() + sweep_every;
        }
        if (t >= next_poll) {
            bump(j);
            next_poll = mt_cond_now() + j->o.poll_s;
        }
        double until = next_renew < next_sweep ? next_renew : next_sweep;
        if (next_poll < until) until = next_poll;
        if (!lc && last_connect + 1.0 < until) until = last_connect + 1.0;
        struct pollfd p[2] = {{j->wake_pipe[0], POLLIN, 0}, {lc ? PQsocket(lc) : -1, POLLIN, 0}};
        double left = until - mt_cond_now();
        int got = poll(p, 2, left > 0 ? (int)(left * 1000) + 1 : 0);
        if (got > 0 && (p[0].revents & POLLIN)) break;
        if (lc && got > 0 && p[1].revents) {
            if (!PQconsumeInput(lc) || PQstatus(lc) != CONNECTION_OK) {
                PQfinish(lc);
                lc = NULL;
                bump(j);
                continue;
            }
            PGnotify *nf;
            int any = 0;
            while ((nf = PQnotifies(lc))) {
                PQfreemem(nf);
                any = 1;
            }
            if (any) bump(j);
        }
    }
    PQfinish(lc);
    return NULL;
}

/* ---------------------------------------------------------------- open, close */

mt_jobs *mt_jobs_open(const mt_jobs_options *o, char *err, size_t errlen)
{
    if (!o || !o->url || !*o->url) {
        snprintf(err, errlen, "jobs: a database URL is required");
        return NULL;
    }
    mt_jobs *j = calloc(1, sizeof *j);
    if (!j) {
        snprintf(err, errlen, "jobs: out of memory");
        return NULL;
    }
    j->o = *o;
    mt_jobs_options d = mt_jobs_options_default();
    if (j->o.statement_timeout_ms <= 0) j->o.statement_timeout_ms = d.statement_timeout_ms;
    if (j->o.connect_timeout_s <= 0) j->o.connect_timeout_s = d.connect_timeout_s;
    if (j->o.pool_size <= 0) j->o.pool_size = d.pool_size;
    if (j->o.lease_s <= 0) j->o.lease_s = d.lease_s;
    if (j->o.max_attempts <= 0) j->o.max_attempts = d.max_attempts;
    if (j->o.ttl <= 0) j->o.ttl = d.ttl;
    if (j->o.poll_s <= 0) j->o.poll_s = d.poll_s;
    j->wake_pipe[0] = j->wake_pipe[1] = -1;
    char rnd[17];
    if (random_hex(rnd, 8) || pipe(j->wake_pipe)) {
        snprintf(err, errlen, "jobs: cannot start: %s", strerror(errno ? errno : ENOMEM));
        mt_jobs_close(j);
        return NULL;
    }
    /* the random part: a restarted replica of the same name (pid 1 in every container)
     * must not renew the leases of the one that died */
    snprintf(j->token, sizeof j->token, "%.120s/%s", o->worker && *o->worker ? o->worker : "worker", rnd);
    snprintf(j->lease, sizeof j->lease, "%.3f", j->o.lease_s);
    snprintf(j->ttl, sizeof j->ttl, "%.3f", j->o.ttl);
    snprintf(j->max_attempts, sizeof j->max_attempts, "%d", j->o.max_attempts);
    pthread_mutex_init(&j->mu, NULL);
    mt_cond_init_monotonic(&j->cond);
    j->sync_init = 1;
    mt_store_options so = {.url = j->o.url,
                           .statement_timeout_ms = j->o.statement_timeout_ms,
                           .connect_timeout_s = j->o.connect_timeout_s,
                           .pool_size = j->o.pool_size};
    if (!(j->pg = store_pg_open_schema(&so, "mt-server-jobs", &JOBS_SCHEMA, err, errlen))) {
        mt_jobs_close(j);
        return NULL;
    }
    if (pthread_create(&j->bg, NULL, bg_main, j)) {
        snprintf(err, errlen, "jobs: cannot start a thread");
        mt_jobs_close(j);
        return NULL;
    }
    j->bg_started = 1;
    return j;
}

void mt_jobs_close(mt_jobs *j)
{
    if (!j) return;
    if (j->sync_init) {
        pthread_mutex_lock(&j->mu);
        j->stop = 1;
        j->gen++;
        pthread_cond_broadcast(&j->cond);
        pthread_mutex_unlock(&j->mu);
    }
    if (j->wake_pipe[1] >= 0) {
        ssize_t w = write(j->wake_pipe[1], "x", 1);
        (void)w;
    }
    if (j->bg_started) pthread_join(j->bg, NULL);
    store_pg_close(j->pg);
    if (j->sync_init) {
        pthread_mutex_destroy(&j->mu);
        pthread_cond_destroy(&j->cond);
    }
    if (j->wake_pipe[0] >= 0) close(j->wake_pipe[0]), close(j->wake_pipe[1]);
    free(j);
}

/* ---------------------------------------------------------------- submit, look up */

int mt_jobs_submit(mt_jobs *j, const mt_jobs_new *n, char *id, char *err, size_t errlen)
{
    if (!j || !n || !id || (!n->input && n->len)) {
        snprintf(err, errlen, "jobs: bad arguments");
        return MT_STORE_ERROR;
    }
    if (n->len > 0x7fffffff) {
        snprintf(err, errlen, "jobs: the file is too large for the queue");
        return MT_STORE_ERROR;
    }
    if (random_hex(id, MT_JOBS_ID_LEN / 2)) {
        snprintf(err, errlen, "jobs: no random bytes for an id");
        return MT_STORE_ERROR;
    }
    char owner[MT_STORE_SHA256_HEX], fmt[16], maxj[16], maxo[16];
    mt_store_sha256_hex(n->owner, owner);
    snprintf(fmt, sizeof fmt, "%d", n->format);
    snprintf(maxj, sizeof maxj, "%d", j->o.max_jobs);
    snprintf(maxo, sizeof maxo, "%d", j->o.max_per_owner);
    const char *v[] = {id, owner, n->name ? n->name : "file", n->mime ? n->mime : "application/octet-stream",
                       fmt, n->source ? n->source : "", n->target ? n->target : "",
                       n->options_json ? n->options_json : "{}", n->input ? (const char *)n->input : "",
                       maxj, maxo};
    int lens[11] = {0};
    lens[8] = (int)n->len;
    int formats[11] = {0};
    formats[8] = 1; /* the file as raw bytes: no escaping, no size doubling */
    /* the limits count what is still kept (expired jobs not swept yet do not count); the
     * notification goes out when the transaction commits */
    static const char sql[] =
        "WITH ins AS (INSERT INTO mt_jobs (id, owner_hash, name, mime, format, source, target, options, input)"
        " SELECT $1, $2, $3, $4, $5::integer, $6, $7, $8::jsonb, $9::bytea"
        " WHERE ($10::integer <= 0 OR (SELECT count(*) FROM mt_jobs WHERE finished IS NULL OR finished >="
        "  clock_timestamp() - $12::float8 * interval '1 second') < $10::integer)"
        " AND ($11::integer <= 0 OR (SELECT count(*) FROM mt_jobs WHERE owner_hash = $2 AND (finished IS NULL"
        "  OR finished >= clock_timestamp() - $12::float8 * interval '1 second')) < $11::integer)"
        " RETURNING id)"
        " SELECT pg_notify('" CHANNEL "', id) FROM ins";
    const char *v12[12];
    memcpy(v12, v, sizeof v);
    v12[11] = j->ttl;
    int lens12[12] = {0}, formats12[12] = {0};
    memcpy(lens12, lens, sizeof lens);
    memcpy(formats12, formats, sizeof formats);
    int rc;
    PGresult *r = jq(j, sql, 12, v12, lens12, formats12, 0, PGRES_TUPLES_OK, &rc, err, errlen);
    if (!r) return rc;
    int inserted = PQntuples(r) == 1;
    PQclear(r);
    if (inserted) return MT_STORE_OK;
    /* which limit: the owner's when it holds its share */
    const char *v2[] = {owner, j->ttl};
    r = jq(j, "SELECT count(*) FROM mt_jobs WHERE owner_hash = $1 AND (finished IS NULL OR finished >="
              " clock_timestamp() - $2::float8 * interval '1 second')",
           2, v2, NULL, NULL, 0, PGRES_TUPLES_OK, &rc, err, errlen);
    long own = r ? atol(PQgetvalue(r, 0, 0)) : 0;
    PQclear(r);
    if (j->o.max_per_owner > 0 && own >= j->o.max_per_owner) {
        snprintf(err, errlen, "you have %ld files being translated or waiting for download (limit %d per client)",
                 own, j->o.max_per_owner);
        return MT_JOBS_OWNER_FULL;
    }
    snprintf(err, errlen, "%d files are being translated or waiting for download (limit); try again later",
             j->o.max_jobs);
    return MT_JOBS_FULL;
}

static mt_jobs_state state_of(const char *s)
{
    return !strcmp(s, "running") ? MT_JOBS_RUNNING
         : !strcmp(s, "done")    ? MT_JOBS_DONE
         : !strcmp(s, "failed")  ? MT_JOBS_FAILED
                                 : MT_JOBS_QUEUED;
}

int mt_jobs_lookup(mt_jobs *j, const char *id, mt_jobs_entry *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!j || !is_id(id)) return 0;
    const char *v[] = {id, j->ttl};
    int rc;
    PGresult *r = jq(j,
                     "SELECT state, done, total, name, mime, coalesce(error, ''), coalesce(status, 0),"
                     " coalesce(octet_length(result), 0), attempts, coalesce(lease_owner, '')"
                     " FROM mt_jobs WHERE id = $1 AND (finished IS NULL OR finished >="
                     " clock_timestamp() - $2::float8 * interval '1 second')",
                     2, v, NULL, NULL, 0, PGRES_TUPLES_OK, &rc, err, errlen);
    if (!r) return rc;
    int found = PQntuples(r) == 1;
    if (found) {
        out->state = state_of(PQgetvalue(r, 0, 0));
        out->done = atol(PQgetvalue(r, 0, 1));
        out->total = atol(PQgetvalue(r, 0, 2));
        snprintf(out->name, sizeof out->name, "%s", PQgetvalue(r, 0, 3));
        snprintf(out->mime, sizeof out->mime, "%s", PQgetvalue(r, 0, 4));
        snprintf(out->error, sizeof out->error, "%s", PQgetvalue(r, 0, 5));
        out->status = atoi(PQgetvalue(r, 0, 6));
        out->size = (size_t)atoll(PQgetvalue(r, 0, 7));
        out->attempts = atoi(PQgetvalue(r, 0, 8));
        snprintf(out->lease_owner, sizeof out->lease_owner, "%s", PQgetvalue(r, 0, 9));
    }
    PQclear(r);
    return found;
}

int mt_jobs_result(mt_jobs *j, const char *id, char **data, size_t *len, char *err, size_t errlen)
{
    *data = NULL;
    *len = 0;
    if (!j || !is_id(id)) return 0;
    const char *v[] = {id, j->ttl};
    int rc;
    PGresult *r = jq(j,
                     "SELECT result FROM mt_jobs WHERE id = $1 AND state = 'done' AND result IS NOT NULL"
                     " AND finished >= clock_timestamp() - $2::float8 * interval '1 second'",
                     2, v, NULL, NULL, 1, PGRES_TUPLES_OK, &rc, err, errlen);
    if (!r) return rc;
    int found = PQntuples(r) == 1;
    if (found) {
        size_t n = (size_t)PQgetlength(r, 0, 0);
        *data = malloc(n ? n : 1);
        if (!*data) {
            PQclear(r);
            snprintf(err, errlen, "jobs: out of memory");
            return MT_STORE_ERROR;
        }
        memcpy(*data, PQgetvalue(r, 0, 0), n);
        *len = n;
    }
    PQclear(r);
    return found;
}

int mt_jobs_annotate(mt_jobs *j, const char *id, const char *json, char *err, size_t errlen)
{
    if (!j || !is_id(id) || !json) return 0;
    const char *v[] = {id, json};
    int rc;
    PGresult *r = jq(j, "UPDATE mt_jobs SET options = options || $2::jsonb WHERE id = $1", 2, v, NULL, NULL, 0,
                     PGRES_COMMAND_OK, &rc, err, errlen);
    if (!r) return rc;
    int n = atoi(PQcmdTuples(r));
    PQclear(r);
    return n > 0;
}

int mt_jobs_find_by_option(mt_jobs *j, const char *field, const char *value, char *id, double *age_s,
                           char *options, size_t cap, char *err, size_t errlen)
{
    if (!j || !field || !value) return 0;
    const char *v[] = {field, value, j->ttl};
    int rc;
    PGresult *r = jq(j,
                     "SELECT id, extract(epoch FROM clock_timestamp() - created), options::text FROM mt_jobs"
                     " WHERE options ->> $1 = $2 AND (finished IS NULL OR finished >="
                     " clock_timestamp() - $3::float8 * interval '1 second') LIMIT 1",
                     3, v, NULL, NULL, 0, PGRES_TUPLES_OK, &rc, err, errlen);
    if (!r) return rc;
    int found = PQntuples(r) == 1;
    if (found) {
        snprintf(id, MT_JOBS_ID_LEN + 1, "%s", PQgetvalue(r, 0, 0));
        if (age_s) *age_s = atof(PQgetvalue(r, 0, 1));
        if (options && cap) snprintf(options, cap, "%s", PQgetvalue(r, 0, 2));
    }
    PQclear(r);
    return found;
}

/* ---------------------------------------------------------------- workers */

void mt_jobs_claimed_clear(mt_jobs_claimed *c)
{
    if (!c) return;
    free(c->input);
    free(c->options_json);
    memset(c, 0, sizeof *c);
}

/* Field i of row 0 of a binary result that is text, into out. */
static void bin_text(PGresult *r, int i, char *out, size_t cap)
{
    size_t n = (size_t)PQgetlength(r, 0, i);
    if (n >= cap) n = cap - 1;
    memcpy(out, PQgetvalue(r, 0, i), n);
    out[n] = 0;
}

int mt_jobs_claim(mt_jobs *j, double wait_s, mt_jobs_claimed *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&j->mu);
    unsigned long gen = j->gen;
    int stop = j->stop;
    pthread_mutex_unlock(&j->mu);
    if (stop) return 0;
    const char *v[] = {j->token, j->lease, j->max_attempts};
    /* every column as text or bytea, read in the binary format (the file as raw bytes) */
    static const char sql[] =
        "UPDATE mt_jobs AS j SET state = 'running', lease_owner = $1,"
        " lease_expires = clock_timestamp() + $2::float8 * interval '1 second',"
        " attempts = j.attempts + 1, started = coalesce(j.started, clock_timestamp())"
        " FROM (SELECT id FROM mt_jobs WHERE (state = 'queued' OR (state = 'running' AND lease_expires <"
        "  clock_timestamp())) AND attempts < $3::integer ORDER BY created LIMIT 1 FOR UPDATE SKIP LOCKED) AS c"
        " WHERE j.id = c.id"
        " RETURNING j.id, j.format::text, j.source, j.target, j.owner_hash, j.options::text, j.input,"
        "  j.attempts::text, j.name";
    int rc;
    PGresult *r = jq(j, sql, 3, v, NULL, NULL, 1, PGRES_TUPLES_OK, &rc, err, errlen);
    if (!r) return rc;
    if (PQntuples(r) == 1) {
        char num[32];
        bin_text(r, 0, out->id, sizeof out->id);
        bin_text(r, 1, num, sizeof num);
        out->format = atoi(num);
        bin_text(r, 2, out->source, sizeof out->source);
        bin_text(r, 3, out->target, sizeof out->target);
        bin_text(r, 4, out->owner, sizeof out->owner);
        size_t on = (size_t)PQgetlength(r, 0, 5), n = (size_t)PQgetlength(r, 0, 6);
        out->options_json = malloc(on + 1);
        out->input = malloc(n ? n : 1);
        bin_text(r, 7, num, sizeof num);
        out->attempts = atoi(num);
        bin_text(r, 8, out->name, sizeof out->name);
        if (out->options_json) memcpy(out->options_json, PQgetvalue(r, 0, 5), on), out->options_json[on] = 0;
        if (out->input) memcpy(out->input, PQgetvalue(r, 0, 6), n);
        out->len = n;
        PQclear(r);
        if (!out->options_json || !out->input) {
            mt_jobs_release(j, out);
            mt_jobs_claimed_clear(out);
            snprintf(err, errlen, "jobs: out of memory");
            return MT_STORE_ERROR;
        }
        return 1;
    }
    PQclear(r);
    /* nothing to claim: wait for a notification, or until the first lease held elsewhere
     * expires (its job is then ours to take over), or wait_s */
    r = jq(j, "SELECT extract(epoch FROM min(lease_expires) - clock_timestamp()) FROM mt_jobs"
              " WHERE state = 'running' AND attempts < $1::integer",
           1, v + 2, NULL, NULL, 0, PGRES_TUPLES_OK, &rc, err, errlen);
    double wait = wait_s;
    if (r && !PQgetisnull(r, 0, 0)) {
        double e = atof(PQgetvalue(r, 0, 0)) + 0.05;
        if (e < wait) wait = e < 0.05 ? 0.05 : e;
    }
    PQclear(r);
    struct timespec ts = mt_cond_deadline(wait);
    pthread_mutex_lock(&j->mu);
    while (j->gen == gen && !j->stop)
        if (pthread_cond_timedwait(&j->cond, &j->mu, &ts) == ETIMEDOUT) break;
    pthread_mutex_unlock(&j->mu);
    return 0;
}

static int held_update(mt_jobs *j, const mt_jobs_claimed *c, const char *sql, ExecStatusType want, int n_extra,
                       const char *const *extra, const int *extra_lens, const int *extra_formats, char *err,
                       size_t errlen)
{
    char att[16];
    snprintf(att, sizeof att, "%d", c->attempts);
    const char *v[8] = {c->id, j->token, att};
    int lens[8] = {0}, formats[8] = {0};
    for (int i = 0; i < n_extra && i < 5; i++) {
        v[3 + i] = extra[i];
        if (extra_lens) lens[3 + i] = extra_lens[i];
        if (extra_formats) formats[3 + i] = extra_formats[i];
    }
    int rc;
    PGresult *r = jq(j, sql, 3 + n_extra, v, lens, formats, 0, want, &rc, err, errlen);
    if (!r) return rc;
    int n = want == PGRES_TUPLES_OK ? PQntuples(r) : atoi(PQcmdTuples(r));
    PQclear(r);
    return n > 0;
}

#define HELD " WHERE id = $1 AND lease_owner = $2 AND attempts = $3::integer AND state = 'running'"

int mt_jobs_progress(mt_jobs *j, const mt_jobs_claimed *c, long done, long total)
{
    char d[32], t[32], err[300];
    snprintf(d, sizeof d, "%ld", done);
    snprintf(t, sizeof t, "%ld", total);
    const char *x[] = {d, t};
    return held_update(j, c, "UPDATE mt_jobs SET done = $4::bigint, total = $5::bigint" HELD, PGRES_COMMAND_OK, 2, x, NULL, NULL,
                       err, sizeof err);
}

int mt_jobs_finish(mt_jobs *j, const mt_jobs_claimed *c, const void *data, size_t len, char *err,
                   size_t errlen)
{
    if (len > 0x7fffffff) {
        snprintf(err, errlen, "jobs: the result is too large for the queue");
        return MT_STORE_ERROR;
    }
    const char *x[] = {data ? data : ""};
    int lens[] = {(int)len}, formats[] = {1};
    return held_update(j, c,
                       "UPDATE mt_jobs SET state = 'done', result = $4::bytea, input = NULL, done = total,"
                       " finished = clock_timestamp(), lease_owner = NULL, lease_expires = NULL" HELD,
                       PGRES_COMMAND_OK, 1, x, lens, formats, err, errlen);
}

int mt_jobs_fail(mt_jobs *j, const mt_jobs_claimed *c, int status, const char *message)
{
    char st[16], err[300];
    snprintf(st, sizeof st, "%d", status);
    const char *x[] = {message ? message : "translation failed", st};
    return held_update(j, c,
                       "UPDATE mt_jobs SET state = 'failed', error = $4, status = $5::integer, input = NULL,"
                       " finished = clock_timestamp(), lease_owner = NULL, lease_expires = NULL" HELD,
                       PGRES_COMMAND_OK, 2, x, NULL, NULL, err, sizeof err);
}

int mt_jobs_release(mt_jobs *j, const mt_jobs_claimed *c)
{
    char err[300];
    int rc = held_update(j, c,
                         "WITH r AS (UPDATE mt_jobs SET state = 'queued', attempts = attempts - 1,"
                         " lease_owner = NULL, lease_expires = NULL" HELD " RETURNING id)"
                         " SELECT pg_notify('" CHANNEL "', id) FROM r",
                         PGRES_TUPLES_OK, 0, NULL, NULL, NULL, err, sizeof err);
    return rc;
}

/* Fails the jobs whose lease expired after their last allowed claim. */
static int give_up(mt_jobs *j, char *err, size_t errlen)
{
    const char *v[] = {j->max_attempts};
    int rc;
    PGresult *r = jq(j,
                     "UPDATE mt_jobs SET state = 'failed', status = 500, input = NULL, finished = clock_timestamp(),"
                     " error = 'given up after ' || attempts || ' attempt(s): the replica working on it (last '"
                     " || coalesce(lease_owner, '?') || ') stopped renewing its lease',"
                     " lease_owner = NULL, lease_expires = NULL"
                     " WHERE state = 'running' AND lease_expires < clock_timestamp() AND attempts >= $1::integer",
                     1, v, NULL, NULL, 0, PGRES_COMMAND_OK, &rc, err, errlen);
    if (!r) return rc;
    int n = atoi(PQcmdTuples(r));
    PQclear(r);
    return n;
}

int mt_jobs_sweep(mt_jobs *j, char *err, size_t errlen)
{
    if (!j) return 0;
    const char *v[] = {j->ttl};
    int rc;
    PGresult *r = jq(j, "DELETE FROM mt_jobs WHERE finished < clock_timestamp() - $1::float8 * interval '1 second'",
                     1, v, NULL, NULL, 0, PGRES_COMMAND_OK, &rc, err, errlen);
    if (!r) return rc;
    int n = atoi(PQcmdTuples(r));
    PQclear(r);
    int g = give_up(j, err, errlen);
    return g < 0 ? g : n + g;
}

int mt_jobs_counts(mt_jobs *j, long counts[4], char *err, size_t errlen)
{
    for (int i = 0; i < 4; i++) counts[i] = 0;
    int rc;
    PGresult *r = jq(j, "SELECT state, count(*) FROM mt_jobs GROUP BY state", 0, NULL, NULL, NULL, 0,
                     PGRES_TUPLES_OK, &rc, err, errlen);
    if (!r) return rc;
    for (int i = 0; i < PQntuples(r); i++) counts[state_of(PQgetvalue(r, i, 0))] = atol(PQgetvalue(r, i, 1));
    PQclear(r);
    return 0;
}

long mt_jobs_depth(mt_jobs *j, char *err, size_t errlen)
{
    int rc;
    PGresult *r = jq(j, "SELECT count(*) FROM mt_jobs WHERE state = 'queued'", 0, NULL, NULL, NULL, 0,
                     PGRES_TUPLES_OK, &rc, err, errlen);
    if (!r) return rc;
    long n = atol(PQgetvalue(r, 0, 0));
    PQclear(r);
    return n;
}
