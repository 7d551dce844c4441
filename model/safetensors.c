/* safetensors.c: every size and offset in the header is checked against the file before
 * any tensor is touched, so a truncated or lying file is an error, never a wild read. */
#include "safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "status.h"

enum { MAX_HEADER_BYTES = 100 * 1024 * 1024 };

struct mt_safetensors {
    void *map;          /* owned mapping, or NULL when parsing borrowed memory */
    size_t map_len;
    json_t *header;     /* owns the name strings */
    mt_tensor_view *tensors;
    int count;
};

static int dtype_from_name(const char *s, int *dtype, int *size)
{
    if (!strcmp(s, "F32")) { *dtype = MT_DTYPE_F32; *size = 4; return 0; }
    if (!strcmp(s, "F16")) { *dtype = MT_DTYPE_F16; *size = 2; return 0; }
    if (!strcmp(s, "BF16")) { *dtype = MT_DTYPE_BF16; *size = 2; return 0; }
    if (!strcmp(s, "I8")) { *dtype = MT_DTYPE_I8; *size = 1; return 0; }
    return -1;
}

size_t mt_dtype_size(int dtype) { return dtype == MT_DTYPE_F32 ? 4 : dtype == MT_DTYPE_I8 ? 1 : 2; }

static int by_offset(const void *a, const void *b)
{
    const mt_tensor_view *x = a, *y = b;
    const char *px = x->data, *py = y->data;
    return (px > py) - (px < py);
}

/* Reads one header entry into t; returns 0 or writes what is wrong into err. */
static int parse_entry(const char *name, json_t *v, const unsigned char *data, uint64_t data_len,
                       mt_tensor_view *t, uint64_t *end_out, char *err, size_t errlen)
{
    if (!json_is_object(v))
        return mt_strfmt(err, errlen, "tensor '%s': entry is not a JSON object", name), -1;
    json_t *dt = json_object_get(v, "dtype"), *shape = json_object_get(v, "shape"),
           *off = json_object_get(v, "data_offsets");
    if (!json_is_string(dt))
        return mt_strfmt(err, errlen, "tensor '%s': missing or non-string \"dtype\"", name), -1;
    int size;
    if (dtype_from_name(json_string_value(dt), &t->dtype, &size))
        return mt_strfmt(err, errlen, "tensor '%s': unsupported dtype \"%s\" (expected F32, F16, BF16 or I8)",
                         name, json_string_value(dt)), -1;
    if (!json_is_array(shape) || json_array_size(shape) > 8)
        return mt_strfmt(err, errlen, "tensor '%s': \"shape\" must be an array of at most 8 integers", name), -1;
    t->ndim = (int)json_array_size(shape);
    uint64_t numel = 1;
    for (int i = 0; i < t->ndim; i++) {
        json_t *d = json_array_get(shape, (size_t)i);
        if (!json_is_integer(d) || json_integer_value(d) < 0 || json_integer_value(d) > (1LL << 40))
            return mt_strfmt(err, errlen, "tensor '%s': shape[%d] is not a valid dimension", name, i), -1;
        t->shape[i] = json_integer_value(d);
        /* Checked before multiplying: [2^32, 2^32, 4] would otherwise wrap to 0 elements
         * and match an empty data range. */
        uint64_t dim = (uint64_t)t->shape[i];
        if (dim && numel > (1ULL << 40) / dim)
            return mt_strfmt(err, errlen, "tensor '%s': shape has more than 2^40 elements", name), -1;
        numel *= dim;
    }
    if (!json_is_array(off) || json_array_size(off) != 2 || !json_is_integer(json_array_get(off, 0)) ||
        !json_is_integer(json_array_get(off, 1)))
        return mt_strfmt(err, errlen, "tensor '%s': \"data_offsets\" must be [begin, end]", name), -1;
    json_int_t b = json_integer_value(json_array_get(off, 0)), e = json_integer_value(json_array_get(off, 1));
    if (b < 0 || e < b)
        return mt_strfmt(err, errlen, "tensor '%s': data_offsets [%lld, %lld] are not an increasing pair",
                         name, (long long)b, (long long)e), -1;
    if ((uint64_t)e > data_len)
        return mt_strfmt(err, errlen,
                         "tensor '%s': data_offsets end %lld is past the data section (%llu bytes): file truncated?",
                         name, (long long)e, (unsigned long long)data_len), -1;
    if ((uint64_t)(e - b) != numel * (uint64_t)size)
        return mt_strfmt(err, errlen, "tensor '%s': data_offsets cover %lld bytes but shape x dtype needs %llu",
                         name, (long long)(e - b), (unsigned long long)(numel * (uint64_t)size)), -1;
    t->name = name;
    t->numel = (int64_t)numel;
    t->data = data + b;
    *end_out = (uint64_t)e;
    return 0;
}

mt_safetensors *mt_safetensors_parse(const void *bytes, size_t len, char *err, size_t errlen)
{
    const unsigned char *p = bytes;
    if (len < 8)
        return mt_strfmt(err, errlen, "file is %zu bytes, too short for the 8-byte header length", len), NULL;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | p[i];
    if (hlen > MAX_HEADER_BYTES || hlen > len - 8)
        return mt_strfmt(err, errlen, "header length %llu does not fit in the file (%zu bytes)",
                         (unsigned long long)hlen, len), NULL;
    json_error_t jerr;
    json_t *h = json_loadb((const char *)p + 8, (size_t)hlen, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (!h)
        return mt_strfmt(err, errlen, "header JSON: %s at line %d, column %d", jerr.text, jerr.line, jerr.column), NULL;
    if (!json_is_object(h)) {
        json_decref(h);
        return mt_strfmt(err, errlen, "header JSON is not an object"), NULL;
    }
    mt_safetensors *st = calloc(1, sizeof *st);
    if (!st) {
        json_decref(h);
        return mt_strfmt(err, errlen, "out of memory"), NULL;
    }
    st->header = h;
    size_t n = json_object_size(h);
    st->tensors = calloc(n ? n : 1, sizeof *st->tensors);
    if (!st->tensors) {
        mt_safetensors_close(st);
        return mt_strfmt(err, errlen, "out of memory"), NULL;
    }
    const unsigned char *data = p + 8 + hlen;
    uint64_t data_len = len - 8 - hlen;
    const char *name;
    json_t *v;
    json_object_foreach(h, name, v) {
        if (!strcmp(name, "__metadata__"))
            continue;
        uint64_t end;
        if (parse_entry(name, v, data, data_len, &st->tensors[st->count], &end, err, errlen)) {
            mt_safetensors_close(st);
            return NULL;
        }
        st->count++;
    }
    /* Overlapping tensors mean the header lies about the layout. */
    mt_tensor_view *sorted = malloc(sizeof *sorted * (size_t)(st->count ? st->count : 1));
    if (!sorted) {
        mt_safetensors_close(st);
        return mt_strfmt(err, errlen, "out of memory"), NULL;
    }
    memcpy(sorted, st->tensors, sizeof *sorted * (size_t)st->count);
    qsort(sorted, (size_t)st->count, sizeof *sorted, by_offset);
    for (int i = 1; i < st->count; i++) {
        const mt_tensor_view *a = &sorted[i - 1], *b = &sorted[i];
        size_t asize = mt_dtype_size(a->dtype);
        if ((const char *)a->data + (size_t)a->numel * asize > (const char *)b->data && a->numel && b->numel) {
            mt_strfmt(err, errlen, "tensors '%s' and '%s' overlap in the data section", a->name, b->name);
            free(sorted);
            mt_safetensors_close(st);
            return NULL;
        }
    }
    free(sorted);
    return st;
}

mt_safetensors *mt_safetensors_open(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return mt_strfmt(err, errlen, "%s: %s", path, strerror(errno)), NULL;
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return mt_strfmt(err, errlen, "%s: not a regular file", path), NULL;
    }
    size_t len = (size_t)sb.st_size;
    void *map = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    close(fd);
    if (len && map == MAP_FAILED)
        return mt_strfmt(err, errlen, "%s: mmap: %s", path, strerror(errno)), NULL;
    char inner[400];
    mt_safetensors *st = mt_safetensors_parse(len ? map : "", len, inner, sizeof inner);
    if (!st) {
        if (len)
            munmap(map, len);
        return mt_strfmt(err, errlen, "%s: %s", path, inner), NULL;
    }
    st->map = len ? map : NULL;
    st->map_len = len;
    return st;
}

void mt_safetensors_close(mt_safetensors *st)
{
    if (!st)
        return;
    if (st->map)
        munmap(st->map, st->map_len);
    json_decref(st->header);
    free(st->tensors);
    free(st);
}

int mt_safetensors_count(const mt_safetensors *st) { return st->count; }

const mt_tensor_view *mt_safetensors_at(const mt_safetensors *st, int i) { return &st->tensors[i]; }

const mt_tensor_view *mt_safetensors_find(const mt_safetensors *st, const char *name)
{
    for (int i = 0; i < st->count; i++)
        if (!strcmp(st->tensors[i].name, name))
            return &st->tensors[i];
    return NULL;
}

static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp) {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    } else if (man) { /* subnormal: normalise */
        int e = -1;
        do {
            e++;
            man <<= 1;
        } while (!(man & 0x400));
        bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ff) << 13);
    } else {
        bits = sign;
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

void mt_safetensors_release(const mt_safetensors *st, const mt_tensor_view *t)
{
    if (!st->map || !t->numel)
        return;
    uintptr_t lo = ((uintptr_t)t->data + 4095) & ~(uintptr_t)4095;
    uintptr_t hi = ((uintptr_t)t->data + (size_t)t->numel * mt_dtype_size(t->dtype)) & ~(uintptr_t)4095;
    if (hi > lo)
        madvise((void *)lo, hi - lo, MADV_DONTNEED); /* a later read maps the file's page again */
}

void mt_tensor_to_f32(const mt_tensor_view *t, float *dst)
{
    const unsigned char *src = t->data;
    if (t->dtype == MT_DTYPE_F32) { /* little-endian host: a plain (possibly unaligned) copy */
        memcpy(dst, src, sizeof(float) * (size_t)t->numel);
        return;
    }
    if (t->dtype == MT_DTYPE_I8) {
        for (int64_t i = 0; i < t->numel; i++)
            dst[i] = (float)((const int8_t *)t->data)[i];
        return;
    }
    for (int64_t i = 0; i < t->numel; i++) {
        if (t->dtype == MT_DTYPE_F32) {
            memcpy(&dst[i], src + 4 * i, 4);
        } else {
            uint16_t h = (uint16_t)(src[2 * i] | src[2 * i + 1] << 8);
            if (t->dtype == MT_DTYPE_F16) {
                dst[i] = half_to_float(h);
            } else {
                uint32_t bits = (uint32_t)h << 16;
                memcpy(&dst[i], &bits, 4);
            }
        }
    }
}
