/* store.h: the server's state that outlives a request: suggestions, API keys and rate-limit
 * counters, behind one interface with two backends.
 *
 *   SQLite (one machine): suggestions in a file (store/suggest.c); no key table and no shared
 *     counters (the server limits in process, keys come from its config).
 *   PostgreSQL (N replicas, libpq): everything in one database every replica shares:
 *     suggestions, API keys (stored as SHA-256 hashes, each with a name and a character
 *     limit per minute) and rate-limit buckets charged atomically by one statement
 *     (INSERT ... ON CONFLICT ... DO UPDATE ... WHERE ... RETURNING), so N replicas
 *     enforce one limit. The schema is versioned and migrated at open under an advisory
 *     lock, so replicas starting together do not race.
 *
 * The PostgreSQL URL is handed to libpq as is: its PG* variables and password file apply.
 * Every query runs under statement_timeout and every connection under connect_timeout and
 * TCP keepalive / user timeouts, so no call waits on a dead database for long. When the
 * database is down, calls fail at once with MT_STORE_DOWN and a reason (no password in it);
 * the store reconnects by itself (at most one attempt a second) on a later call.
 *
 * Thread-safety: one store may be used by any number of threads at once (a small pool of
 * connections, each used by one thread at a time). Errors: open returns NULL with a
 * message; the other calls return a negative MT_STORE_* with a message in err.
 * Ownership: the store copies what it keeps (the options' strings are read during open
 * only); results are written into the caller's structs and buffers, and a list's entries
 * are lent to its callback for that call only. The caller closes the store with
 * mt_store_close, after closing every mt_glossaries opened on it (store_glossaries.h).
 */
#ifndef MT_STORE_H
#define MT_STORE_H

#include <stddef.h>

typedef struct mt_store mt_store;

enum {
    MT_STORE_OK = 0,
    MT_STORE_ERROR = -1,       /* the query failed (bad input, constraint...) */
    MT_STORE_DOWN = -2,        /* the database cannot be reached now; retry later */
    MT_STORE_UNSUPPORTED = -3, /* this backend does not keep it (SQLite: keys, counters) */
};

typedef struct {
    const char *url;          /* postgresql:// or postgres:// URL (or a libpq conninfo): PostgreSQL */
    const char *sqlite_path;  /* else: SQLite file of suggestions (NULL/empty: no suggestions) */
    int statement_timeout_ms; /* every PostgreSQL query (default 5000) */
    int connect_timeout_s;    /* every PostgreSQL connection attempt (default 3) */
    int pool_size;            /* PostgreSQL connections at most, made when needed (default 4) */
} mt_store_options;

mt_store_options mt_store_options_default(void);

/* Opens the backend the options name; PostgreSQL: connects once and migrates the schema
 * (a database that cannot be reached at start is an error: the operator sees it at once). */
mt_store *mt_store_open(const mt_store_options *o, char *err, size_t errlen);
void mt_store_close(mt_store *st);

/* 1 for PostgreSQL (state shared between replicas), 0 for SQLite. */
int mt_store_shared(const mt_store *st);
/* 1 when suggestions are kept (PostgreSQL, or SQLite with a path). */
int mt_store_has_suggestions(const mt_store *st);
/* The URL with its password replaced by "***" (for logs), into out. */
void mt_store_redact(const char *url, char *out, size_t cap);

/* MT_STORE_OK when the database answers (SQLite: always), else why not in err. */
int mt_store_ping(mt_store *st, char *err, size_t errlen);

/* Stores one suggestion: original q, suggested translation s, language codes. */
int mt_store_suggest_add(mt_store *st, const char *q, const char *s, const char *source,
                         const char *target, char *err, size_t errlen);
/* Number of stored suggestions (>= 0), or a negative MT_STORE_*. */
long mt_store_suggest_count(mt_store *st, char *err, size_t errlen);

/* ---- API keys (PostgreSQL) ---- */
typedef struct {
    long long id;
    char name[128];
    long chars_per_minute;    /* 0: the server's own limits */
    char created[40];         /* ISO 8601, UTC */
} mt_store_key;

/* Adds a key (its SHA-256 only is stored) named name (unique) with its limit. */
int mt_store_key_add(mt_store *st, const char *key, const char *name, long chars_per_minute,
                     char *err, size_t errlen);
/* Removes the key named name, or whose value is key_or_name; 1 removed, 0 none such. */
int mt_store_key_remove(mt_store *st, const char *key_or_name, char *err, size_t errlen);
/* Looks key up: 1 found (*out filled), 0 unknown, or a negative MT_STORE_*. */
int mt_store_key_find(mt_store *st, const char *key, mt_store_key *out, char *err, size_t errlen);
/* Whether any key is stored: 1, 0, or a negative MT_STORE_*. */
int mt_store_key_any(mt_store *st, char *err, size_t errlen);
/* Every key, oldest first, through fn (which returns 0 to go on); count or negative. */
int mt_store_key_list(mt_store *st, int (*fn)(void *user, const mt_store_key *k), void *user,
                      char *err, size_t errlen);

/* ---- rate limits (PostgreSQL) ---- */
enum { MT_STORE_RATE_OK = 0, MT_STORE_RATE_LIMITED = 1, MT_STORE_RATE_TOO_LARGE = 2 };
/* Charges `requests` requests and `chars` characters to client's bucket, which drains at
 * its limit per minute (0: none) and holds at most a minute's allowance: the same rule as
 * ratelimit.h, counted in the database on the database's clock. Returns MT_STORE_RATE_*
 * (nothing charged unless OK; *retry_after in whole seconds when limited) or a negative
 * MT_STORE_*. The client name is stored hashed; a client given as "sha256:" and 64 hex
 * digits is that hash already (a queued file job's owner, store_jobs.h: the same bucket). */
int mt_store_rate_charge(mt_store *st, const char *client, int requests, long chars,
                         int requests_per_minute, long chars_per_minute, int *retry_after,
                         char *err, size_t errlen);

/* ---- hashes ---- */
enum { MT_STORE_SHA256_HEX = 65 };
/* The SHA-256 of s (NULL: "") in lowercase hex: how a key or an owner is kept in a shared
 * table (glossaries, jobs and their options) instead of the key itself. */
void mt_store_sha256_hex(const char *s, char out[MT_STORE_SHA256_HEX]);

#endif
