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
    mt_spool_entry e;
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

static void file_path(const mt_spool *sp, const char *id, const char *suffix, char *out,
                      size_t cap)
{
    snprintf(out, cap, "%s/%s%s", sp->dir, id, suffix);
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
    sweep_dir(sp);
    return sp;
}

static void drop_slot(mt_spool *sp, slot *s)
{
    char path[600];
    file_path(sp, s->id, "", path, sizeof path);
    unlink(path);
    file_path(sp, s->id, ".part", path, sizeof path);
    unlink(path);
    if (s->e.state == MT_SPOOL_DONE) sp->total_bytes -= s->e.size;
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

/* The last path component of name, quotes, backslashes and control characters as '_'. */
static void sanitize_name(const char *name, char *out, size_t cap)
{
    const char *base = name ? name : "";
    for (const char *p = base; *p; p++)
        if (*p == '/' || *p == '\\') base = p + 1;
    size_t n = 0;
    for (const char *p = base; *p && n + 1 < cap; p++) {
        unsigned char c = (unsigned char)*p;
        out[n++] = (c < 0x20 || c == 0x7f || c == '"' || c == ';') ? '_' : (char)c;
    }
    out[n] = '\0';
    if (n == 0 || strcmp(out, ".") == 0 || strcmp(out, "..") == 0)
        snprintf(out, cap, "translated");
}

int mt_spool_begin(mt_spool *sp, const char *name, const char *mime, char *id, char *err,
                   size_t errlen)
{
    if (!sp || !id) return -1;
    unsigned char rnd[MT_SPOOL_ID_LEN / 2];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
        snprintf(err, errlen, "spool: no random bytes for an id: %s", strerror(errno));
        return -1;
    }
    for (size_t i = 0; i < sizeof rnd; i++) sprintf(id + 2 * i, "%02x", rnd[i]);
    pthread_mutex_lock(&sp->lock);
    expire_locked(sp);
    slot *free_slot = NULL;
    for (int i = 0; i < sp->opt.max_entries && !free_slot; i++)
        if (!sp->slots[i].used) free_slot = &sp->slots[i];
    if (!free_slot) {
        pthread_mutex_unlock(&sp->lock);
        snprintf(err, errlen, "spool: %d files are being translated or waiting for download "
                 "(limit); try again later", sp->opt.max_entries);
        return -1;
    }
    memset(free_slot, 0, sizeof *free_slot);
    free_slot->used = 1;
    memcpy(free_slot->id, id, MT_SPOOL_ID_LEN + 1);
    free_slot->e.state = MT_SPOOL_RUNNING;
    sanitize_name(name, free_slot->e.name, sizeof free_slot->e.name);
    snprintf(free_slot->e.mime, sizeof free_slot->e.mime, "%s",
             mime && *mime && !strpbrk(mime, "\r\n") ? mime : "application/octet-stream");
    pthread_mutex_unlock(&sp->lock);
    return 0;
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
    /* Written under a temporary name and renamed, so a download never sees half a file. */
    char part[600], path[600]; /* dir is under 480 bytes */
    file_path(sp, s->id, ".part", part, sizeof part);
    file_path(sp, s->id, "", path, sizeof path);
    int fd = open(part, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 || write_all(fd, data, len) != 0 || close(fd) != 0 || rename(part, path) != 0) {
        snprintf(err, errlen, "spool: cannot write %s: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        unlink(part);
        goto out;
    }
    s->e.state = MT_SPOOL_DONE;
    s->e.size = len;
    s->e.done = s->e.total;
    snprintf(s->e.path, sizeof s->e.path, "%s", path);
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
