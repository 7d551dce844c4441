/* spool.h: the bounded spool of translated files behind POST /translate_file and
 * GET /download_file/<id>. A job is registered when the upload arrives (its id is
 * returned to the client at once), reports progress while it runs, and is finished with
 * the translated bytes, which are written to <dir>/<id>. Entries expire `ttl` seconds
 * after they finish (or fail); the spool holds at most max_entries jobs and
 * max_total_bytes of files, refusing new jobs beyond that.
 *
 * Ids are 128 random bits in lowercase hex (getrandom): unguessable, and a lookup accepts
 * nothing else, so no id can name another file or a path ("../", "/", "%2e"). The
 * original file name is kept only as a download name, reduced to its last path component
 * with quotes and control characters replaced.
 *
 * Thread-safety: a spool may be used by any number of threads at once (one mutex).
 * Errors: open returns NULL, other calls -1, with a message.
 */
#ifndef MT_SPOOL_H
#define MT_SPOOL_H

#include <stddef.h>

typedef struct mt_spool mt_spool;

enum { MT_SPOOL_ID_LEN = 32 };

typedef enum { MT_SPOOL_RUNNING = 0, MT_SPOOL_DONE, MT_SPOOL_FAILED } mt_spool_state;

typedef struct {
    const char *dir;        /* directory of the files (created 0700 if missing) */
    size_t max_file_bytes;  /* largest translated file kept */
    size_t max_total_bytes; /* sum of the files kept */
    int max_entries;        /* jobs registered at once (running and finished) */
    double ttl;             /* seconds a finished job stays downloadable */
    /* Clock in seconds (NULL: CLOCK_MONOTONIC); tests pass their own. */
    double (*clock)(void *user);
    void *clock_user;
} mt_spool_options;

/* Defaults: dir NULL (must be set), 20 MiB files, 512 MiB total, 256 entries, 1 hour. */
mt_spool_options mt_spool_options_default(void);

/* Opens the spool; files of an earlier run left in dir (named like ids) are removed. */
mt_spool *mt_spool_open(const mt_spool_options *opt, char *err, size_t errlen);
/* Removes every file of the spool and frees it. */
void mt_spool_close(mt_spool *sp);

/* Registers a running job for a file called `name` of type `mime`; writes its id
 * (MT_SPOOL_ID_LEN chars + NUL) to id. -1 when the spool is full (after expiring). */
int mt_spool_begin(mt_spool *sp, const char *name, const char *mime, char *id, char *err,
                   size_t errlen);
/* Records progress of a running job: done of total units. */
int mt_spool_progress(mt_spool *sp, const char *id, long done, long total);
/* Stores the translated bytes of a running job and marks it done. */
int mt_spool_finish(mt_spool *sp, const char *id, const void *data, size_t len, char *err,
                    size_t errlen);
/* Marks a running job failed with a message the download answers with. */
int mt_spool_fail(mt_spool *sp, const char *id, const char *message);

/* What a download needs to know about a job. */
typedef struct {
    mt_spool_state state;
    long done, total;   /* progress of a running job */
    char name[256];     /* download name (sanitised) */
    char mime[128];     /* Content-Type */
    char path[1024];    /* the file, when done */
    size_t size;        /* its size, when done */
    char error[256];    /* why it failed, when failed */
} mt_spool_entry;

/* Looks up a job by id: 0 and *out filled, or -1 (malformed id, unknown or expired). */
int mt_spool_lookup(mt_spool *sp, const char *id, mt_spool_entry *out);
/* Removes jobs finished more than ttl ago; returns how many. (Also done by begin.) */
int mt_spool_expire(mt_spool *sp);

#endif
