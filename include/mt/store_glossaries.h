/* store_glossaries.h: DeepL glossaries kept per API key: a name, a language pair, the entries
 * (as TSV, checked by the caller: include/mt/glossary.h) and their count, a creation
 * time, and an id (a random UUID). Two backends, as store.h has them: the PostgreSQL
 * store when the server shares state (table mt_glossaries, schema version 2 of
 * store_pg.c), else an SQLite file (table glossaries; ":memory:" keeps them until the
 * process ends).
 *
 * A glossary belongs to the API key that created it (stored as the key's SHA-256 only;
 * "" is the owner on a server without keys): every call takes the owner, and another
 * owner's glossary is as unknown as one that never existed. Limits per glossary (entries,
 * bytes of TSV) and per owner (glossaries) are checked on create.
 *
 * Thread-safety: one mt_glossaries may be used by any number of threads at once (SQLite:
 * one connection in serialized mode; PostgreSQL: the store's pool). Errors: open returns
 * NULL with a message; the other calls a negative MT_STORE_* or MT_GLOSSARIES_* with a
 * message in err. Ownership: the strings passed in are read during the call only; a
 * glossary's entries from mt_glossaries_get are the caller's to free; the PostgreSQL
 * store given to open is borrowed and must outlive the mt_glossaries.
 */
#ifndef MT_STORE_GLOSSARIES_H
#define MT_STORE_GLOSSARIES_H

#include <stddef.h>

#include "store.h"

typedef struct mt_glossaries mt_glossaries;

enum {
    MT_GLOSSARIES_TOO_LARGE = -20, /* more entries or bytes than a glossary may hold */
    MT_GLOSSARIES_TOO_MANY = -21,  /* the owner holds max_per_owner glossaries already */
};

typedef struct {
    int max_entries;     /* entries of one glossary (default 100,000) */
    size_t max_bytes;    /* bytes of one glossary's entries as TSV (default 10 MiB) */
    int max_per_owner;   /* glossaries one API key may hold (default 1,000) */
} mt_glossaries_limits;

mt_glossaries_limits mt_glossaries_limits_default(void);

/* One glossary, as DeepL describes it. */
typedef struct {
    char id[40];         /* UUID, 36 characters */
    char name[256];      /* cut at 255 bytes (DeepL's clients show it; the stored name is whole) */
    char source[16], target[16];
    int entry_count;
    char created[40];    /* ISO 8601 UTC with milliseconds: 2026-11-26T01:02:03.456Z */
} mt_glossary_info;

/* pg: the shared PostgreSQL store (borrowed; it must outlive the result), else NULL and
 * sqlite_path (a file, or ":memory:") is opened, its table made when missing. */
mt_glossaries *mt_glossaries_open(mt_store *pg, const char *sqlite_path, const mt_glossaries_limits *lim,
                                  char *err, size_t errlen);
void mt_glossaries_close(mt_glossaries *gs);
/* 1 when glossaries are kept in the shared store, 0 in SQLite. */
int mt_glossaries_shared(const mt_glossaries *gs);

/* Stores a glossary of owner: entries (TSV) holding entry_count entries. MT_STORE_OK with
 * *out filled, MT_GLOSSARIES_TOO_LARGE, MT_GLOSSARIES_TOO_MANY or a negative MT_STORE_*. */
int mt_glossaries_create(mt_glossaries *gs, const char *owner, const char *name, const char *source,
                         const char *target, const char *entries, int entry_count, mt_glossary_info *out,
                         char *err, size_t errlen);
/* Every glossary of owner, oldest first, through fn (which returns 0 to go on); the
 * count, or a negative MT_STORE_*. */
int mt_glossaries_list(mt_glossaries *gs, const char *owner, int (*fn)(void *user, const mt_glossary_info *g),
                       void *user, char *err, size_t errlen);
/* Glossary id of owner: 1 with *out filled, 0 when there is none such, or negative.
 * entries, when not NULL, gets its TSV (malloc'd, the caller frees). */
int mt_glossaries_get(mt_glossaries *gs, const char *owner, const char *id, mt_glossary_info *out,
                      char **entries, char *err, size_t errlen);
/* Deletes glossary id of owner: 1 deleted, 0 none such, or negative. */
int mt_glossaries_delete(mt_glossaries *gs, const char *owner, const char *id, char *err, size_t errlen);

#endif
