/* glossaries.c: mt_glossaries over the shared PostgreSQL store (store_pg.c's pool and
 * schema) or an SQLite file. See include/mt/store_glossaries.h for the contract. */
#include "store_glossaries.h"

#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "store_pg.h"

struct mt_glossaries {
    store_pg *pg;   /* the shared store's backend, or NULL */
    sqlite3 *db;    /* else this */
    mt_glossaries_limits lim;
};

mt_glossaries_limits mt_glossaries_limits_default(void)
{
    return (mt_glossaries_limits){100000, (size_t)10 << 20, 1000};
}

/* SQLite's table: the same columns as PostgreSQL's mt_glossaries (store_pg.c). */
static const char GLOSSARY_SCHEMA[] =
    "CREATE TABLE IF NOT EXISTS glossaries (id TEXT PRIMARY KEY, owner_hash TEXT NOT NULL,"
    " name TEXT NOT NULL, source TEXT NOT NULL, target TEXT NOT NULL, entries TEXT NOT NULL,"
    " entry_count INTEGER NOT NULL CHECK (entry_count > 0),"
    " created TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')));"
    "CREATE INDEX IF NOT EXISTS glossaries_owner ON glossaries (owner_hash, created);";

mt_glossaries *mt_glossaries_open(mt_store *pg, const char *sqlite_path, const mt_glossaries_limits *lim,
                                  char *err, size_t errlen)
{
    mt_glossaries *gs = calloc(1, sizeof *gs);
    if (!gs) {
        snprintf(err, errlen, "glossaries: out of memory");
        return NULL;
    }
    gs->lim = lim ? *lim : mt_glossaries_limits_default();
    if ((gs->pg = mt_store_pg_backend(pg))) return gs;
    const char *path = sqlite_path && *sqlite_path ? sqlite_path : ":memory:";
    int rc = sqlite3_open_v2(path, &gs->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                             NULL);
    char *msg = NULL;
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(gs->db, 2000); /* the sqlite3 tool may hold the file a moment */
        rc = sqlite3_exec(gs->db, GLOSSARY_SCHEMA, NULL, NULL, &msg);
    }
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "glossaries: %s: %s", path,
                 msg ? msg : gs->db ? sqlite3_errmsg(gs->db) : sqlite3_errstr(rc));
        sqlite3_free(msg);
        mt_glossaries_close(gs);
        return NULL;
    }
    return gs;
}

void mt_glossaries_close(mt_glossaries *gs)
{
    if (!gs) return;
    sqlite3_close(gs->db);
    free(gs);
}

int mt_glossaries_shared(const mt_glossaries *gs) { return gs && gs->pg; }

/* A random (version 4) UUID; -1 when the kernel gives no randomness. */
static int new_uuid(char out[37])
{
    uint8_t b[16];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) return -1;
    b[6] = (uint8_t)((b[6] & 0x0F) | 0x40);
    b[8] = (uint8_t)((b[8] & 0x3F) | 0x80);
    char *p = out;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) *p++ = '-';
        p += sprintf(p, "%02x", b[i]);
    }
    return 0;
}

/* 1 when id has a UUID's form (any other id names no glossary). */
static int uuid_form(const char *id)
{
    if (!id || strlen(id) != 36) return 0;
    for (int i = 0; i < 36; i++) {
        char c = id[i];
        int dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
            return 0;
    }
    return 1;
}

/* A UUID in lower case, as both backends store it. */
static void uuid_lower(const char *id, char out[37])
{
    for (int i = 0; i < 36; i++) out[i] = (char)(id[i] >= 'A' && id[i] <= 'F' ? id[i] + 32 : id[i]);
    out[36] = '\0';
}

static void fill(mt_glossary_info *g, const char *id, const char *name, const char *source, const char *target,
                 int count, const char *created)
{
    memset(g, 0, sizeof *g);
    snprintf(g->id, sizeof g->id, "%s", id);
    snprintf(g->name, sizeof g->name, "%s", name);
    snprintf(g->source, sizeof g->source, "%s", source);
    snprintf(g->target, sizeof g->target, "%s", target);
    g->entry_count = count;
    snprintf(g->created, sizeof g->created, "%s", created);
}

static int sqlite_fail(mt_glossaries *gs, sqlite3_stmt *st, char *err, size_t errlen)
{
    snprintf(err, errlen, "glossaries: %s", sqlite3_errmsg(gs->db));
    sqlite3_finalize(st);
    return MT_STORE_ERROR;
}

#define PG_CREATED "to_char(created AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"

int mt_glossaries_create(mt_glossaries *gs, const char *owner, const char *name, const char *source,
                         const char *target, const char *entries, int entry_count, mt_glossary_info *out,
                         char *err, size_t errlen)
{
    if (!name || !*name || !source || !*source || !target || !*target || !entries || entry_count <= 0) {
        snprintf(err, errlen, "glossaries: a name, both languages and entries are needed");
        return MT_STORE_ERROR;
    }
    size_t bytes = strlen(entries);
    if (entry_count > gs->lim.max_entries || bytes > gs->lim.max_bytes) {
        snprintf(err, errlen, "glossary too large: %d entries, %zu bytes (at most %d entries and %zu bytes)",
                 entry_count, bytes, gs->lim.max_entries, gs->lim.max_bytes);
        return MT_GLOSSARIES_TOO_LARGE;
    }
    char h[MT_STORE_SHA256_HEX], id[37], n[16], lim[16];
    mt_store_sha256_hex(owner, h); /* no key is stored */
    if (new_uuid(id)) {
        snprintf(err, errlen, "glossaries: no random bytes for an id");
        return MT_STORE_ERROR;
    }
    snprintf(n, sizeof n, "%d", entry_count);
    snprintf(lim, sizeof lim, "%d", gs->lim.max_per_owner);
    char created[40] = "";
    if (gs->pg) {
        /* one statement: the owner's count and the insert see the same snapshot */
        const char *v[] = {id, h, name, source, target, entries, n, lim};
        int rc;
        PGresult *r = store_pg_query(gs->pg,
            "INSERT INTO mt_glossaries (id, owner_hash, name, source, target, entries, entry_count)"
            " SELECT $1::uuid, $2, $3, $4, $5, $6, $7::integer"
            " WHERE (SELECT count(*) FROM mt_glossaries WHERE owner_hash = $2) < $8::integer"
            " RETURNING " PG_CREATED, 8, v, 1, &rc, err, errlen);
        if (!r) return rc;
        int added = PQntuples(r) > 0;
        if (added) snprintf(created, sizeof created, "%s", PQgetvalue(r, 0, 0));
        PQclear(r);
        if (!added) goto too_many;
    } else {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(gs->db,
                "INSERT INTO glossaries (id, owner_hash, name, source, target, entries, entry_count)"
                " SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7"
                " WHERE (SELECT count(*) FROM glossaries WHERE owner_hash = ?2) < ?8"
                " RETURNING created", -1, &st, NULL) != SQLITE_OK)
            return sqlite_fail(gs, st, err, errlen);
        const char *v[] = {id, h, name, source, target, entries};
        for (int i = 0; i < 6; i++) sqlite3_bind_text(st, i + 1, v[i], -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 7, entry_count);
        sqlite3_bind_int(st, 8, gs->lim.max_per_owner);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) snprintf(created, sizeof created, "%s", (const char *)sqlite3_column_text(st, 0));
        else if (rc != SQLITE_DONE) return sqlite_fail(gs, st, err, errlen);
        while (rc == SQLITE_ROW) rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (!created[0]) goto too_many;
    }
    fill(out, id, name, source, target, entry_count, created);
    return MT_STORE_OK;
too_many:
    snprintf(err, errlen, "glossary limit reached: this key holds %d glossaries already", gs->lim.max_per_owner);
    return MT_GLOSSARIES_TOO_MANY;
}

static const char PG_COLUMNS[] = "SELECT id, name, source, target, entry_count, " PG_CREATED;
static const char SQLITE_COLUMNS[] = "SELECT id, name, source, target, entry_count, created";

static void pg_row(PGresult *r, int i, mt_glossary_info *g)
{
    fill(g, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), PQgetvalue(r, i, 2), PQgetvalue(r, i, 3),
         atoi(PQgetvalue(r, i, 4)), PQgetvalue(r, i, 5));
}

static void sqlite_row(sqlite3_stmt *st, mt_glossary_info *g)
{
    const char *c[6];
    for (int i = 0; i < 6; i++) c[i] = (const char *)sqlite3_column_text(st, i);
    fill(g, c[0] ? c[0] : "", c[1] ? c[1] : "", c[2] ? c[2] : "", c[3] ? c[3] : "", sqlite3_column_int(st, 4),
         c[5] ? c[5] : "");
}

int mt_glossaries_list(mt_glossaries *gs, const char *owner, int (*fn)(void *user, const mt_glossary_info *g),
                       void *user, char *err, size_t errlen)
{
    char h[MT_STORE_SHA256_HEX], sql[300];
    mt_store_sha256_hex(owner, h);
    mt_glossary_info g;
    int n = 0, stop = 0;
    if (gs->pg) {
        snprintf(sql, sizeof sql, "%s FROM mt_glossaries WHERE owner_hash = $1 ORDER BY created, id", PG_COLUMNS);
        const char *v[] = {h};
        int rc;
        PGresult *r = store_pg_query(gs->pg, sql, 1, v, 1, &rc, err, errlen);
        if (!r) return rc;
        n = PQntuples(r);
        for (int i = 0; i < n && !stop; i++) {
            pg_row(r, i, &g);
            stop = fn(user, &g);
        }
        PQclear(r);
        return n;
    }
    snprintf(sql, sizeof sql, "%s FROM glossaries WHERE owner_hash = ?1 ORDER BY created, rowid", SQLITE_COLUMNS);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(gs->db, sql, -1, &st, NULL) != SQLITE_OK) return sqlite_fail(gs, st, err, errlen);
    sqlite3_bind_text(st, 1, h, -1, SQLITE_STATIC);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        n++;
        if (!stop) {
            sqlite_row(st, &g);
            stop = fn(user, &g);
        }
    }
    if (rc != SQLITE_DONE) return sqlite_fail(gs, st, err, errlen);
    sqlite3_finalize(st);
    return n;
}

int mt_glossaries_get(mt_glossaries *gs, const char *owner, const char *id, mt_glossary_info *out,
                      char **entries, char *err, size_t errlen)
{
    if (entries) *entries = NULL;
    if (!uuid_form(id)) return 0;
    char h[MT_STORE_SHA256_HEX], lid[37], sql[300];
    mt_store_sha256_hex(owner, h);
    uuid_lower(id, lid);
    int found = 0;
    if (gs->pg) {
        snprintf(sql, sizeof sql, "%s%s FROM mt_glossaries WHERE id = $1::uuid AND owner_hash = $2", PG_COLUMNS,
                 entries ? ", entries" : "");
        const char *v[] = {lid, h};
        int rc;
        PGresult *r = store_pg_query(gs->pg, sql, 2, v, 1, &rc, err, errlen);
        if (!r) return rc;
        if ((found = PQntuples(r) > 0)) {
            pg_row(r, 0, out);
            if (entries && !(*entries = strdup(PQgetvalue(r, 0, 6)))) found = -1;
        }
        PQclear(r);
    } else {
        snprintf(sql, sizeof sql, "%s%s FROM glossaries WHERE id = ?1 AND owner_hash = ?2", SQLITE_COLUMNS,
                 entries ? ", entries" : "");
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(gs->db, sql, -1, &st, NULL) != SQLITE_OK) return sqlite_fail(gs, st, err, errlen);
        sqlite3_bind_text(st, 1, lid, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, h, -1, SQLITE_STATIC);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            found = 1;
            sqlite_row(st, out);
            const char *e = (const char *)sqlite3_column_text(st, 6);
            if (entries && !(*entries = strdup(e ? e : ""))) found = -1;
        } else if (rc != SQLITE_DONE) {
            return sqlite_fail(gs, st, err, errlen);
        }
        sqlite3_finalize(st);
    }
    if (found < 0) {
        snprintf(err, errlen, "glossaries: out of memory");
        return MT_STORE_ERROR;
    }
    return found;
}

int mt_glossaries_delete(mt_glossaries *gs, const char *owner, const char *id, char *err, size_t errlen)
{
    if (!uuid_form(id)) return 0;
    char h[MT_STORE_SHA256_HEX], lid[37];
    mt_store_sha256_hex(owner, h);
    uuid_lower(id, lid);
    if (gs->pg) {
        const char *v[] = {lid, h};
        int rc;
        PGresult *r = store_pg_query(gs->pg, "DELETE FROM mt_glossaries WHERE id = $1::uuid AND owner_hash = $2", 2,
                                     v, 0, &rc, err, errlen);
        if (!r) return rc;
        int n = atoi(PQcmdTuples(r));
        PQclear(r);
        return n > 0;
    }
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(gs->db, "DELETE FROM glossaries WHERE id = ?1 AND owner_hash = ?2", -1, &st, NULL) !=
        SQLITE_OK)
        return sqlite_fail(gs, st, err, errlen);
    sqlite3_bind_text(st, 1, lid, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, h, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE) return sqlite_fail(gs, st, err, errlen);
    sqlite3_finalize(st);
    return sqlite3_changes(gs->db) > 0;
}
