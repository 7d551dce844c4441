/* suggest.c: mt_suggest over SQLite. See suggest.h for the contract. */
#include "suggest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

struct mt_suggest {
    sqlite3 *db;
    char path[1024];
};

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS suggestions ("
    " id INTEGER PRIMARY KEY,"
    " q TEXT NOT NULL, s TEXT NOT NULL, source TEXT NOT NULL, target TEXT NOT NULL,"
    " created TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')))";

mt_suggest *mt_suggest_open(const char *path, char *err, size_t errlen)
{
    if (!path || !*path) {
        snprintf(err, errlen, "suggestions: no database path");
        return NULL;
    }
    mt_suggest *st = calloc(1, sizeof *st);
    if (!st) {
        snprintf(err, errlen, "suggestions: out of memory");
        return NULL;
    }
    snprintf(st->path, sizeof st->path, "%s", path);
    int rc = sqlite3_open_v2(path, &st->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                             NULL);
    char *msg = NULL;
    if (rc == SQLITE_OK) {
        /* Another process (the sqlite3 tool) may hold the file for a moment. */
        sqlite3_busy_timeout(st->db, 2000);
        rc = sqlite3_exec(st->db, schema, NULL, NULL, &msg);
    }
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "suggestions: %s: %s", path,
                 msg ? msg : (st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc)));
        sqlite3_free(msg);
        sqlite3_close(st->db);
        free(st);
        return NULL;
    }
    return st;
}

void mt_suggest_close(mt_suggest *st)
{
    if (!st) return;
    sqlite3_close(st->db);
    free(st);
}

int mt_suggest_add(mt_suggest *st, const char *q, const char *s, const char *source,
                   const char *target, char *err, size_t errlen)
{
    if (!st || !q || !s || !source || !target) {
        snprintf(err, errlen, "suggestions: q, s, source and target are required");
        return -1;
    }
    sqlite3_stmt *stmt = NULL;
    int rc = sqlite3_prepare_v2(st->db,
        "INSERT INTO suggestions (q, s, source, target) VALUES (?1, ?2, ?3, ?4)", -1,
        &stmt, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(stmt, 1, q, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(stmt, 2, s, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(stmt, 3, source, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(stmt, 4, target, -1, SQLITE_TRANSIENT);
        rc = sqlite3_step(stmt);
    }
    int ok = (rc == SQLITE_DONE);
    if (!ok) snprintf(err, errlen, "suggestions: %s: %s", st->path, sqlite3_errmsg(st->db));
    sqlite3_finalize(stmt);
    return ok ? 0 : -1;
}

long mt_suggest_count(mt_suggest *st, char *err, size_t errlen)
{
    if (!st) return -1;
    sqlite3_stmt *stmt = NULL;
    long n = -1;
    if (sqlite3_prepare_v2(st->db, "SELECT COUNT(*) FROM suggestions", -1, &stmt, NULL) ==
            SQLITE_OK && sqlite3_step(stmt) == SQLITE_ROW)
        n = (long)sqlite3_column_int64(stmt, 0);
    if (n < 0) snprintf(err, errlen, "suggestions: %s: %s", st->path, sqlite3_errmsg(st->db));
    sqlite3_finalize(stmt);
    return n;
}
