/* store_jobs.h: file translation jobs as a durable queue in PostgreSQL, shared by every replica
 * (server.shared_state). An upload on any replica inserts the job with its file (bytea);
 * free workers on any replica claim the oldest waiting one with SELECT ... FOR UPDATE SKIP
 * LOCKED and hold a lease on it, which this component renews in the background for every
 * job claimed through it until it is finished, failed or released. A replica that dies
 * stops renewing: once its lease expires the job is claimed again (attempts + 1), and after
 * max_attempts it fails with a reason. Result, progress and failure are rows every replica
 * reads; finished jobs expire ttl seconds after they finish and are deleted by whichever
 * replica sweeps first.
 *
 * Waiting workers are woken by LISTEN/NOTIFY on a connection of their own; when it is
 * down, or a notification is missed, they poll (poll_s) and wake when the first lease
 * held elsewhere expires. Every query runs under a statement timeout and a client-side
 * deadline, connections under TCP keepalives and a user timeout, so no call hangs on a
 * dead database; while it is down calls fail with MT_STORE_DOWN (store.h) and the
 * connections are made again by themselves.
 *
 * Ids are 32 lowercase hex digits (128 random bits), as the local spool's (spool.h). The
 * owner (a rate-limit client) is stored as its SHA-256 only.
 *
 * The one-machine default (no shared state) keeps the in-process spool (spool.h).
 *
 * Thread-safety: one mt_jobs may be used by any number of threads at once. Errors: open
 * returns NULL with a message; the other calls a negative MT_STORE_* (or MT_JOBS_FULL /
 * MT_JOBS_OWNER_FULL) with a message in err. Ownership: a submitted job's strings and
 * file are copied into the database during the call; a result's bytes are the caller's to
 * free, a claimed job's input and options until mt_jobs_claimed_clear.
 */
#ifndef MT_STORE_JOBS_H
#define MT_STORE_JOBS_H

#include <stddef.h>

#include "store.h"

typedef struct mt_jobs mt_jobs;

enum { MT_JOBS_ID_LEN = 32 };
enum { MT_JOBS_FULL = -10, MT_JOBS_OWNER_FULL = -11 };
typedef enum { MT_JOBS_QUEUED = 0, MT_JOBS_RUNNING, MT_JOBS_DONE, MT_JOBS_FAILED } mt_jobs_state;

typedef struct {
    const char *url;          /* postgresql:// URL or libpq conninfo (PG* variables apply) */
    const char *worker;       /* this replica's name in leases (host and pid, say) */
    int statement_timeout_ms; /* every query (default 5000) */
    int connect_timeout_s;    /* every connection attempt (default 3) */
    int pool_size;            /* connections for calls, made when needed (default 4) */
    double lease_s;           /* a claimed job's lease, renewed every lease_s / 3 (default 30) */
    int max_attempts;         /* claims of one job before it fails (default 3) */
    double ttl;               /* seconds a finished job stays (default 3600) */
    double poll_s;            /* longest wait of an idle worker without a notification (default 5) */
    int max_jobs;             /* jobs kept at once, all replicas (0: no limit) */
    int max_per_owner;        /* of them, of one owner (0: no limit) */
} mt_jobs_options;

mt_jobs_options mt_jobs_options_default(void);

/* Connects, creates or migrates the jobs table (under an advisory lock) and starts the
 * background thread (notifications, lease renewal, sweeping). */
mt_jobs *mt_jobs_open(const mt_jobs_options *o, char *err, size_t errlen);
/* Stops the background thread, wakes every waiting claim and frees. Jobs still held are
 * left to their leases (release them first to hand them over at once). */
void mt_jobs_close(mt_jobs *j);

/* A new job. */
typedef struct {
    const char *owner;        /* the client it is charged to (stored hashed) */
    const char *name;         /* download name (already sanitised by the caller) */
    const char *mime;         /* Content-Type of the result */
    int format;               /* the caller's format code */
    const char *source, *target; /* the route's languages */
    const char *options_json; /* further options, a JSON object (NULL: {}) */
    const void *input;        /* the file */
    size_t len;
} mt_jobs_new;

/* Inserts a queued job and notifies the workers; its id into id (MT_JOBS_ID_LEN + 1).
 * MT_STORE_OK, MT_JOBS_FULL / MT_JOBS_OWNER_FULL (limits), or a negative MT_STORE_*. */
int mt_jobs_submit(mt_jobs *j, const mt_jobs_new *n, char *id, char *err, size_t errlen);

/* What a status request needs to know about a job. */
typedef struct {
    mt_jobs_state state;
    long done, total;         /* progress of a running job */
    char name[256], mime[128];
    size_t size;              /* result bytes, when done */
    char error[256];          /* why it failed */
    int status;               /* the HTTP status its failure answers with */
    int attempts;             /* claims so far */
    char lease_owner[128];    /* the worker holding it ("" when none) */
} mt_jobs_entry;

/* Looks a job up: 1 found (*out filled), 0 unknown, malformed or expired, or negative. */
int mt_jobs_lookup(mt_jobs *j, const char *id, mt_jobs_entry *out, char *err, size_t errlen);
/* A done job's result: 1 with *data (malloc'd, the caller frees) and *len, 0 when not
 * done, unknown or expired, or negative. */
int mt_jobs_result(mt_jobs *j, const char *id, char **data, size_t *len, char *err, size_t errlen);

/* Merges the JSON object json into a job's options (what was learnt about it on the way,
 * e.g. the characters its text holds): 1, 0 (no such job), or negative. */
int mt_jobs_annotate(mt_jobs *j, const char *id, const char *json, char *err, size_t errlen);
/* The job (not expired) whose options hold field = value as text: 1 with its id
 * (MT_JOBS_ID_LEN + 1), its age in seconds and its options as JSON text (cut to cap), 0
 * when none, or negative. */
int mt_jobs_find_by_option(mt_jobs *j, const char *field, const char *value, char *id, double *age_s,
                           char *options, size_t cap, char *err, size_t errlen);

/* A job claimed by a worker (mt_jobs_claim); mt_jobs_claimed_clear frees its input. */
typedef struct {
    char id[MT_JOBS_ID_LEN + 1];
    int format, attempts;
    char source[64], target[64];
    char owner[80];           /* the owner's hash, hex */
    char name[256];
    char *options_json;       /* malloc'd */
    unsigned char *input;     /* malloc'd, len bytes */
    size_t len;
} mt_jobs_claimed;
void mt_jobs_claimed_clear(mt_jobs_claimed *c);

/* Claims the oldest waiting job (or one whose lease expired): 1 with *out filled and the
 * lease held (renewed in the background); else waits up to wait_s for a notification, a
 * lease to expire or mt_jobs_wake, and returns 0 (call again); or negative (the database
 * is down: the caller waits a little and calls again). */
int mt_jobs_claim(mt_jobs *j, double wait_s, mt_jobs_claimed *out, char *err, size_t errlen);
/* Wakes every thread waiting in mt_jobs_claim (a worker that stops). */
void mt_jobs_wake(mt_jobs *j);

/* Progress of a held job: done of total units. */
int mt_jobs_progress(mt_jobs *j, const mt_jobs_claimed *c, long done, long total);
/* Stores a held job's result: 1 stored, 0 when the lease was lost (another worker took
 * it over: this result is dropped), or negative. */
int mt_jobs_finish(mt_jobs *j, const mt_jobs_claimed *c, const void *data, size_t len, char *err,
                   size_t errlen);
/* Fails a held job for good with the HTTP status its status request answers and why. */
int mt_jobs_fail(mt_jobs *j, const mt_jobs_claimed *c, int status, const char *message);
/* Hands a held job back to the queue at once (this worker stops; the attempt is not
 * counted), and notifies the other workers. */
int mt_jobs_release(mt_jobs *j, const mt_jobs_claimed *c);

/* Deletes jobs finished more than ttl ago and fails those whose lease expired after
 * max_attempts claims; how many, or negative. (Also done in the background.) */
int mt_jobs_sweep(mt_jobs *j, char *err, size_t errlen);
/* Jobs waiting to be claimed (all replicas), or negative: a queue-depth gauge. */
long mt_jobs_depth(mt_jobs *j, char *err, size_t errlen);
/* Jobs kept, all replicas, by state (indexed by mt_jobs_state): 0 or negative. */
int mt_jobs_counts(mt_jobs *j, long counts[4], char *err, size_t errlen);

#endif
