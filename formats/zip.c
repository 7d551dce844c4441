/* zip.c: the zip layer of .docx/.odt. See format_zip.h for the contract.
 *
 * libzip writes an archive back into the source it was opened from. Its own buffer
 * source may then keep the unchanged head of the input and share it with the new
 * archive ("cloning"), and in libzip 1.7 that freed the caller's buffer whenever the
 * first rewritten entry lay past the middle of the zip (double free in every caller).
 * So the archive is opened on a source of our own: it reads the borrowed input, writes
 * into a separate growing buffer and offers no cloning, so who owns what is plain. */
#include "format_zip.h"

#include <stdlib.h>
#include <string.h>

#include <zip.h>

#include "format_int.h"

typedef struct {
    const unsigned char *in; /* borrowed */
    zip_uint64_t in_len, pos;
    unsigned char *out; /* owned until handed to the caller */
    zip_uint64_t out_len, out_cap, wpos;
    int committed;
    zip_error_t error;
} mem_source;

struct fmt_zip {
    mem_source ms;
    zip_t *za;
    mt_format_options opt;
    char what[64];
    long n;
    char **names;      /* raw entry names */
    size_t read_bytes; /* unpacked so far, against opt.max_part_bytes */
};

static zip_int64_t out_reserve(mem_source *s, zip_uint64_t need)
{
    if (need <= s->out_cap) return 0;
    zip_uint64_t cap = s->out_cap ? s->out_cap : 65536;
    while (cap < need) cap *= 2;
    unsigned char *p = realloc(s->out, (size_t)cap);
    if (!p) {
        zip_error_set(&s->error, ZIP_ER_MEMORY, 0);
        return -1;
    }
    s->out = p;
    s->out_cap = cap;
    return 0;
}

static zip_int64_t mem_source_cb(void *ud, void *data, zip_uint64_t len, zip_source_cmd_t cmd)
{
    mem_source *s = ud;
    switch (cmd) {
    case ZIP_SOURCE_OPEN:
        s->pos = 0;
        return 0;
    case ZIP_SOURCE_READ: {
        zip_uint64_t n = s->in_len - s->pos < len ? s->in_len - s->pos : len;
        memcpy(data, s->in + s->pos, (size_t)n);
        s->pos += n;
        return (zip_int64_t)n;
    }
    case ZIP_SOURCE_CLOSE:
    case ZIP_SOURCE_FREE:
        return 0;
    case ZIP_SOURCE_STAT: {
        zip_stat_t *st = ZIP_SOURCE_GET_ARGS(zip_stat_t, data, len, &s->error);
        if (!st) return -1;
        zip_stat_init(st);
        st->size = st->comp_size = s->in_len;
        st->comp_method = ZIP_CM_STORE;
        st->encryption_method = ZIP_EM_NONE;
        st->valid = ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD |
                    ZIP_STAT_ENCRYPTION_METHOD;
        return sizeof *st;
    }
    case ZIP_SOURCE_ERROR:
        return zip_error_to_data(&s->error, data, len);
    case ZIP_SOURCE_SEEK: {
        zip_int64_t p = zip_source_seek_compute_offset(s->pos, s->in_len, data, len, &s->error);
        if (p < 0) return -1;
        s->pos = (zip_uint64_t)p;
        return 0;
    }
    case ZIP_SOURCE_TELL:
        return (zip_int64_t)s->pos;
    case ZIP_SOURCE_BEGIN_WRITE:
        s->out_len = s->wpos = 0;
        s->committed = 0;
        return 0;
    case ZIP_SOURCE_WRITE:
        if (out_reserve(s, s->wpos + len) != 0) return -1;
        if (s->wpos > s->out_len) memset(s->out + s->out_len, 0, (size_t)(s->wpos - s->out_len));
        memcpy(s->out + s->wpos, data, (size_t)len);
        s->wpos += len;
        if (s->wpos > s->out_len) s->out_len = s->wpos;
        return (zip_int64_t)len;
    case ZIP_SOURCE_SEEK_WRITE: {
        zip_int64_t p = zip_source_seek_compute_offset(s->wpos, s->out_len, data, len, &s->error);
        if (p < 0) return -1;
        s->wpos = (zip_uint64_t)p;
        return 0;
    }
    case ZIP_SOURCE_TELL_WRITE:
        return (zip_int64_t)s->wpos;
    case ZIP_SOURCE_COMMIT_WRITE:
        s->committed = 1;
        return 0;
    case ZIP_SOURCE_ROLLBACK_WRITE:
    case ZIP_SOURCE_REMOVE:
        s->out_len = s->wpos = 0;
        s->committed = 0;
        return 0;
    case ZIP_SOURCE_SUPPORTS:
        return ZIP_SOURCE_SUPPORTS_WRITABLE;
    default:
        zip_error_set(&s->error, ZIP_ER_OPNOTSUPP, 0);
        return -1;
    }
}

/* A name that would leave the extraction folder, or mean different files to different
 * unzippers, is refused even though we extract nothing: the document goes on to users. */
static const char *bad_name(const char *name)
{
    if (!name[0]) return "an empty name";
    if (name[0] == '/') return "an absolute path";
    if (strchr(name, '\\')) return "a backslash";
    if (name[0] && name[1] == ':') return "a drive letter";
    for (const char *p = name; *p;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.') return "a '..' component";
        p += n + (slash ? 1 : 0);
    }
    return NULL;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Checks every entry's directory record: sizes, encryption, names, duplicates. */
static int check_entries(fmt_zip *z, int *code, char *err, size_t errlen)
{
    const char *w = z->what;
    zip_uint64_t total = 0;
    for (long i = 0; i < z->n; i++) {
        zip_stat_t st;
        if (zip_stat_index(z->za, (zip_uint64_t)i, ZIP_FL_ENC_RAW, &st) != 0 ||
            !(st.valid & ZIP_STAT_NAME) || !(st.valid & ZIP_STAT_SIZE)) {
            *code = fmt_fail(MT_FORMAT_INVALID, err, errlen, "%s: zip entry %ld: %s", w, i,
                             zip_strerror(z->za));
            return -1;
        }
        z->names[i] = strdup(st.name);
        if (!z->names[i]) {
            *code = fmt_fail(MT_FORMAT_FAILED, err, errlen, "out of memory");
            return -1;
        }
        const char *why = bad_name(st.name);
        if (why) {
            *code = fmt_fail(MT_FORMAT_INVALID, err, errlen,
                             "%s: zip entry '%.200s' has %s (refused)", w, st.name, why);
            return -1;
        }
        if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) && st.encryption_method != ZIP_EM_NONE) {
            *code = fmt_fail(MT_FORMAT_INVALID, err, errlen,
                             "%s: zip entry '%.200s' is encrypted (not supported)", w, st.name);
            return -1;
        }
        total += st.size;
        if (st.size > z->opt.max_total_uncompressed || total > z->opt.max_total_uncompressed) {
            *code = fmt_fail(MT_FORMAT_TOO_LARGE, err, errlen,
                             "%s: entries unpack to more than the limit of %zu bytes (at %.200s)",
                             w, z->opt.max_total_uncompressed, st.name);
            return -1;
        }
    }
    char **sorted = malloc((size_t)(z->n ? z->n : 1) * sizeof *sorted);
    if (!sorted) {
        *code = fmt_fail(MT_FORMAT_FAILED, err, errlen, "out of memory");
        return -1;
    }
    memcpy(sorted, z->names, (size_t)z->n * sizeof *sorted);
    qsort(sorted, (size_t)z->n, sizeof *sorted, cmp_names);
    for (long i = 1; i < z->n; i++) {
        if (strcmp(sorted[i - 1], sorted[i]) == 0) {
            *code = fmt_fail(MT_FORMAT_INVALID, err, errlen,
                             "%s: two zip entries have the same name ('%.200s', refused)", w,
                             sorted[i]);
            free(sorted);
            return -1;
        }
    }
    free(sorted);
    return 0;
}

fmt_zip *fmt_zip_open(const unsigned char *data, size_t len, const mt_format_options *opt,
                      const char *what, int *code, char *err, size_t errlen)
{
    fmt_zip *z = calloc(1, sizeof *z);
    if (!z) {
        *code = fmt_fail(MT_FORMAT_FAILED, err, errlen, "out of memory");
        return NULL;
    }
    z->opt = *opt;
    snprintf(z->what, sizeof z->what, "%s", what);
    z->ms.in = data;
    z->ms.in_len = len;
    zip_error_init(&z->ms.error);
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *src = zip_source_function_create(mem_source_cb, &z->ms, &ze);
    if (src) {
        z->za = zip_open_from_source(src, ZIP_CHECKCONS, &ze);
        if (!z->za) zip_source_free(src);
    }
    if (!z->za) {
        int ec = zip_error_code_zip(&ze);
        if (ec == ZIP_ER_EXISTS) /* libzip's word for a name that two entries carry */
            *code = fmt_fail(MT_FORMAT_INVALID, err, errlen,
                             "%s: two zip entries have the same name (refused)", what);
        else
            *code = fmt_fail(ec == ZIP_ER_MEMORY ? MT_FORMAT_FAILED : MT_FORMAT_INVALID, err,
                             errlen, "%s: not a valid zip archive: %s", what,
                             zip_error_strerror(&ze));
        zip_error_fini(&ze);
        fmt_zip_free(z);
        return NULL;
    }
    zip_error_fini(&ze);
    zip_int64_t n = zip_get_num_entries(z->za, 0);
    if (n > opt->max_entries) {
        *code = fmt_fail(MT_FORMAT_TOO_LARGE, err, errlen,
                         "%s: %lld zip entries, more than the limit of %ld", what,
                         (long long)n, opt->max_entries);
        fmt_zip_free(z);
        return NULL;
    }
    z->n = n > 0 ? (long)n : 0;
    z->names = calloc((size_t)(z->n ? z->n : 1), sizeof *z->names);
    if (!z->names) {
        *code = fmt_fail(MT_FORMAT_FAILED, err, errlen, "out of memory");
        fmt_zip_free(z);
        return NULL;
    }
    if (check_entries(z, code, err, errlen) != 0) {
        fmt_zip_free(z);
        return NULL;
    }
    *code = MT_FORMAT_OK;
    return z;
}

long fmt_zip_count(const fmt_zip *z) { return z->n; }

const char *fmt_zip_name(const fmt_zip *z, long i)
{
    return i >= 0 && i < z->n ? z->names[i] : NULL;
}

int fmt_zip_read(fmt_zip *z, long i, unsigned char **data, size_t *len, char *err,
                 size_t errlen)
{
    *data = NULL;
    *len = 0;
    const char *w = z->what, *name = fmt_zip_name(z, i);
    zip_stat_t st;
    if (!name || zip_stat_index(z->za, (zip_uint64_t)i, 0, &st) != 0)
        return fmt_fail(MT_FORMAT_INVALID, err, errlen, "%s: no zip entry %ld", w, i);
    size_t max = z->opt.max_part_bytes;
    if (st.size > max)
        return fmt_fail(MT_FORMAT_TOO_LARGE, err, errlen,
                        "%s: %.200s: %llu bytes uncompressed, more than the limit of %zu bytes "
                        "of XML per document", w, name, (unsigned long long)st.size, max);
    if (z->read_bytes + st.size > max)
        return fmt_fail(MT_FORMAT_TOO_LARGE, err, errlen,
                        "%s: %.200s: %llu bytes uncompressed, with the %zu read before more "
                        "than the limit of %zu bytes of XML per document", w, name,
                        (unsigned long long)st.size, z->read_bytes, max);
    /* Real XML deflates 5 to 20 times; a part over 1 MiB unpacking 100 times its size
     * is a bomb (16 MiB of "<a/>" fit in 20 KB). */
    if (st.size > (1u << 20) && (st.valid & ZIP_STAT_COMP_SIZE) && z->opt.max_ratio > 0 &&
        st.size / (st.comp_size ? st.comp_size : 1) >= (zip_uint64_t)z->opt.max_ratio)
        return fmt_fail(MT_FORMAT_TOO_LARGE, err, errlen,
                        "%s: %.200s: unpacks from %llu to %llu bytes, more than %d times "
                        "(a zip bomb?)", w, name, (unsigned long long)st.comp_size,
                        (unsigned long long)st.size, z->opt.max_ratio);
    zip_file_t *zf = zip_fopen_index(z->za, (zip_uint64_t)i, 0);
    if (!zf)
        return fmt_fail(MT_FORMAT_INVALID, err, errlen, "%s: %.200s: %s", w, name,
                        zip_strerror(z->za));
    unsigned char *d = malloc((size_t)st.size + 2);
    if (!d) {
        zip_fclose(zf);
        return fmt_fail(MT_FORMAT_FAILED, err, errlen, "out of memory");
    }
    /* Ask for one byte more than declared: an entry that inflates beyond its declared
     * size (a lying header) is refused rather than trusted. */
    zip_uint64_t got = 0;
    zip_int64_t r = 0;
    while (got <= st.size && (r = zip_fread(zf, d + got, st.size + 1 - got)) > 0)
        got += (zip_uint64_t)r;
    if (r < 0 || got != st.size) {
        fmt_fail(MT_FORMAT_INVALID, err, errlen, "%s: %.200s: %s", w, name,
                 r < 0 ? zip_file_strerror(zf) : "size differs from the zip directory");
        zip_fclose(zf);
        free(d);
        return MT_FORMAT_INVALID;
    }
    zip_fclose(zf);
    d[got] = '\0';
    z->read_bytes += (size_t)got;
    *data = d;
    *len = (size_t)got;
    return MT_FORMAT_OK;
}

int fmt_zip_replace(fmt_zip *z, long i, unsigned char *data, size_t len, char *err,
                    size_t errlen)
{
    zip_source_t *ps = zip_source_buffer(z->za, data, (zip_uint64_t)len, 1);
    if (!ps) {
        free(data);
        return fmt_fail(MT_FORMAT_FAILED, err, errlen, "%s: %s", z->what, zip_strerror(z->za));
    }
    /* The rewritten part keeps the original's time stamp: libzip would stamp it with the
     * clock, and the same document translated twice must give the same bytes. */
    zip_stat_t st;
    zip_stat_init(&st);
    int keep_mtime = zip_stat_index(z->za, (zip_uint64_t)i, 0, &st) == 0 && (st.valid & ZIP_STAT_MTIME);
    if (zip_file_replace(z->za, (zip_uint64_t)i, ps, 0) != 0) {
        zip_source_free(ps); /* frees data (freep = 1) */
        return fmt_fail(MT_FORMAT_FAILED, err, errlen, "%s: %s", z->what, zip_strerror(z->za));
    }
    if (keep_mtime)
        zip_file_set_mtime(z->za, (zip_uint64_t)i, st.mtime, 0);
    zip_set_file_compression(z->za, (zip_uint64_t)i, ZIP_CM_DEFLATE, 0);
    return MT_FORMAT_OK;
}

int fmt_zip_write(fmt_zip *z, unsigned char **out, size_t *out_len, char *err, size_t errlen)
{
    *out = NULL;
    *out_len = 0;
    if (zip_close(z->za) != 0) {
        int rc = fmt_fail(MT_FORMAT_FAILED, err, errlen, "%s: writing the archive: %s", z->what,
                          zip_strerror(z->za));
        zip_discard(z->za);
        z->za = NULL;
        return rc;
    }
    z->za = NULL;
    if (!z->ms.committed) { /* nothing changed: libzip wrote nothing */
        unsigned char *p = malloc((size_t)z->ms.in_len + 1);
        if (!p) return fmt_fail(MT_FORMAT_FAILED, err, errlen, "out of memory");
        memcpy(p, z->ms.in, (size_t)z->ms.in_len);
        *out = p;
        *out_len = (size_t)z->ms.in_len;
        return MT_FORMAT_OK;
    }
    if (!z->ms.out)
        return fmt_fail(MT_FORMAT_FAILED, err, errlen, "%s: empty archive written", z->what);
    *out = z->ms.out;
    *out_len = (size_t)z->ms.out_len;
    z->ms.out = NULL;
    return MT_FORMAT_OK;
}

void fmt_zip_free(fmt_zip *z)
{
    if (!z) return;
    if (z->za) zip_discard(z->za);
    for (long i = 0; i < z->n && z->names; i++) free(z->names[i]);
    free(z->names);
    free(z->ms.out);
    zip_error_fini(&z->ms.error);
    free(z);
}
