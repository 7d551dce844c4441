/* suggest.h: the store behind POST /suggest: users' better translations, kept in an
 * SQLite file (path from the config) so that they survive restarts and can be reviewed
 * with the sqlite3 tool. Table: suggestions(id, q, s, source, target, created).
 *
 * Thread-safety: one store may be used by any number of threads at once (the database
 * connection is opened in SQLite's serialized mode). Errors: open returns NULL and the
 * other calls -1, with a message naming the file.
 */
#ifndef MT_SUGGEST_H
#define MT_SUGGEST_H

#include <stddef.h>

typedef struct mt_suggest mt_suggest;

/* Opens (creating if needed) the database at path and its table. */
mt_suggest *mt_suggest_open(const char *path, char *err, size_t errlen);
void mt_suggest_close(mt_suggest *st);

/* Stores one suggestion: original text q, suggested translation s, language codes. */
int mt_suggest_add(mt_suggest *st, const char *q, const char *s, const char *source,
                   const char *target, char *err, size_t errlen);

/* Number of stored suggestions, or -1 on error. */
long mt_suggest_count(mt_suggest *st, char *err, size_t errlen);

#endif
