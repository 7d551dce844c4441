/* torchzip.c: torch.save's two file layouts around the pickles (torchzip.h): the zip
 * checkpoint (ARCHIVE/data.pkl, ARCHIVE/byteorder, ARCHIVE/data/KEY entries read with
 * libzip) and the legacy stream (pickles in a row, then each storage's data), and copying a
 * tensor's elements out of its storage. The pickles themselves are run by unpickle.c. */
#include "torchzip.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>
#include <zip.h>

#include "status.h"
#include "unpickle.h"

enum { MAX_PKL = 64 << 20 }; /* data.pkl's largest size */

struct mh_torch {
    zip_t *zip;
    char *prefix;           /* "archive" */
    mh_state_dict sd;
    const unsigned char *mem;   /* legacy format: the whole file (mapped or borrowed) */
    size_t mem_len;
    void *map;              /* owned mapping of mem, or NULL */
    size_t *data_off;       /* legacy: each storage's data, as an offset into mem */
    int cached;             /* storage index held in cache, or -1 */
    unsigned char *cache;
    size_t cache_len;
};

void mh_torch_close(mh_torch *t)
{
    if (!t)
        return;
    if (t->zip)
        zip_discard(t->zip);
    mh_state_dict_free(&t->sd);
    free(t->prefix);
    free(t->cache);
    free(t->data_off);
    if (t->map)
        munmap(t->map, t->mem_len);
    free(t);
}

/* Reads a whole entry (at most cap bytes) into a new buffer. */
static unsigned char *read_entry(zip_t *z, zip_int64_t idx, size_t cap, size_t *len, char *err, size_t errlen)
{
    zip_stat_t zs;
    if (zip_stat_index(z, (zip_uint64_t)idx, 0, &zs) || !(zs.valid & ZIP_STAT_SIZE))
        return mt_strfmt(err, errlen, "cannot stat a zip entry: %s", zip_strerror(z)), NULL;
    /* torch.save stores entries uncompressed: a stored entry's size is bounded by the
     * archive's, so a lying header cannot ask for a huge buffer. */
    if ((zs.valid & ZIP_STAT_COMP_METHOD) && zs.comp_method != ZIP_CM_STORE)
        return mt_strfmt(err, errlen, "zip entry '%s' is compressed, which torch.save never does", zs.name), NULL;
    if (zs.size > cap || ((zs.valid & ZIP_STAT_COMP_SIZE) && zs.size > zs.comp_size))
        return mt_strfmt(err, errlen, "zip entry '%s' is larger than %zu bytes or than its stored data", zs.name,
                         cap), NULL;
    unsigned char *buf = malloc(zs.size ? (size_t)zs.size : 1);
    zip_file_t *f = buf ? zip_fopen_index(z, (zip_uint64_t)idx, 0) : NULL;
    if (!f) {
        mt_strfmt(err, errlen, buf ? "cannot open zip entry '%s': %s" : "out of memory for '%s'%s", zs.name,
                  buf ? zip_strerror(z) : "");
        free(buf);
        return NULL;
    }
    zip_int64_t got = zip_fread(f, buf, zs.size);
    zip_fclose(f);
    if (got < 0 || (zip_uint64_t)got != zs.size) {
        mt_strfmt(err, errlen, "zip entry '%s' is damaged (read %lld of %llu bytes)", zs.name, (long long)got,
                  (unsigned long long)zs.size);
        free(buf);
        return NULL;
    }
    *len = (size_t)zs.size;
    return buf;
}

static mh_torch *open_zip(zip_t *z, char *err, size_t errlen)
{
    mh_torch *t = calloc(1, sizeof *t);
    if (!t) {
        zip_discard(z);
        return mt_strfmt(err, errlen, "out of memory"), NULL;
    }
    t->zip = z;
    t->cached = -1;
    zip_int64_t n = zip_get_num_entries(z, 0), pkl = -1;
    for (zip_int64_t k = 0; k < n; k++) {
        const char *name = zip_get_name(z, (zip_uint64_t)k, 0);
        const char *slash = name ? strchr(name, '/') : NULL;
        if (slash && !strcmp(slash, "/data.pkl")) {
            pkl = k;
            t->prefix = strndup(name, (size_t)(slash - name));
            break;
        }
    }
    if (pkl < 0 || !t->prefix) {
        mt_strfmt(err, errlen, "no ARCHIVE/data.pkl entry: not a torch.save zip file");
        goto bad;
    }
    char name[600];
    zip_int64_t bo = zip_name_locate(z, mt_strfmt(name, sizeof name, "%.500s/byteorder", t->prefix), 0);
    if (bo >= 0) {
        size_t len;
        unsigned char *b = read_entry(z, bo, 16, &len, err, errlen);
        if (!b)
            goto bad;
        int little = len == 6 && !memcmp(b, "little", 6);
        free(b);
        if (!little) {
            mt_strfmt(err, errlen, "big-endian checkpoint (byteorder is not 'little')");
            goto bad;
        }
    }
    size_t len;
    unsigned char *pk = read_entry(z, pkl, MAX_PKL, &len, err, errlen);
    if (!pk)
        goto bad;
    int rc = mh_unpickle(pk, len, &t->sd, NULL, err, errlen);
    free(pk);
    if (rc)
        goto bad;
    return t;
bad:
    mh_torch_close(t);
    return NULL;
}


/* ---- torch's legacy format (torch.save before 1.6, or _use_new_zipfile_serialization=False):
 * five pickles in a row (magic number, protocol version 1001, sys_info, the state dict,
 * the list of storage keys), then per key an int64 element count and the raw data. */

static const unsigned char LEGACY_MAGIC[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9,
                                             0x20, 0x6a, 0xa8, 0x50, 0x19, 0x2e};

static mh_torch *open_legacy(const unsigned char *mem, size_t len, void *map, char *err, size_t errlen)
{
    mh_torch *t = calloc(1, sizeof *t);
    if (!t) {
        if (map)
            munmap(map, len);
        return mt_strfmt(err, errlen, "out of memory"), NULL;
    }
    t->mem = mem;
    t->mem_len = len;
    t->map = map;
    t->cached = -1;
    size_t pos = sizeof LEGACY_MAGIC, used;
    int64_t version = 0;
    if (mh_unpickle_legacy(mem + pos, len - pos, pos, MH_LEGACY_INT, &t->sd, NULL, &version, &used, err, errlen))
        goto bad;
    if (version != 1001) {
        mt_strfmt(err, errlen, "legacy format protocol version %lld, not 1001", (long long)version);
        goto bad;
    }
    pos += used;
    if (mh_unpickle_legacy(mem + pos, len - pos, pos, MH_LEGACY_SYS_INFO, &t->sd, NULL, NULL, &used, err, errlen))
        goto bad;
    pos += used;
    if (mh_unpickle(mem + pos, len - pos, &t->sd, &used, err, errlen))
        goto bad;
    pos += used;
    t->data_off = malloc((t->sd.nst ? t->sd.nst : 1) * sizeof *t->data_off);
    if (!t->data_off) {
        mt_strfmt(err, errlen, "out of memory");
        goto bad;
    }
    for (size_t k = 0; k < t->sd.nst; k++)
        t->data_off[k] = (size_t)-1;
    if (mh_unpickle_legacy(mem + pos, len - pos, pos, MH_LEGACY_KEYS, &t->sd, t->data_off, NULL, &used, err, errlen))
        goto bad;
    return t;
bad:
    mh_torch_close(t);
    return NULL;
}

static int is_legacy(const void *bytes, size_t len)
{
    return len >= sizeof LEGACY_MAGIC && !memcmp(bytes, LEGACY_MAGIC, sizeof LEGACY_MAGIC);
}

mh_torch *mh_torch_open(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return mt_strfmt(err, errlen, "cannot open %s: %s", path, strerror(errno)), NULL;
    unsigned char magic[4] = {0};
    size_t got = fread(magic, 1, 4, f);
    fclose(f);
    if (got == 4 && magic[0] == 0x80) {
        int fd = open(path, O_RDONLY);
        struct stat sb;
        if (fd < 0 || fstat(fd, &sb)) {
            if (fd >= 0)
                close(fd);
            return mt_strfmt(err, errlen, "cannot open %s: %s", path, strerror(errno)), NULL;
        }
        void *map = sb.st_size > 0 ? mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
        close(fd);
        if (map == MAP_FAILED)
            return mt_strfmt(err, errlen, "cannot map %s: %s", path, strerror(errno)), NULL;
        if (!is_legacy(map, (size_t)sb.st_size)) {
            munmap(map, (size_t)sb.st_size);
            return mt_strfmt(err, errlen, "%s is a bare pickle, not a torch.save file", path), NULL;
        }
        mh_torch *t = open_legacy(map, (size_t)sb.st_size, map, err, errlen);
        if (!t && err && errlen > strlen(err) + 1)
            mt_strfmt(err + strlen(err), errlen - strlen(err), " (in %s, torch's legacy format)", path);
        return t;
    }
    if (got < 4 || memcmp(magic, "PK\3\4", 4))
        return mt_strfmt(err, errlen, "%s is not a torch.save zip file", path), NULL;
    int zerr = 0;
    zip_t *z = zip_open(path, ZIP_RDONLY | ZIP_CHECKCONS, &zerr);
    if (!z) {
        zip_error_t ze;
        zip_error_init_with_code(&ze, zerr);
        mt_strfmt(err, errlen, "%s: %s", path, zip_error_strerror(&ze));
        zip_error_fini(&ze);
        return NULL;
    }
    return open_zip(z, err, errlen);
}

mh_torch *mh_torch_parse(const void *bytes, size_t len, char *err, size_t errlen)
{
    if (is_legacy(bytes, len))
        return open_legacy(bytes, len, NULL, err, errlen);
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *src = zip_source_buffer_create(bytes, len, 0, &ze);
    zip_t *z = src ? zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &ze) : NULL;
    if (!z) {
        mt_strfmt(err, errlen, "not a zip file: %s", zip_error_strerror(&ze));
        if (src)
            zip_source_free(src);
        zip_error_fini(&ze);
        return NULL;
    }
    zip_error_fini(&ze);
    return open_zip(z, err, errlen);
}

int mh_torch_count(const mh_torch *t) { return t->sd.count; }
const mh_torch_tensor *mh_torch_at(const mh_torch *t, int i) { return &t->sd.t[i]; }

int mh_torch_read(mh_torch *t, int i, void *dst, char *err, size_t errlen)
{
    const mh_torch_tensor *x = &t->sd.t[i];
    const mh_storage *s = &t->sd.st[x->storage];
    size_t es = mh_dtype_size(x->dtype);
    const unsigned char *data;
    if (t->mem) {
        if (t->data_off[x->storage] == (size_t)-1)
            return mt_error(MT_ERR_INVALID, err, errlen, "storage of tensor '%s' has no data", x->name);
        data = t->mem + t->data_off[x->storage];
    } else if (t->cached != x->storage) {
        free(t->cache);
        t->cache = NULL;
        t->cached = -1;
        char name[600];
        zip_int64_t idx = zip_name_locate(t->zip, mt_strfmt(name, sizeof name, "%.300s/data/%.200s",
                                                            t->prefix, s->key), 0);
        if (idx < 0)
            return mt_error(MT_ERR_INVALID, err, errlen, "storage entry %s missing (tensor '%s')", name, x->name);
        if (!(t->cache = read_entry(t->zip, idx, (size_t)s->numel * es, &t->cache_len, err, errlen)))
            return MT_ERR_INVALID;
        if (t->cache_len < (size_t)s->numel * es)
            return mt_error(MT_ERR_INVALID, err, errlen, "storage entry %s holds %zu bytes, %lld elements declared",
                            name, t->cache_len, (long long)s->numel);
        t->cached = x->storage;
        data = t->cache;
    } else {
        data = t->cache;
    }
    int64_t numel = 1, want = 1;
    int contiguous = 1;
    for (int d = x->ndim - 1; d >= 0; d--) {
        if (x->shape[d] > 1 && x->stride[d] != want)
            contiguous = 0;
        want *= x->shape[d];
        numel *= x->shape[d];
    }
    unsigned char *out = dst;
    if (contiguous) {
        if (numel)
            memcpy(out, data + (size_t)x->offset * es, (size_t)numel * es);
        return 0;
    }
    int64_t idx[8] = {0};
    for (int64_t k = 0; k < numel; k++) {
        int64_t off = x->offset;
        for (int d = 0; d < x->ndim; d++)
            off += idx[d] * x->stride[d];
        memcpy(out + (size_t)k * es, data + (size_t)off * es, es);
        for (int d = x->ndim - 1; d >= 0; d--) {
            if (++idx[d] < x->shape[d])
                break;
            idx[d] = 0;
        }
    }
    return 0;
}
