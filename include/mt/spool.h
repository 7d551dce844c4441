/* spool.h: the bounded spool of translated files behind POST /translate_file and
 * GET /download_file/<id>. A job is registered when the upload arrives (its id is
 * returned to the client at once), reports progress while it runs, and is finished with
 * the translated bytes, which are written to a file in <dir> that has no name (O_TMPFILE,
 * else unlinked at once) and is read back through its descriptor: a server that crashes
 * leaves no user's file behind. Entries expire `ttl` seconds after they finish (or fail);
 * the spool holds at most max_entries jobs and max_total_bytes of files, and at most
 * max_per_owner jobs of one owner (a client), refusing new jobs beyond that with the time
 * at which the earliest slot that would let it in frees.
 *
 * Ids are 128 random bits in lowercase hex (getrandom): unguessable, and a lookup accepts
 * nothing else, so no id can name another file or a path ("../", "/", "%2e"). The
 * original file name is kept only as a download name, reduced to its last path component
 * with quotes and control characters replaced, and cut to 255 bytes keeping its
 * extension (and whole UTF-8 characters).
 *
 * Thread-safety: a spool may be used by any number of threads at once (one mutex).
 * Errors: open returns NULL, other calls -1, with a message.
 * Ownership: the spool copies what it is given (names, types, the translated bytes); a
 * lookup fills the caller's entry, and mt_spool_read's bytes are the caller's to free.
 * mt_spool_close removes the files and frees the spool.
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
    int max_per_owner;      /* of them, of one owner (0: no limit of its own) */
    int sweep;              /* 1: open removes files named like ids left in dir (an older
                             * spool's); 0 for a directory shared with others ($TMPDIR) */
    double ttl;             /* seconds a finished job stays downloadable */
    /* Clock in seconds (NULL: CLOCK_MONOTONIC); tests pass their own. */
    double (*clock)(void *user);
    void *clock_user;
} mt_spool_options;

/* Defaults: dir NULL (must be set), 20 MiB files, 512 MiB total, 256 entries, no limit
 * per owner, sweep, 1 hour. */
mt_spool_options mt_spool_options_default(void);

/* Opens the spool; with sweep, files named like ids left in dir are removed. */
mt_spool *mt_spool_open(const mt_spool_options *opt, char *err, size_t errlen);
/* Removes every file of the spool and frees it. */
void mt_spool_close(mt_spool *sp);

/* Registers a running job for a file called `name` of type `mime`; writes its id
 * (MT_SPOOL_ID_LEN chars + NUL) to id. -1 when the spool is full (after expiring). */
int mt_spool_begin(mt_spool *sp, const char *name, const char *mime, char *id, char *err,
                   size_t errlen);
/* The same for a job of `owner` (a client: its key or address; NULL: nobody's). Returns
 * 0; MT_SPOOL_FULL when the spool is full, MT_SPOOL_OWNER_FULL when the owner holds
 * max_per_owner jobs: *retry_after (when not NULL) is then the seconds until the
 * earliest job whose expiry would let this one in expires (a running one counts as
 * expiring a ttl from now, the earliest it could); -1 on other errors. */
int mt_spool_begin_for(mt_spool *sp, const char *owner, const char *name, const char *mime, char *id,
                       double *retry_after, char *err, size_t errlen);
enum { MT_SPOOL_FULL = -2, MT_SPOOL_OWNER_FULL = -3 };
/* Records progress of a running job: done of total units. */
int mt_spool_progress(mt_spool *sp, const char *id, long done, long total);
/* Stores the translated bytes of a running job and marks it done. */
int mt_spool_finish(mt_spool *sp, const char *id, const void *data, size_t len, char *err,
                    size_t errlen);
/* Marks a running job failed with a message the download answers with. */
int mt_spool_fail(mt_spool *sp, const char *id, const char *message);

/* What a download needs to know about a job. */
typedef struct mt_spool_entry {
    mt_spool_state state;
    long done, total;   /* progress of a running job */
    char name[256];     /* download name (sanitised) */
    char mime[128];     /* Content-Type */
    size_t size;        /* the translated file's size, when done (mt_spool_read) */
    char error[256];    /* why it failed, when failed */
} mt_spool_entry;

/* Looks up a job by id: 0 and *out filled, or -1 (malformed id, unknown or expired). */
int mt_spool_lookup(mt_spool *sp, const char *id, mt_spool_entry *out);
/* A done job's translated bytes: 0 with *data (malloc'd, the caller frees) and *len, or
 * -1 (not done, unknown or expired, or a read error; err says which). */
int mt_spool_read(mt_spool *sp, const char *id, char **data, size_t *len, char *err, size_t errlen);
/* The download name the spool keeps for `name` into out (cap bytes): its last path
 * component, quotes and control characters replaced, cut keeping its extension. */
void mt_spool_download_name(const char *name, char *out, size_t cap);
/* Removes jobs finished more than ttl ago; returns how many. (Also done by begin.) */
int mt_spool_expire(mt_spool *sp);

#endif
