/* store_pg.h: the PostgreSQL backend of mt_store (libpq), private to store/. The calls
 * mirror store.h's and keep its contract (thread-safety, MT_STORE_* results). The job
 * queue (jobs_pg.c) runs a pool of its own on the same code, with its own schema. */
#ifndef MT_STORE_PG_H
#define MT_STORE_PG_H

#include <stddef.h>

#include "store.h"

typedef struct store_pg store_pg;

/* A schema of its own beside the store's: version table, advisory lock key held while it
 * is migrated, its name in messages ("schema"), and the steps, each one transaction. */
typedef struct {
    const char *table;
    long long lock;
    const char *label;
    const char *const *steps;
    int n_steps;
} store_pg_schema;

/* The store's pool on o->url, its schema migrated (the first connection's job). */
store_pg *store_pg_open(const mt_store_options *o, char *err, size_t errlen);
/* A pool of its own (jobs_pg.c): connections named app_name, `schema` migrated instead. */
store_pg *store_pg_open_schema(const mt_store_options *o, const char *app_name, const store_pg_schema *schema,
                               char *err, size_t errlen);
void store_pg_close(store_pg *pg);
void store_pg_redact(const char *url, char *out, size_t cap);
int store_pg_ping(store_pg *pg, char *err, size_t errlen);
int store_pg_suggest_add(store_pg *pg, const char *q, const char *s, const char *source,
                         const char *target, char *err, size_t errlen);
long store_pg_suggest_count(store_pg *pg, char *err, size_t errlen);
int store_pg_key_add(store_pg *pg, const char *key, const char *name, long chars_per_minute,
                     char *err, size_t errlen);
int store_pg_key_remove(store_pg *pg, const char *key_or_name, char *err, size_t errlen);
int store_pg_key_find(store_pg *pg, const char *key, mt_store_key *out, char *err, size_t errlen);
int store_pg_key_any(store_pg *pg, char *err, size_t errlen);
int store_pg_key_list(store_pg *pg, int (*fn)(void *user, const mt_store_key *k), void *user,
                      char *err, size_t errlen);
int store_pg_rate_charge(store_pg *pg, const char *client, int requests, long chars,
                         int requests_per_minute, long chars_per_minute, int *retry_after,
                         char *err, size_t errlen);

/* For the store's other tables (glossaries.c): st's PostgreSQL backend (NULL when st is
 * NULL or SQLite), and one statement on its pool: the result (tuples: a SELECT or
 * RETURNING; else a command) or NULL with *rc set (MT_STORE_DOWN / MT_STORE_ERROR). */
store_pg *mt_store_pg_backend(mt_store *st);
struct pg_result *store_pg_query(store_pg *pg, const char *sql, int n, const char *const *vals, int tuples,
                                 int *rc, char *err, size_t errlen);
/* store_pg_query with PQexecParams' lens and formats (NULL: text) and binary results. */
struct pg_result *store_pg_query_params(store_pg *pg, const char *sql, int n, const char *const *vals,
                                        const int *lens, const int *formats, int binary_result, int tuples,
                                        int *rc, char *err, size_t errlen);
/* A new connection of the pool's settings (not pooled) that LISTENs on channel, or NULL
 * with the reason; the caller PQfinish()es it. */
struct pg_conn *store_pg_listen(store_pg *pg, const char *channel, char *err, size_t errlen);

#endif
