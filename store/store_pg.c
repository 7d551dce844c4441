/* store_pg.c: mt_store on PostgreSQL (libpq). A small pool of connections, each used by
 * one thread at a time; a connection found broken is dropped and made again. While the
 * database is down, new connections are tried at most once a second and every other call
 * fails at once with the last reason, so requests never queue behind a dead database. */
#include "cond.h"
#include "store_pg.h"
#include "url.h"

#include <libpq-fe.h>
#include <math.h>
#include <nettle/sha2.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* pg_advisory_lock key held while the schema is migrated ("mt-store" in ASCII, truncated) */
#define SCHEMA_LOCK 0x6d742d73746f7265LL

enum { SLOT_STATEMENTS = 16 };

typedef struct {
    PGconn *conn;
    int busy;
    int used; /* conn answered a query before (a failure then may be an old socket) */
    char *prepared[SLOT_STATEMENTS]; /* SQL of the statements prepared on conn as mt0, mt1... */
} pg_slot;

/* The connection of s is gone: so are its prepared statements. */
static void slot_drop(pg_slot *s)
{
    PQfinish(s->conn);
    s->conn = NULL;
    s->used = 0;
    for (int i = 0; i < SLOT_STATEMENTS; i++) {
        free(s->prepared[i]);
        s->prepared[i] = NULL;
    }
}

struct store_pg {
    char *url;
    char app_name[64];   /* application_name of its connections */
    char stmt_opt[64], conn_timeout[16];
    int timeout_ms;      /* statement_timeout */
    atomic_uint charges; /* rate charges so far: every 1024th also drops drained buckets */
    pthread_mutex_t mu;
    pthread_cond_t cond;
    pg_slot *slots;
    int n_slots;
    int down;            /* the last connection attempt failed */
    double last_attempt; /* CLOCK_MONOTONIC seconds of the last failed attempt */
    char reason[256];    /* why it is down (libpq's first line; never the URL) */
};

/* The schema, one step a version; each runs in one transaction under SCHEMA_LOCK. */
static const char *const MIGRATIONS[] = {
    /* 1: suggestions, API keys (SHA-256 of the key), rate buckets (unlogged: counters need
     * not survive a database crash) and the drain of a bucket at its limit per minute */
    "CREATE TABLE mt_suggestions (id bigserial PRIMARY KEY, q text NOT NULL, s text NOT NULL,"
    " source text NOT NULL, target text NOT NULL, created timestamptz NOT NULL DEFAULT now());"
    "CREATE TABLE mt_api_keys (id bigserial PRIMARY KEY, name text NOT NULL UNIQUE,"
    " key_hash bytea NOT NULL UNIQUE, chars_per_minute bigint NOT NULL DEFAULT 0"
    " CHECK (chars_per_minute >= 0), created timestamptz NOT NULL DEFAULT now());"
    "CREATE UNLOGGED TABLE mt_rate (client text PRIMARY KEY, requests float8 NOT NULL,"
    " chars float8 NOT NULL, at timestamptz NOT NULL);"
    "CREATE FUNCTION mt_drain(used float8, lim float8, since timestamptz) RETURNS float8"
    " LANGUAGE sql AS $$ SELECT CASE WHEN lim <= 0 THEN 0 ELSE"
    " greatest(0, used - lim * extract(epoch FROM clock_timestamp() - since) / 60) END $$;",
    /* 2: DeepL glossaries per API key (glossaries.c): the entries as TSV */
    "CREATE TABLE mt_glossaries (id uuid PRIMARY KEY, owner_hash text NOT NULL, name text NOT NULL,"
    " source text NOT NULL, target text NOT NULL, entries text NOT NULL,"
    " entry_count integer NOT NULL CHECK (entry_count > 0), created timestamptz NOT NULL DEFAULT now());"
    "CREATE INDEX mt_glossaries_owner ON mt_glossaries (owner_hash, created);",
};
static const store_pg_schema STORE_SCHEMA = {"mt_schema", SCHEMA_LOCK, "schema", MIGRATIONS,
                                              sizeof MIGRATIONS / sizeof MIGRATIONS[0]};

/* libpq's message, first line only (it may span lines with hints). */
static void pq_reason(const char *msg, char *out, size_t cap)
{
    if (!msg || !*msg) msg = "unknown error";
    size_t n = strcspn(msg, "\n");
    if (n >= cap) n = cap - 1;
    memcpy(out, msg, n);
    out[n] = 0;
}

void store_pg_redact(const char *url, char *out, size_t cap)
{
    mt_url_redact(url, out, cap);
}

/* libpq prints a server's notices (NOTICE: relation exists...) on stderr by default. */
static void quiet(void *arg, const char *msg)
{
    (void)arg, (void)msg;
}

/* A new connection: the URL as given (libpq reads PG* variables and the password file),
 * under our timeouts unless the URL sets its own. NULL with the reason. */
static PGconn *connect_one(store_pg *pg, char *err, size_t errlen)
{
    /* With expand_dbname, the URL (last) overrides what precedes it. */
    const char *keys[] = {"connect_timeout", "options", "application_name", "keepalives",
                          "keepalives_idle", "keepalives_interval", "keepalives_count",
                          "tcp_user_timeout", "dbname", NULL};
    const char *vals[] = {pg->conn_timeout, pg->stmt_opt, pg->app_name, "1", "5", "2", "3",
                          "10000", pg->url, NULL};
    PGconn *c = PQconnectdbParams(keys, vals, 1);
    if (!c || PQstatus(c) != CONNECTION_OK) {
        char r[256];
        pq_reason(c ? PQerrorMessage(c) : "out of memory", r, sizeof r);
        snprintf(err, errlen, "database: %s", r);
        PQfinish(c);
        return NULL;
    }
    PQsetNoticeProcessor(c, quiet, NULL);
    return c;
}

/* Waits for the results of what was sent on c until `until` (the server's
 * statement_timeout stops a query before; this bounds a server that does not answer at
 * all: the caller then drops the connection). The first result, or NULL with the reason
 * and its SQLSTATE (empty when the connection failed or did not answer). */
static PGresult *wait_result(PGconn *c, double until, int timeout_ms, char sqlstate[6], char *err, size_t errlen)
{
    sqlstate[0] = 0;
    PGresult *r = NULL, *x;
    for (;;) { /* every result until the end (PQgetResult NULL) */
        while (PQisBusy(c)) {
            double left = until - mt_cond_now();
            struct pollfd p = {PQsocket(c), POLLIN, 0};
            if (left <= 0 || poll(&p, 1, (int)(left * 1000) + 1) == 0) {
                PQclear(r);
                snprintf(err, errlen, "database: no answer within %d ms", timeout_ms);
                return NULL;
            }
            if (!PQconsumeInput(c)) break;
        }
        if (!(x = PQgetResult(c))) break;
        if (!r) r = x;
        else PQclear(x);
        if (PQstatus(c) != CONNECTION_OK) break;
    }
    ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return r;
    char reason[256];
    pq_reason(r ? PQresultErrorMessage(r) : PQerrorMessage(c), reason, sizeof reason);
    if (!*reason) pq_reason(PQerrorMessage(c), reason, sizeof reason);
    const char *code = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    snprintf(sqlstate, 6, "%s", code ? code : "");
    snprintf(err, errlen, "database: %s", reason);
    PQclear(r);
    return NULL;
}

/* One statement's parameters as PQexecParams takes them: lens and formats NULL when
 * every value is text; binary_result 1 reads every column in the binary format. */
typedef struct {
    int n;
    const char *const *vals;
    const int *lens, *formats;
    int binary_result;
} pg_params;

/* Runs sql on c, waiting at most timeout_ms: the result when its status is `want`, else
 * NULL with the reason and SQLSTATE (wait_result). With a slot, the statement is prepared
 * on its connection the first time (parsed and planned once, not on every request). */
static PGresult *run(PGconn *c, pg_slot *slot, const char *sql, const pg_params *p, ExecStatusType want,
                     int timeout_ms, char sqlstate[6], char *err, size_t errlen)
{
    int n = p ? p->n : 0;
    double until = mt_cond_now() + timeout_ms / 1000.0;
    char name[16] = "";
    int sent;
    if (slot) {
        int i = 0;
        while (i < SLOT_STATEMENTS && slot->prepared[i] && strcmp(slot->prepared[i], sql)) i++;
        if (i < SLOT_STATEMENTS) {
            snprintf(name, sizeof name, "mt%d", i);
            if (!slot->prepared[i]) {
                if (!PQsendPrepare(c, name, sql, n, NULL)) goto send_failed;
                PGresult *p = wait_result(c, until, timeout_ms, sqlstate, err, errlen);
                if (!p) return NULL;
                PQclear(p);
                slot->prepared[i] = strdup(sql); /* out of memory: prepared again next time */
            }
        }
    }
    const char *const *vals = p ? p->vals : NULL;
    const int *lens = p ? p->lens : NULL, *formats = p ? p->formats : NULL;
    int binary = p ? p->binary_result : 0;
    sent = name[0] ? PQsendQueryPrepared(c, name, n, vals, lens, formats, binary)
                   : PQsendQueryParams(c, sql, n, NULL, vals, lens, formats, binary);
    if (!sent) goto send_failed;
    PGresult *r = wait_result(c, until, timeout_ms, sqlstate, err, errlen);
    if (!r || PQresultStatus(r) == want) return r;
    snprintf(err, errlen, "database: unexpected answer (%s)", PQresStatus(PQresultStatus(r)));
    PQclear(r);
    return NULL;
send_failed:
    sqlstate[0] = 0;
    char reason[256];
    pq_reason(PQerrorMessage(c), reason, sizeof reason);
    snprintf(err, errlen, "database: %s", reason);
    return NULL;
}

/* run() for the schema's statements: one connection at start, no pool yet. */
static PGresult *run_once(PGconn *c, const char *sql, ExecStatusType want, char *err, size_t errlen)
{
    char state[6];
    return run(c, NULL, sql, NULL, want, 60000, state, err, errlen);
}

/* Migrates the schema on c to the last version, under its advisory lock. */
static int migrate(PGconn *c, const store_pg_schema *sc, char *err, size_t errlen)
{
    char lock[64], sql[8192];
    snprintf(lock, sizeof lock, "SELECT pg_advisory_lock(%lld)", sc->lock);
    PGresult *r = run_once(c, lock, PGRES_TUPLES_OK, err, errlen);
    if (!r) return -1;
    PQclear(r);
    int rc = -1, version = 0;
    snprintf(sql, sizeof sql, "CREATE TABLE IF NOT EXISTS %s (version integer NOT NULL)", sc->table);
    if (!(r = run_once(c, sql, PGRES_COMMAND_OK, err, errlen))) goto unlock;
    PQclear(r);
    snprintf(sql, sizeof sql, "SELECT coalesce(max(version), 0) FROM %s", sc->table);
    if (!(r = run_once(c, sql, PGRES_TUPLES_OK, err, errlen))) goto unlock;
    version = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    if (version > sc->n_steps) {
        snprintf(err, errlen, "database: %s version %d is newer than this server's %d", sc->label, version,
                 sc->n_steps);
        goto unlock;
    }
    for (int v = version; v < sc->n_steps; v++) {
        snprintf(sql, sizeof sql, "BEGIN; %s DELETE FROM %s; INSERT INTO %s VALUES (%d); COMMIT;", sc->steps[v],
                 sc->table, sc->table, v + 1);
        /* several statements: PQexec (the simple protocol) runs them in one string */
        r = PQexec(c, sql);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            char reason[256];
            pq_reason(PQresultErrorMessage(r), reason, sizeof reason);
            snprintf(err, errlen, "database: %s version %d: %s", sc->label, v + 1, reason);
            PQclear(r);
            PQclear(PQexec(c, "ROLLBACK"));
            goto unlock;
        }
        PQclear(r);
    }
    rc = 0;
unlock:
    snprintf(lock, sizeof lock, "SELECT pg_advisory_unlock(%lld)", sc->lock);
    PQclear(PQexec(c, lock));
    return rc;
}

store_pg *store_pg_open(const mt_store_options *o, char *err, size_t errlen)
{
    return store_pg_open_schema(o, "mt-server", &STORE_SCHEMA, err, errlen);
}

store_pg *store_pg_open_schema(const mt_store_options *o, const char *app_name, const store_pg_schema *schema,
                               char *err, size_t errlen)
{
    store_pg *pg = calloc(1, sizeof *pg);
    int n = o->pool_size > 0 ? o->pool_size : 4;
    if (!pg || !(pg->url = strdup(o->url)) || !(pg->slots = calloc((size_t)n, sizeof *pg->slots))) {
        if (pg) free(pg->url);
        free(pg);
        snprintf(err, errlen, "store: out of memory");
        return NULL;
    }
    pg->n_slots = n;
    snprintf(pg->app_name, sizeof pg->app_name, "%s", app_name);
    pg->timeout_ms = o->statement_timeout_ms > 0 ? o->statement_timeout_ms : 5000;
    snprintf(pg->stmt_opt, sizeof pg->stmt_opt, "-c statement_timeout=%d", pg->timeout_ms);
    snprintf(pg->conn_timeout, sizeof pg->conn_timeout, "%d", o->connect_timeout_s > 0 ? o->connect_timeout_s : 3);
    pthread_mutex_init(&pg->mu, NULL);
    mt_cond_init_monotonic(&pg->cond);
    /* one connection at start: a database that cannot be reached or migrated is an error
     * the operator sees at once */
    PGconn *c = connect_one(pg, err, errlen);
    if (!c || migrate(c, schema, err, errlen)) {
        PQfinish(c);
        store_pg_close(pg);
        return NULL;
    }
    pg->slots[0].conn = c;
    return pg;
}

void store_pg_close(store_pg *pg)
{
    if (!pg) return;
    for (int i = 0; i < pg->n_slots; i++) slot_drop(&pg->slots[i]);
    free(pg->slots);
    free(pg->url);
    pthread_mutex_destroy(&pg->mu);
    pthread_cond_destroy(&pg->cond);
    free(pg);
}

/* A free slot with a live connection, or NULL with MT_STORE_DOWN's reason. */
static pg_slot *acquire(store_pg *pg, char *err, size_t errlen)
{
    pthread_mutex_lock(&pg->mu);
    pg_slot *s = NULL;
    double until = mt_cond_now() + 5.0;
    for (;;) {
        for (int i = 0; i < pg->n_slots && !s; i++)
            if (!pg->slots[i].busy) s = &pg->slots[i];
        if (s || mt_cond_now() >= until) break;
        struct timespec ts = mt_cond_deadline(0.05);
        pthread_cond_timedwait(&pg->cond, &pg->mu, &ts);
    }
    if (!s) {
        pthread_mutex_unlock(&pg->mu);
        snprintf(err, errlen, "database: every connection busy for 5 s");
        return NULL;
    }
    s->busy = 1;
    if (s->conn && PQstatus(s->conn) == CONNECTION_OK) {
        pthread_mutex_unlock(&pg->mu);
        return s;
    }
    if (pg->down && mt_cond_now() - pg->last_attempt < 1.0) {
        snprintf(err, errlen, "%s", pg->reason);
        s->busy = 0;
        pthread_cond_signal(&pg->cond);
        pthread_mutex_unlock(&pg->mu);
        return NULL;
    }
    pg->last_attempt = mt_cond_now();
    pthread_mutex_unlock(&pg->mu);
    slot_drop(s);
    char why[256];
    s->conn = connect_one(pg, why, sizeof why);
    pthread_mutex_lock(&pg->mu);
    pg->down = !s->conn;
    if (!s->conn) {
        snprintf(pg->reason, sizeof pg->reason, "%s", why);
        snprintf(err, errlen, "%s", why);
        s->busy = 0;
        pthread_cond_signal(&pg->cond);
    }
    pthread_mutex_unlock(&pg->mu);
    return s->conn ? s : NULL;
}

static void release(store_pg *pg, pg_slot *s)
{
    pthread_mutex_lock(&pg->mu);
    s->busy = 0;
    pthread_cond_signal(&pg->cond);
    pthread_mutex_unlock(&pg->mu);
}

/* One statement on a pooled connection: the result (status want), or NULL with *rc set to
 * MT_STORE_DOWN (no connection, a broken one, a timeout) or MT_STORE_ERROR. A connection
 * that broke since its last use is made again once at once: after a database restart
 * the first call must not fail for an old socket. */
static PGresult *query_params(store_pg *pg, const char *sql, const pg_params *p, ExecStatusType want,
                              int *rc, char *err, size_t errlen)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        pg_slot *s = acquire(pg, err, errlen);
        if (!s) {
            *rc = MT_STORE_DOWN;
            return NULL;
        }
        int was_used = s->used;
        char state[6];
        PGresult *r = run(s->conn, s, sql, p, want, pg->timeout_ms + 1000, state, err, errlen);
        s->used = 1;
        if (r) {
            release(pg, s);
            *rc = MT_STORE_OK;
            return r;
        }
        /* no SQLSTATE: the connection failed or did not answer; 57014: statement_timeout;
         * 57P01-57P03: the server is shutting down or not accepting connections; class
         * 08: connection exceptions. The connection is dropped and made again later. */
        int down = !state[0] || !strcmp(state, "57014") || !strncmp(state, "57P", 3) || !strncmp(state, "08", 2);
        if (down || PQstatus(s->conn) != CONNECTION_OK) {
            slot_drop(s);
            pthread_mutex_lock(&pg->mu);
            snprintf(pg->reason, sizeof pg->reason, "%s", err);
            /* What broke one connection that worked (a restart, a cut or silent network)
             * broke the idle ones opened before it too: drop them, so that the retry below
             * and the next callers connect afresh instead of finding another dead socket
             * (with two in the pool, both attempts could fail on old connections). */
            if (was_used)
                for (int i = 0; i < pg->n_slots; i++)
                    if (!pg->slots[i].busy && pg->slots[i].conn) slot_drop(&pg->slots[i]);
            pthread_mutex_unlock(&pg->mu);
            down = 1;
        }
        release(pg, s);
        *rc = down ? MT_STORE_DOWN : MT_STORE_ERROR;
        /* a connection that worked before and broke meanwhile (a database restart) is made
         * again at once, once; a new one that fails is the answer */
        if (!down || !was_used || !strcmp(state, "57014")) return NULL;
    }
    return NULL;
}

/* query_params() with text parameters and results. */
static PGresult *query(store_pg *pg, const char *sql, int n, const char *const *vals, ExecStatusType want,
                       int *rc, char *err, size_t errlen)
{
    pg_params p = {n, vals, NULL, NULL, 0};
    return query_params(pg, sql, &p, want, rc, err, errlen);
}

PGresult *store_pg_query(store_pg *pg, const char *sql, int n, const char *const *vals, int tuples, int *rc,
                         char *err, size_t errlen)
{
    return query(pg, sql, n, vals, tuples ? PGRES_TUPLES_OK : PGRES_COMMAND_OK, rc, err, errlen);
}

PGresult *store_pg_query_params(store_pg *pg, const char *sql, int n, const char *const *vals, const int *lens,
                                const int *formats, int binary_result, int tuples, int *rc, char *err,
                                size_t errlen)
{
    pg_params p = {n, vals, lens, formats, binary_result};
    return query_params(pg, sql, &p, tuples ? PGRES_TUPLES_OK : PGRES_COMMAND_OK, rc, err, errlen);
}

PGconn *store_pg_listen(store_pg *pg, const char *channel, char *err, size_t errlen)
{
    PGconn *c = connect_one(pg, err, errlen);
    if (!c) return NULL;
    char sql[128], state[6];
    snprintf(sql, sizeof sql, "LISTEN %s", channel);
    PGresult *r = run(c, NULL, sql, NULL, PGRES_COMMAND_OK, pg->timeout_ms + 1000, state, err, errlen);
    if (!r) {
        PQfinish(c);
        return NULL;
    }
    PQclear(r);
    return c;
}

int store_pg_ping(store_pg *pg, char *err, size_t errlen)
{
    int rc;
    PGresult *r = query(pg, "SELECT 1", 0, NULL, PGRES_TUPLES_OK, &rc, err, errlen);
    PQclear(r);
    return rc;
}

int store_pg_suggest_add(store_pg *pg, const char *q, const char *s, const char *source,
                         const char *target, char *err, size_t errlen)
{
    if (!q || !s || !source || !target) {
        snprintf(err, errlen, "suggestions: q, s, source and target are required");
        return MT_STORE_ERROR;
    }
    const char *v[] = {q, s, source, target};
    int rc;
    PQclear(query(pg, "INSERT INTO mt_suggestions (q, s, source, target) VALUES ($1, $2, $3, $4)", 4, v,
                  PGRES_COMMAND_OK, &rc, err, errlen));
    return rc;
}

long store_pg_suggest_count(store_pg *pg, char *err, size_t errlen)
{
    int rc;
    PGresult *r = query(pg, "SELECT count(*) FROM mt_suggestions", 0, NULL, PGRES_TUPLES_OK, &rc, err, errlen);
    long n = r ? atol(PQgetvalue(r, 0, 0)) : rc;
    PQclear(r);
    return n;
}

/* "\x" + the SHA-256 of s in hex: a bytea literal. */
static void hash_hex(const char *s, char out[2 + 2 * SHA256_DIGEST_SIZE + 1])
{
    struct sha256_ctx ctx;
    uint8_t d[SHA256_DIGEST_SIZE];
    sha256_init(&ctx);
    sha256_update(&ctx, strlen(s), (const uint8_t *)s);
    sha256_digest(&ctx, sizeof d, d);
    out[0] = '\\', out[1] = 'x';
    for (int i = 0; i < SHA256_DIGEST_SIZE; i++) snprintf(out + 2 + 2 * i, 3, "%02x", d[i]);
}

int store_pg_key_add(store_pg *pg, const char *key, const char *name, long chars_per_minute,
                     char *err, size_t errlen)
{
    if (!key || !*key || !name || !*name || chars_per_minute < 0) {
        snprintf(err, errlen, "keys: a key, a name and a limit of 0 or more are needed");
        return MT_STORE_ERROR;
    }
    char h[2 + 2 * SHA256_DIGEST_SIZE + 1], lim[32];
    hash_hex(key, h);
    snprintf(lim, sizeof lim, "%ld", chars_per_minute);
    const char *v[] = {name, h, lim};
    int rc;
    PQclear(query(pg, "INSERT INTO mt_api_keys (name, key_hash, chars_per_minute) VALUES ($1, $2::bytea, $3::bigint)",
                  3, v, PGRES_COMMAND_OK, &rc, err, errlen));
    if (rc == MT_STORE_ERROR && strstr(err, "duplicate key"))
        snprintf(err, errlen, "keys: a key with this name or value already exists");
    return rc;
}

int store_pg_key_remove(store_pg *pg, const char *key_or_name, char *err, size_t errlen)
{
    char h[2 + 2 * SHA256_DIGEST_SIZE + 1];
    hash_hex(key_or_name ? key_or_name : "", h);
    const char *v[] = {key_or_name ? key_or_name : "", h};
    int rc;
    PGresult *r = query(pg, "DELETE FROM mt_api_keys WHERE name = $1 OR key_hash = $2::bytea", 2, v,
                        PGRES_COMMAND_OK, &rc, err, errlen);
    if (r) rc = atoi(PQcmdTuples(r)) > 0;
    PQclear(r);
    return rc;
}

static const char KEY_COLUMNS[] =
    "SELECT id, name, chars_per_minute, to_char(created AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
    " FROM mt_api_keys";

static void key_row(PGresult *r, int i, mt_store_key *k)
{
    memset(k, 0, sizeof *k);
    k->id = atoll(PQgetvalue(r, i, 0));
    snprintf(k->name, sizeof k->name, "%s", PQgetvalue(r, i, 1));
    k->chars_per_minute = atol(PQgetvalue(r, i, 2));
    snprintf(k->created, sizeof k->created, "%s", PQgetvalue(r, i, 3));
}

int store_pg_key_find(store_pg *pg, const char *key, mt_store_key *out, char *err, size_t errlen)
{
    char h[2 + 2 * SHA256_DIGEST_SIZE + 1], sql[300];
    hash_hex(key ? key : "", h);
    snprintf(sql, sizeof sql, "%s WHERE key_hash = $1::bytea", KEY_COLUMNS);
    const char *v[] = {h};
    int rc;
    PGresult *r = query(pg, sql, 1, v, PGRES_TUPLES_OK, &rc, err, errlen);
    if (r) {
        rc = PQntuples(r) > 0;
        if (rc) key_row(r, 0, out);
    }
    PQclear(r);
    return rc;
}

int store_pg_key_any(store_pg *pg, char *err, size_t errlen)
{
    int rc;
    PGresult *r = query(pg, "SELECT EXISTS (SELECT 1 FROM mt_api_keys)", 0, NULL, PGRES_TUPLES_OK, &rc, err,
                        errlen);
    if (r) rc = PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    return rc;
}

int store_pg_key_list(store_pg *pg, int (*fn)(void *user, const mt_store_key *k), void *user,
                      char *err, size_t errlen)
{
    char sql[300];
    snprintf(sql, sizeof sql, "%s ORDER BY id", KEY_COLUMNS);
    int rc;
    PGresult *r = query(pg, sql, 0, NULL, PGRES_TUPLES_OK, &rc, err, errlen);
    if (!r) return rc;
    int n = PQntuples(r);
    for (int i = 0; i < n; i++) {
        mt_store_key k;
        key_row(r, i, &k);
        if (fn(user, &k)) break;
    }
    PQclear(r);
    return n;
}

int store_pg_rate_charge(store_pg *pg, const char *client, int requests, long chars,
                         int requests_per_minute, long chars_per_minute, int *retry_after,
                         char *err, size_t errlen)
{
    if (requests_per_minute <= 0 && chars_per_minute <= 0) return MT_STORE_RATE_OK;
    if (chars_per_minute > 0 && chars > chars_per_minute) return MT_STORE_RATE_TOO_LARGE;
    if (requests_per_minute <= 0) requests = 0;
    if (chars_per_minute <= 0) chars = 0;
    char h[2 + 2 * SHA256_DIGEST_SIZE + 1], rq[16], ch[32], rl[16], cl[32];
    if (client && strlen(client) == 7 + 2 * SHA256_DIGEST_SIZE && !strncmp(client, "sha256:", 7) &&
        strspn(client + 7, "0123456789abcdef") == 2 * SHA256_DIGEST_SIZE)
        snprintf(h, sizeof h, "\\x%s", client + 7); /* hashed already */
    else
        hash_hex(client ? client : "", h);
    snprintf(rq, sizeof rq, "%d", requests);
    snprintf(ch, sizeof ch, "%ld", chars);
    snprintf(rl, sizeof rl, "%d", requests_per_minute > 0 ? requests_per_minute : 0);
    snprintf(cl, sizeof cl, "%ld", chars_per_minute > 0 ? chars_per_minute : 0);
    const char *v[] = {h + 2, rq, ch, rl, cl};
    /* One statement, so concurrent charges from every replica serialize on the row: the
     * bucket drains since its last charge, then takes this one only if it still fits. */
    static const char sql[] =
        "INSERT INTO mt_rate AS r (client, requests, chars, at)"
        " VALUES ($1, $2::float8, $3::float8, clock_timestamp())"
        " ON CONFLICT (client) DO UPDATE SET"
        "  requests = mt_drain(r.requests, $4::float8, r.at) + excluded.requests,"
        "  chars = mt_drain(r.chars, $5::float8, r.at) + excluded.chars, at = clock_timestamp()"
        " WHERE ($4::float8 <= 0 OR mt_drain(r.requests, $4::float8, r.at) + excluded.requests <= $4::float8)"
        "  AND ($5::float8 <= 0 OR mt_drain(r.chars, $5::float8, r.at) + excluded.chars <= $5::float8)"
        " RETURNING requests";
    int rc;
    if ((atomic_fetch_add(&pg->charges, 1) & 1023) == 1023) {
        /* a bucket holds at most a minute's allowance and drains it within a minute: one
         * untouched for two is empty, and its row can go */
        char e2[200];
        PQclear(query(pg, "DELETE FROM mt_rate WHERE at < clock_timestamp() - interval '2 minutes'", 0, NULL,
                      PGRES_COMMAND_OK, &rc, e2, sizeof e2));
    }
    PGresult *r = query(pg, sql, 5, v, PGRES_TUPLES_OK, &rc, err, errlen);
    if (!r) return rc;
    int ok = PQntuples(r) > 0;
    PQclear(r);
    if (ok) return MT_STORE_RATE_OK;
    /* Limited: how long until this charge fits. */
    const char *v2[] = {h + 2, rl, cl};
    r = query(pg, "SELECT mt_drain(requests, $2::float8, at), mt_drain(chars, $3::float8, at) FROM mt_rate"
                  " WHERE client = $1", 3, v2, PGRES_TUPLES_OK, &rc, err, errlen);
    double wait = 1;
    if (r && PQntuples(r) > 0) {
        double ur = atof(PQgetvalue(r, 0, 0)), uc = atof(PQgetvalue(r, 0, 1));
        if (requests_per_minute > 0) {
            double w = (ur + requests - requests_per_minute) * 60.0 / requests_per_minute;
            if (w > wait) wait = w;
        }
        if (chars_per_minute > 0) {
            double w = (uc + (double)chars - (double)chars_per_minute) * 60.0 / (double)chars_per_minute;
            if (w > wait) wait = w;
        }
    }
    PQclear(r);
    *retry_after = (int)ceil(wait);
    return MT_STORE_RATE_LIMITED;
}
