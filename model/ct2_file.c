/* ct2_file.c: CTranslate2's model.bin, parsed in place and checked field by field
 * (ct2_file.h). Every read is bounds-checked against the buffer, so a truncated or
 * hostile file gives a message naming the offset and what was being read. */
#include "ct2_file.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"

enum { CT2_MAX_VERSION = 6, CT2_MAX_RANK = 4 };

typedef struct {
    char *name;
    int target; /* index into vars */
} ct2_alias;

struct mt_ct2_file {
    unsigned version, revision;
    char *spec;
    mt_ct2_var *vars;
    int n_vars;
    ct2_alias *aliases;
    int n_aliases;
};

typedef struct {
    const uint8_t *p;
    size_t len, at;
    char *err;
    size_t errlen;
} reader;

static int need(reader *r, size_t n, const char *what, const char *var)
{
    if (n <= r->len - r->at)
        return 0;
    if (var)
        return mt_error(MT_ERR_INVALID, r->err, r->errlen, "model.bin: truncated at byte %zu: %s of variable '%s' "
                        "needs %zu bytes, %zu remain", r->at, what, var, n, r->len - r->at);
    return mt_error(MT_ERR_INVALID, r->err, r->errlen, "model.bin: truncated at byte %zu: %s needs %zu bytes, "
                    "%zu remain", r->at, what, n, r->len - r->at);
}

static int u8(reader *r, const char *what, const char *var, unsigned *out)
{
    if (need(r, 1, what, var))
        return -1;
    *out = r->p[r->at++];
    return 0;
}

static int u16(reader *r, const char *what, const char *var, unsigned *out)
{
    if (need(r, 2, what, var))
        return -1;
    *out = (unsigned)r->p[r->at] | (unsigned)r->p[r->at + 1] << 8;
    r->at += 2;
    return 0;
}

static int u32(reader *r, const char *what, const char *var, uint32_t *out)
{
    if (need(r, 4, what, var))
        return -1;
    const uint8_t *b = r->p + r->at;
    *out = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    r->at += 4;
    return 0;
}

/* A length-prefixed string (the length counts a final NUL, which CTranslate2 drops
 * unread); a copy without the last byte, refused when it holds a NUL. */
static char *string(reader *r, const char *what, const char *var)
{
    unsigned n;
    size_t start = r->at;
    if (u16(r, what, var, &n))
        return NULL;
    if (n == 0) {
        mt_error(MT_ERR_INVALID, r->err, r->errlen, "model.bin: byte %zu: %s has length 0 (a string counts its "
                 "final NUL)", start, what);
        return NULL;
    }
    if (need(r, n, what, var))
        return NULL;
    const char *s = (const char *)r->p + r->at;
    if (memchr(s, 0, n - 1)) {
        mt_error(MT_ERR_INVALID, r->err, r->errlen, "model.bin: byte %zu: %s holds a NUL byte", start, what);
        return NULL;
    }
    char *out = malloc(n);
    if (!out) {
        mt_error(MT_ERR_NOMEM, r->err, r->errlen, "model.bin: out of memory");
        return NULL;
    }
    memcpy(out, s, n - 1);
    out[n - 1] = 0;
    r->at += n;
    return out;
}

const char *mt_ct2_type_name(int dtype)
{
    static const char *const names[] = {"float32", "int8", "int16", "int32", "float16", "bfloat16"};
    return dtype >= 0 && dtype < MT_CT2_NTYPES ? names[dtype] : "unknown";
}

size_t mt_ct2_type_size(int dtype)
{
    static const size_t sizes[] = {4, 1, 2, 4, 2, 2};
    return dtype >= 0 && dtype < MT_CT2_NTYPES ? sizes[dtype] : 0;
}

static int find_index(const mt_ct2_file *f, const char *name)
{
    for (int i = 0; i < f->n_vars; i++)
        if (!strcmp(f->vars[i].name, name))
            return i;
    for (int i = 0; i < f->n_aliases; i++)
        if (!strcmp(f->aliases[i].name, name))
            return f->aliases[i].target;
    return -1;
}

static int read_variable(reader *r, unsigned version, mt_ct2_var *v, int index)
{
    char what[48];
    mt_strfmt(what, sizeof what, "the name of variable %d", index);
    char *name = string(r, what, NULL);
    if (!name)
        return -1;
    v->name = name;
    unsigned rank, type;
    if (u8(r, "the rank", name, &rank))
        return -1;
    if (rank > CT2_MAX_RANK)
        return mt_error(MT_ERR_INVALID, r->err, r->errlen, "model.bin: byte %zu: variable '%s' has rank %u "
                        "(at most %d supported)", r->at - 1, name, rank, CT2_MAX_RANK);
    v->rank = (int)rank;
    uint64_t numel = 1;
    for (unsigned i = 0; i < rank; i++) {
        uint32_t dim;
        if (u32(r, "a dimension", name, &dim))
            return -1;
        v->shape[i] = dim;
        numel *= dim; /* 4 factors below 2^32: fits only if checked as we go */
        if (numel > (uint64_t)1 << 40)
            return mt_error(MT_ERR_INVALID, r->err, r->errlen, "model.bin: variable '%s' has more than 2^40 "
                            "elements", name);
    }
    v->numel = (int64_t)numel;
    uint32_t count;
    size_t type_at = r->at;
    if (u8(r, version >= 4 ? "the type id" : "the item size", name, &type))
        return -1;
    if (u32(r, version >= 4 ? "the byte count" : "the element count", name, &count))
        return -1;
    uint64_t bytes;
    if (version >= 4) {
        if (type >= MT_CT2_NTYPES)
            return mt_error(MT_ERR_INVALID, r->err, r->errlen, "model.bin: byte %zu: variable '%s' has unknown "
                            "type id %u (known: 0 float32, 1 int8, 2 int16, 3 int32, 4 float16, 5 bfloat16)",
                            type_at, name, type);
        v->dtype = (int)type;
        bytes = count;
    } else { /* before version 4 the type was guessed from its width, as CTranslate2 does */
        if (type != 4 && type != 2 && type != 1)
            return mt_error(MT_ERR_INVALID, r->err, r->errlen, "model.bin: byte %zu: variable '%s' has unknown "
                            "item size %u (known: 4 float32, 2 int16, 1 int8)", type_at, name, type);
        v->dtype = type == 4 ? MT_CT2_F32 : type == 2 ? MT_CT2_I16 : MT_CT2_I8;
        bytes = (uint64_t)count * type;
    }
    uint64_t want = numel * mt_ct2_type_size(v->dtype);
    if (bytes != want) {
        char dims[96] = "", *p = dims;
        for (int i = 0; i < v->rank; i++)
            p += snprintf(p, (size_t)(dims + sizeof dims - p), "%s%lld", i ? ", " : "", (long long)v->shape[i]);
        return mt_error(MT_ERR_INVALID, r->err, r->errlen, "model.bin: variable '%s' holds %llu bytes, but its "
                        "shape [%s] of %s needs %llu", name, (unsigned long long)bytes, dims,
                        mt_ct2_type_name(v->dtype), (unsigned long long)want);
    }
    if (need(r, (size_t)bytes, "the data", name))
        return -1;
    v->data = r->p + r->at;
    r->at += (size_t)bytes;
    return 0;
}

static int add_alias(mt_ct2_file *f, const char *name, int target, int *cap, char *err, size_t errlen)
{
    if (f->n_aliases == *cap) {
        int ncap = *cap ? *cap * 2 : 16;
        ct2_alias *na = realloc(f->aliases, sizeof *na * (size_t)ncap);
        if (!na)
            return mt_error(MT_ERR_NOMEM, err, errlen, "model.bin: out of memory");
        f->aliases = na;
        *cap = ncap;
    }
    char *copy = strdup(name);
    if (!copy)
        return mt_error(MT_ERR_NOMEM, err, errlen, "model.bin: out of memory");
    f->aliases[f->n_aliases++] = (ct2_alias){copy, target};
    return 0;
}

static int read_aliases(reader *r, mt_ct2_file *f)
{
    uint32_t n;
    if (u32(r, "the alias count", NULL, &n))
        return -1;
    if (n > (r->len - r->at) / 4) /* two strings of at least 2 bytes each */
        return mt_error(MT_ERR_INVALID, r->err, r->errlen, "model.bin: byte %zu: %u aliases cannot fit in the "
                        "%zu bytes left", r->at - 4, n, r->len - r->at);
    int cap = 0;
    for (uint32_t i = 0; i < n; i++) {
        char *alias = string(r, "an alias name", NULL);
        if (!alias)
            return -1;
        char *target = string(r, "an alias target", NULL);
        if (!target) {
            free(alias);
            return -1;
        }
        int t = find_index(f, target);
        int rc = 0;
        if (t < 0)
            rc = mt_error(MT_ERR_INVALID, r->err, r->errlen, "model.bin: alias '%s' names '%s', which is no "
                          "variable", alias, target);
        else if (find_index(f, alias) >= 0)
            rc = mt_error(MT_ERR_INVALID, r->err, r->errlen, "model.bin: alias '%s' is also a variable or an "
                          "earlier alias", alias);
        else
            rc = add_alias(f, alias, t, &cap, r->err, r->errlen);
        /* CTranslate2 also aliases the companions of a quantized variable */
        static const char *const companions[] = {"_scale", "_zero"};
        for (int c = 0; !rc && c < 2; c++) {
            char a[1024], v[1024];
            if (strlen(alias) + 8 > sizeof a || strlen(target) + 8 > sizeof v)
                break;
            int ct = find_index(f, mt_strfmt(v, sizeof v, "%s%s", target, companions[c]));
            mt_strfmt(a, sizeof a, "%s%s", alias, companions[c]);
            if (ct >= 0 && find_index(f, a) < 0)
                rc = add_alias(f, a, ct, &cap, r->err, r->errlen);
        }
        free(alias);
        free(target);
        if (rc)
            return -1;
    }
    return 0;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp((*(const mt_ct2_var *const *)a)->name, (*(const mt_ct2_var *const *)b)->name);
}

mt_ct2_file *mt_ct2_parse(const void *bytes, size_t len, char *err, size_t errlen)
{
    reader r = {.p = bytes, .len = len, .err = err, .errlen = errlen};
    mt_ct2_file *f = calloc(1, sizeof *f);
    if (!f)
        return mt_error(MT_ERR_NOMEM, err, errlen, "model.bin: out of memory"), NULL;
    uint32_t version, revision = 1, n;
    if (u32(&r, "the binary version", NULL, &version))
        goto fail;
    if (version < 1 || version > CT2_MAX_VERSION) {
        mt_error(MT_ERR_INVALID, err, errlen, "model.bin: binary version %u is not supported (1 to %d: "
                 "CTranslate2 up to 4.x)", version, CT2_MAX_VERSION);
        goto fail;
    }
    f->version = version;
    if (version >= 2) {
        if (!(f->spec = string(&r, "the spec name", NULL)) || u32(&r, "the spec revision", NULL, &revision))
            goto fail;
    } else if (!(f->spec = strdup(""))) {
        mt_error(MT_ERR_NOMEM, err, errlen, "model.bin: out of memory");
        goto fail;
    }
    f->revision = revision;
    if (u32(&r, "the variable count", NULL, &n))
        goto fail;
    /* a variable takes at least 2 (name) + 1 (rank) + 1 (type) + 4 (count) bytes */
    if (n > (len - r.at) / 8) {
        mt_error(MT_ERR_INVALID, err, errlen, "model.bin: byte %zu: %u variables cannot fit in the %zu bytes "
                 "left", r.at - 4, n, len - r.at);
        goto fail;
    }
    f->vars = calloc((size_t)n + 1, sizeof *f->vars);
    if (!f->vars) {
        mt_error(MT_ERR_NOMEM, err, errlen, "model.bin: out of memory");
        goto fail;
    }
    for (uint32_t i = 0; i < n; i++) {
        int rc = read_variable(&r, version, &f->vars[i], (int)i);
        if (f->vars[i].name)
            f->n_vars = (int)i + 1; /* so that free() sees its name */
        if (rc)
            goto fail;
    }
    if (n > 1) { /* duplicates, found by sorting a list of pointers */
        const mt_ct2_var **sorted = malloc(sizeof *sorted * n);
        if (!sorted) {
            mt_error(MT_ERR_NOMEM, err, errlen, "model.bin: out of memory");
            goto fail;
        }
        for (uint32_t i = 0; i < n; i++)
            sorted[i] = &f->vars[i];
        qsort(sorted, n, sizeof *sorted, cmp_name);
        const char *dup = NULL;
        for (uint32_t i = 1; i < n && !dup; i++)
            if (!strcmp(sorted[i - 1]->name, sorted[i]->name))
                dup = sorted[i]->name;
        free(sorted);
        if (dup) {
            mt_error(MT_ERR_INVALID, err, errlen, "model.bin: variable '%s' is stored twice", dup);
            goto fail;
        }
    }
    if (version >= 3 && read_aliases(&r, f))
        goto fail;
    if (r.at != len) {
        mt_error(MT_ERR_INVALID, err, errlen, "model.bin: %zu bytes after the end of the model (at byte %zu)",
                 len - r.at, r.at);
        goto fail;
    }
    return f;
fail:
    mt_ct2_free(f);
    return NULL;
}

void mt_ct2_free(mt_ct2_file *f)
{
    if (!f)
        return;
    for (int i = 0; i < f->n_vars; i++)
        free((char *)f->vars[i].name);
    for (int i = 0; i < f->n_aliases; i++)
        free(f->aliases[i].name);
    free(f->vars);
    free(f->aliases);
    free(f->spec);
    free(f);
}

unsigned mt_ct2_version(const mt_ct2_file *f) { return f->version; }
const char *mt_ct2_spec(const mt_ct2_file *f) { return f->spec; }
unsigned mt_ct2_revision(const mt_ct2_file *f) { return f->revision; }
int mt_ct2_count(const mt_ct2_file *f) { return f->n_vars; }
const mt_ct2_var *mt_ct2_at(const mt_ct2_file *f, int i) { return &f->vars[i]; }
int mt_ct2_index(const mt_ct2_file *f, const mt_ct2_var *v) { return (int)(v - f->vars); }

const mt_ct2_var *mt_ct2_find(const mt_ct2_file *f, const char *name)
{
    int i = find_index(f, name);
    return i >= 0 ? &f->vars[i] : NULL;
}

static float half_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 31, man = h & 1023;
    uint32_t bits;
    if (exp == 31) {
        bits = sign | 0x7f800000u | man << 13;
    } else if (exp) {
        bits = sign | (exp + 112) << 23 | man << 13;
    } else if (man) { /* subnormal: normalise */
        int e = -1;
        do {
            man <<= 1;
            e++;
        } while (!(man & 1024));
        bits = sign | (uint32_t)(112 - e) << 23 | (man & 1023) << 13;
    } else {
        bits = sign;
    }
    float out;
    memcpy(&out, &bits, 4);
    return out;
}

static double element(const mt_ct2_var *v, int64_t i)
{
    const uint8_t *p = (const uint8_t *)v->data + (size_t)i * mt_ct2_type_size(v->dtype);
    switch (v->dtype) {
    case MT_CT2_F32: {
        float x;
        memcpy(&x, p, 4);
        return x;
    }
    case MT_CT2_I8:
        return (int8_t)p[0];
    case MT_CT2_I16:
        return (int16_t)(p[0] | p[1] << 8);
    case MT_CT2_I32: {
        int32_t x;
        memcpy(&x, p, 4);
        return x;
    }
    case MT_CT2_F16:
        return half_to_f32((uint16_t)(p[0] | p[1] << 8));
    default: { /* bfloat16: the top half of a float32 */
        uint32_t bits = (uint32_t)(p[0] | p[1] << 8) << 16;
        float x;
        memcpy(&x, &bits, 4);
        return x;
    }
    }
}

int mt_ct2_scalar(const mt_ct2_var *v, double *out, char *err, size_t errlen)
{
    if (v->numel != 1)
        return mt_error(MT_ERR_INVALID, err, errlen, "model.bin: variable '%s' should be a scalar but has %lld "
                        "elements", v->name, (long long)v->numel);
    *out = element(v, 0);
    return 0;
}

void mt_ct2_to_f32(const mt_ct2_var *v, float *dst)
{
    if (v->dtype == MT_CT2_F32) {
        memcpy(dst, v->data, sizeof(float) * (size_t)v->numel);
        return;
    }
    for (int64_t i = 0; i < v->numel; i++)
        dst[i] = (float)element(v, i);
}
