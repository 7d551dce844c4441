/* spool.c: mt_spool. See spool.h for the contract. */
#include "spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    int used;
    char id[MT_SPOOL_ID_LEN + 1];
    char owner[128];    /* "" : nobody's */
    mt_spool_entry e;
    int fd;             /* the translated file (no name), when done */
    double finished_at; /* clock when done or failed */
} slot;

struct mt_spool {
    mt_spool_options opt;
    char dir[512];
    slot *slots;
    size_t total_bytes;
    pthread_mutex_t lock;
};

mt_spool_options mt_spool_options_default(void)
{
    mt_spool_options o = {
        .dir = NULL,
        .max_file_bytes = 20u << 20,
        .max_total_bytes = 512u << 20,
        .max_entries = 256,
        .max_per_owner = 0,
        .sweep = 1,
        .ttl = 3600,
    };
    return o;
}

static double now_of(const mt_spool *sp)
{
    if (sp->opt.clock) return sp->opt.clock(sp->opt.clock_user);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int is_id(const char *s)
{
    if (!s) return 0;
    for (int i = 0; i < MT_SPOOL_ID_LEN; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return s[MT_SPOOL_ID_LEN] == '\0';
}

/* Removes files named like ids (and their .part) left in dir by an earlier run. */
static void sweep_dir(const mt_spool *sp)
{
    DIR *d = opendir(sp->dir);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d))) {
        char name[MT_SPOOL_ID_LEN + 1];
        size_t n = strlen(de->d_name);
        if (n != MT_SPOOL_ID_LEN && !(n == MT_SPOOL_ID_LEN + 5 &&
                                      strcmp(de->d_name + MT_SPOOL_ID_LEN, ".part") == 0))
            continue;
        memcpy(name, de->d_name, MT_SPOOL_ID_LEN);
        name[MT_SPOOL_ID_LEN] = '\0';
        if (!is_id(name)) continue;
        char path[1100];
        snprintf(path, sizeof path, "%s/%s", sp->dir, de->d_name);
        unlink(path);
    }
    closedir(d);
}

mt_spool *mt_spool_open(const mt_spool_options *opt, char *err, size_t errlen)
{
    if (!opt || !opt->dir || !*opt->dir || opt->max_entries <= 0) {
        snprintf(err, errlen, "spool: a directory and max_entries > 0 are required");
        return NULL;
    }
    if (strlen(opt->dir) >= 480) {
        snprintf(err, errlen, "spool: directory path too long");
        return NULL;
    }
    if (mkdir(opt->dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "spool: cannot create %s: %s", opt->dir, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (stat(opt->dir, &st) != 0 || !S_ISDIR(st.st_mode) || access(opt->dir, W_OK) != 0) {
        snprintf(err, errlen, "spool: %s is not a writable directory", opt->dir);
        return NULL;
    }
    mt_spool *sp = calloc(1, sizeof *sp);
    if (sp) sp->slots = calloc((size_t)opt->max_entries, sizeof *sp->slots);
    if (!sp || !sp->slots) {
        if (sp) free(sp);
        snprintf(err, errlen, "spool: out of memory");
        return NULL;
    }
    sp->opt = *opt;
    snprintf(sp->dir, sizeof sp->dir, "%s", opt->dir);
    sp->opt.dir = sp->dir;
    pthread_mutex_init(&sp->lock, NULL);
    if (opt->sweep) sweep_dir(sp);
    return sp;
}

static void drop_slot(mt_spool *sp, slot *s)
{
    if (s->e.state == MT_SPOOL_DONE) {
        sp->total_bytes -= s->e.size;
        close(s->fd);
    }
    memset(s, 0, sizeof *s);
}

void mt_spool_close(mt_spool *sp)
{
    if (!sp) return;
    for (int i = 0; i < sp->opt.max_entries; i++)
        if (sp->slots[i].used) drop_slot(sp, &sp->slots[i]);
    pthread_mutex_destroy(&sp->lock);
    free(sp->slots);
    free(sp);
}

static int expire_locked(mt_spool *sp)
{
    double now = now_of(sp);
    int n = 0;
    for (int i = 0; i < sp->opt.max_entries; i++) {
        slot *s = &sp->slots[i];
        if (s->used && s->e.state != MT_SPOOL_RUNNING && now - s->finished_at > sp->opt.ttl) {
            drop_slot(sp, s);
            n++;
        }
    }
    return n;
}

int mt_spool_expire(mt_spool *sp)
{
    if (!sp) return 0;
    pthread_mutex_lock(&sp->lock);
    int n = expire_locked(sp);
    pthread_mutex_unlock(&sp->lock);
    return n;
}

static slot *find_locked(mt_spool *sp, const char *id)
{
    if (!is_id(id)) return NULL;
    for (int i = 0; i < sp->opt.max_entries; i++)
        if (sp->slots[i].used && strcmp(sp->slots[i].id, id) == 0) return &sp->slots[i];
    return NULL;
}

/* The longest prefix of s, at most n bytes, that ends on a whole UTF-8 character
 * (strlen(s) > n). */
static size_t utf8_cut(const char *s, size_t n)
{
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--; /* s[n] continues a character */
    return n;
}

/* The last path component of name, quotes, backslashes and control characters as '_';
 * a name longer than cap - 1 bytes is cut in its stem, so its extension (what the
 * download is opened with) stays. */
static void sanitize_name(const char *name, char *out, size_t cap)
{
    const char *base = name ? name : "";
    for (const char *p = base; *p; p++)
        if (*p == '/' || *p == '\\') base = p + 1;
    size_t len = strlen(base), keep = len;
    const char *ext = strrchr(base, '.');
    size_t ext_len = ext && ext != base ? strlen(ext) : 0;
    if (ext_len > 32) ext_len = 0; /* not an extension */
    if (len > cap - 1) keep = utf8_cut(base, cap - 1 - ext_len);
    size_t n = 0;
    for (size_t i = 0; i < len && n + 1 < cap; i++) {
        if (i == keep) i = len - ext_len; /* skip to the extension */
        if (i >= len) break;
        unsigned char c = (unsigned char)base[i];
        out[n++] = (c < 0x20 || c == 0x7f || c == '"' || c == ';') ? '_' : (char)c;
    }
    out[n] = '\0';
    if (n == 0 || strcmp(out, ".") == 0 || strcmp(out, "..") == 0)
        snprintf(out, cap, "translated");
}

void mt_spool_download_name(const char *name, char *out, size_t cap)
{
    if (out && cap > 1) sanitize_name(name, out, cap);
}

/* When slot t, if it were the one to expire, would free: finished ones ttl after they
 * finished, running ones at the earliest a ttl from now. */
static double frees_at(const mt_spool *sp, const slot *t, double now)
{
    return t->e.state == MT_SPOOL_RUNNING ? now + sp->opt.ttl : t->finished_at + sp->opt.ttl;
}

int mt_spool_begin_for(mt_spool *sp, const char *owner, const char *name, const char *mime, char *id,
                       double *retry_after, char *err, size_t errlen)
{
    if (retry_after) *retry_after = 0;
    if (!sp || !id) return -1;
    unsigned char rnd[MT_SPOOL_ID_LEN / 2];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
        snprintf(err, errlen, "spool: no random bytes for an id: %s", strerror(errno));
        return -1;
    }
    for (size_t i = 0; i < sizeof rnd; i++) sprintf(id + 2 * i, "%02x", rnd[i]);
    if (!owner) owner = "";
    pthread_mutex_lock(&sp->lock);
    expire_locked(sp);
    double now = now_of(sp), first = 0, first_own = 0;
    slot *free_slot = NULL;
    int own = 0;
    for (int i = 0; i < sp->opt.max_entries; i++) {
        slot *t = &sp->slots[i];
        if (!t->used) {
            if (!free_slot) free_slot = t;
            continue;
        }
        double at = frees_at(sp, t, now);
        if (!first || at < first) first = at;
        if (*owner && strncmp(t->owner, owner, sizeof t->owner - 1) == 0) {
            own++;
            if (!first_own || at < first_own) first_own = at;
        }
    }
    int rc = 0;
    if (*owner && sp->opt.max_per_owner > 0 && own >= sp->opt.max_per_owner) {
        rc = MT_SPOOL_OWNER_FULL;
        if (retry_after) *retry_after = first_own - now;
        snprintf(err, errlen, "you have %d files being translated or waiting for download (limit "
                 "%d per client); the first is removed in %.0f s", own, sp->opt.max_per_owner,
                 first_own - now);
    } else if (!free_slot) {
        rc = MT_SPOOL_FULL;
        if (retry_after) *retry_after = first - now;
        snprintf(err, errlen, "spool: %d files are being translated or waiting for download "
                 "(limit); the first is removed in %.0f s", sp->opt.max_entries, first - now);
    } else {
        memset(free_slot, 0, sizeof *free_slot);
        free_slot->used = 1;
        free_slot->fd = -1;
        memcpy(free_slot->id, id, MT_SPOOL_ID_LEN + 1);
        snprintf(free_slot->owner, sizeof free_slot->owner, "%s", owner);
        free_slot->e.state = MT_SPOOL_RUNNING;
        sanitize_name(name, free_slot->e.name, sizeof free_slot->e.name);
        snprintf(free_slot->e.mime, sizeof free_slot->e.mime, "%s",
                 mime && *mime && !strpbrk(mime, "\r\n") ? mime : "application/octet-stream");
    }
    pthread_mutex_unlock(&sp->lock);
    return rc;
}

int mt_spool_begin(mt_spool *sp, const char *name, const char *mime, char *id, char *err,
                   size_t errlen)
{
    return mt_spool_begin_for(sp, NULL, name, mime, id, NULL, err, errlen) ? -1 : 0;
}

int mt_spool_progress(mt_spool *sp, const char *id, long done, long total)
{
    if (!sp) return -1;
    pthread_mutex_lock(&sp->lock);
    slot *s = find_locked(sp, id);
    int rc = (s && s->e.state == MT_SPOOL_RUNNING) ? 0 : -1;
    if (rc == 0) {
        s->e.done = done;
        s->e.total = total;
    }
    pthread_mutex_unlock(&sp->lock);
    return rc;
}

/* An unnamed file in the spool's directory: O_TMPFILE, else a random name unlinked at
 * once (file systems without O_TMPFILE); -1 with errno. */
static int open_unnamed(const mt_spool *sp)
{
    int fd = open(sp->dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)) return fd;
    for (int tries = 0; tries < 16; tries++) {
        unsigned char rnd[8];
        if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) return -1;
        char path[600];
        int n = snprintf(path, sizeof path, "%s/.mt-spool-", sp->dir);
        for (size_t i = 0; i < sizeof rnd && n + 2 < (int)sizeof path; i++, n += 2)
            sprintf(path + n, "%02x", rnd[i]);
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd >= 0) {
            unlink(path);
            return fd;
        }
        if (errno != EEXIST) return -1;
    }
    return -1;
}

static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

int mt_spool_finish(mt_spool *sp, const char *id, const void *data, size_t len, char *err,
                    size_t errlen)
{
    if (!sp || (!data && len)) return -1;
    pthread_mutex_lock(&sp->lock);
    slot *s = find_locked(sp, id);
    int rc = -1;
    if (!s || s->e.state != MT_SPOOL_RUNNING) {
        snprintf(err, errlen, "spool: no running job %s", is_id(id) ? id : "(bad id)");
        goto out;
    }
    if (len > sp->opt.max_file_bytes) {
        snprintf(err, errlen, "spool: the translated file has %zu bytes, more than the limit "
                 "of %zu", len, sp->opt.max_file_bytes);
        goto out;
    }
    if (sp->total_bytes + len > sp->opt.max_total_bytes) {
        snprintf(err, errlen, "spool: no room for %zu more bytes (limit %zu in all); try again "
                 "later", len, sp->opt.max_total_bytes);
        goto out;
    }
    /* A file without a name: nothing of it outlives this process, whatever happens. */
    int fd = open_unnamed(sp);
    if (fd < 0 || write_all(fd, data, len) != 0) {
        snprintf(err, errlen, "spool: cannot write to %s: %s", sp->dir, strerror(errno));
        if (fd >= 0) close(fd);
        goto out;
    }
    s->fd = fd;
    s->e.state = MT_SPOOL_DONE;
    s->e.size = len;
    s->e.done = s->e.total;
    s->finished_at = now_of(sp);
    sp->total_bytes += len;
    rc = 0;
out:
    pthread_mutex_unlock(&sp->lock);
    return rc;
}

int mt_spool_fail(mt_spool *sp, const char *id, const char *message)
{
    if (!sp) return -1;
    pthread_mutex_lock(&sp->lock);
    slot *s = find_locked(sp, id);
    int rc = (s && s->e.state == MT_SPOOL_RUNNING) ? 0 : -1;
    if (rc == 0) {
        s->e.state = MT_SPOOL_FAILED;
        snprintf(s->e.error, sizeof s->e.error, "%s", message ? message : "translation failed");
        s->finished_at = now_of(sp);
    }
    pthread_mutex_unlock(&sp->lock);
    return rc;
}

int mt_spool_lookup(mt_spool *sp, const char *id, mt_spool_entry *out)
{
    if (!sp || !out) return -1;
    pthread_mutex_lock(&sp->lock);
    expire_locked(sp);
    slot *s = find_locked(sp, id);
    if (s) *out = s->e;
    pthread_mutex_unlock(&sp->lock);
    return s ? 0 : -1;
}

int mt_spool_read(mt_spool *sp, const char *id, char **data, size_t *len, char *err, size_t errlen)
{
    *data = NULL;
    *len = 0;
    if (!sp) return -1;
    pthread_mutex_lock(&sp->lock);
    expire_locked(sp);
    slot *s = find_locked(sp, id);
    int fd = s && s->e.state == MT_SPOOL_DONE ? dup(s->fd) : -1; /* read after unlocking */
    size_t size = s ? s->e.size : 0;
    pthread_mutex_unlock(&sp->lock);
    if (fd < 0) {
        snprintf(err, errlen, "no such file: unknown or expired id");
        return -1;
    }
    char *buf = malloc(size ? size : 1);
    size_t got = 0;
    while (buf && got < size) {
        ssize_t r = pread(fd, buf + got, size - got, (off_t)got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    if (!buf || got != size) {
        free(buf);
        snprintf(err, errlen, "cannot read the translated file");
        return -1;
    }
    *data = buf;
    *len = size;
    return 0;
}
