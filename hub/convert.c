/* convert.c: pytorch_model.bin -> model.safetensors, and float -> stored int8, in C.
 *
 * The same contract as tools/convert_hf_bin.py and tools/quantize_model.py: tensors keep
 * their names, shapes and dtypes; Hugging Face's tied copies of the embedding (one matrix
 * under up to four names) are written once, under the name the engine reads first; keys
 * are checked against config.json's post-norm MarianMT layers before anything is written;
 * int8 is per output row, symmetric, scale = max|w| / 127 in float32, q = rint(w / scale)
 * clipped to +-127 (numpy's rule, so both converters write the same bytes). The output is
 * written under a temporary name and renamed. */
#include "hub.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hub_internal.h"
#include "status.h"
#include "torchzip.h"

static const char *TIED[] = {"model.shared.weight", "model.encoder.embed_tokens.weight",
                             "model.decoder.embed_tokens.weight", "lm_head.weight"};

typedef struct {
    const char *name;
    int dtype;
    int ndim;
    int64_t shape[8];
    int64_t numel;
    int src;            /* torch tensor index, or -1 */
    int64_t file_off;   /* safetensors input: absolute offset of the data */
    int quantize;       /* written as I8 + "<name>_scale" */
} entry;

static int by_name(const void *a, const void *b)
{
    return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

static float half_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 31, man = h & 1023, bits;
    if (exp == 0) {
        if (!man) {
            bits = sign;
        } else {
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while (!(man & 1024));
            bits = sign | (uint32_t)(127 - 15 - e) << 23 | (man & 1023) << 13;
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | man << 13;
    } else {
        bits = sign | (exp + 127 - 15) << 23 | man << 13;
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static void to_f32(int dtype, const void *src, float *dst, int64_t n)
{
    const uint16_t *h = src;
    for (int64_t k = 0; k < n; k++) {
        if (dtype == MH_F32) {
            memcpy(&dst[k], (const char *)src + 4 * k, 4);
        } else if (dtype == MH_F16) {
            dst[k] = half_to_f32(h[k]);
        } else {
            uint32_t bits = (uint32_t)h[k] << 16;
            memcpy(&dst[k], &bits, 4);
        }
    }
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* The names a post-norm MarianMT layer of this side has, checked like convert_hf_bin.py. */
static int layer_key_ok(const char *rest, int cross)
{
    static const char *lin[] = {"q_proj", "k_proj", "v_proj", "out_proj"};
    const char *blocks[] = {"self_attn", cross ? "encoder_attn" : NULL};
    char buf[128];
    for (int b = 0; b < 2 && blocks[b]; b++) {
        for (int p = 0; p < 4; p++)
            for (int w = 0; w < 2; w++)
                if (!strcmp(rest, mt_strfmt(buf, sizeof buf, "%s.%s.%s", blocks[b], lin[p], w ? "bias" : "weight")))
                    return 1;
        for (int w = 0; w < 2; w++)
            if (!strcmp(rest, mt_strfmt(buf, sizeof buf, "%s_layer_norm.%s", blocks[b], w ? "bias" : "weight")))
                return 1;
    }
    static const char *m[] = {"fc1", "fc2", "final_layer_norm"};
    for (int k = 0; k < 3; k++)
        for (int w = 0; w < 2; w++)
            if (!strcmp(rest, mt_strfmt(buf, sizeof buf, "%s.%s", m[k], w ? "bias" : "weight")))
                return 1;
    return 0;
}

static int layer_keys_per_layer(int cross) { return cross ? 26 : 16; }

/* Refuses names a post-norm MarianMT model with these layers does not have, and missing ones. */
static int check_keys(entry *e, int n, int enc_layers, int dec_layers, char *err, size_t errlen)
{
    int *seen = calloc((size_t)(enc_layers + dec_layers), sizeof *seen);
    if (!seen)
        return mt_error(MT_ERR_NOMEM, err, errlen, "out of memory");
    char bad[400] = "";
    int nbad = 0, has_embed = 0;
    for (int k = 0; k < n; k++) {
        const char *name = e[k].name;
        int ok = 0;
        for (int t = 0; t < 4; t++)
            if (!strcmp(name, TIED[t])) {
                ok = 1;
                has_embed |= t < 2;
            }
        if (!strcmp(name, "final_logits_bias") || !strcmp(name, "model.encoder.embed_positions.weight") ||
            !strcmp(name, "model.decoder.embed_positions.weight"))
            ok = 1;
        for (int side = 0; side < 2 && !ok; side++) {
            const char *pre = side ? "model.decoder.layers." : "model.encoder.layers.";
            size_t pl = strlen(pre);
            if (strncmp(name, pre, pl))
                continue;
            char *end;
            long layer = strtol(name + pl, &end, 10);
            int max = side ? dec_layers : enc_layers;
            if (end != name + pl && *end == '.' && layer >= 0 && layer < max && layer_key_ok(end + 1, side)) {
                ok = 1;
                seen[(side ? enc_layers : 0) + layer]++;
            }
        }
        if (!ok && nbad++ < 6) {
            size_t l = strlen(bad);
            snprintf(bad + l, sizeof bad - l, "%s%s", l ? ", " : "", name);
        }
    }
    int missing = -1;
    for (int k = 0; k < enc_layers + dec_layers; k++)
        if (seen[k] != layer_keys_per_layer(k >= enc_layers))
            missing = k;
    free(seen);
    if (nbad)
        return mt_error(MT_ERR_INVALID, err, errlen,
                        "%d key(s) that a post-norm MarianMT model with %d+%d layers does not have: %s%s",
                        nbad, enc_layers, dec_layers, bad, nbad > 6 ? " ..." : "");
    if (missing >= 0)
        return mt_error(MT_ERR_INVALID, err, errlen, "%s layer %d lacks some of its parameters",
                        missing >= enc_layers ? "decoder" : "encoder",
                        missing >= enc_layers ? missing - enc_layers : missing);
    if (!has_embed)
        return mt_error(MT_ERR_INVALID, err, errlen, "no model.shared.weight nor model.encoder.embed_tokens.weight");
    return 0;
}

static int should_quantize(const entry *e)
{
    return e->ndim == 2 && ends_with(e->name, ".weight") && !strstr(e->name, "embed_positions") &&
           (e->dtype == MH_F32 || e->dtype == MH_F16 || e->dtype == MH_BF16);
}

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

typedef struct {
    mh_torch *torch;
    int fd;             /* safetensors input, or -1 */
} source;

static int read_entry(source *s, const entry *e, void *buf, char *err, size_t errlen)
{
    if (s->torch)
        return mh_torch_read(s->torch, e->src, buf, err, errlen);
    size_t len = (size_t)e->numel * mh_dtype_size(e->dtype), got = 0;
    while (got < len) {
        ssize_t r = pread(s->fd, (char *)buf + got, len - got, e->file_off + (off_t)got);
        if (r <= 0)
            return mt_error(MT_ERR_INVALID, err, errlen, "cannot read tensor '%s' from model.safetensors", e->name);
        got += (size_t)r;
    }
    return 0;
}

/* Writes the entries (sorted by name) as a safetensors file at path. */
static int write_safetensors(const char *path, entry *e, int n, source *src, int int8, char *err, size_t errlen)
{
    json_t *h = json_object();
    json_object_set_new(h, "__metadata__", json_pack("{s:s}", "format", "pt"));
    int64_t off = 0;
    char sname[400];
    for (int k = 0; k < n; k++) {
        e[k].quantize = int8 && should_quantize(&e[k]);
        json_t *shape = json_array();
        for (int d = 0; d < e[k].ndim; d++)
            json_array_append_new(shape, json_integer(e[k].shape[d]));
        int64_t bytes = e[k].numel * (int64_t)(e[k].quantize ? 1 : mh_dtype_size(e[k].dtype));
        json_object_set_new(h, e[k].name, json_pack("{s:s,s:o,s:[I,I]}", "dtype",
                            e[k].quantize ? "I8" : mh_dtype_name(e[k].dtype), "shape", shape,
                            "data_offsets", (json_int_t)off, (json_int_t)(off + bytes)));
        off += bytes;
        if (e[k].quantize) {
            json_object_set_new(h, mt_strfmt(sname, sizeof sname, "%s_scale", e[k].name),
                                json_pack("{s:s,s:[I],s:[I,I]}", "dtype", "F32", "shape", (json_int_t)e[k].shape[0],
                                          "data_offsets", (json_int_t)off, (json_int_t)(off + 4 * e[k].shape[0])));
            off += 4 * e[k].shape[0];
        }
    }
    char *js = json_dumps(h, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(h);
    if (!js)
        return mt_error(MT_ERR_NOMEM, err, errlen, "out of memory");
    size_t jl = strlen(js), padded = (jl + 7) / 8 * 8;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        free(js);
        return mt_error(MT_ERR_INVALID, err, errlen, "cannot create %s: %s", path, strerror(errno));
    }
    unsigned char len8[8];
    for (int b = 0; b < 8; b++)
        len8[b] = (unsigned char)((uint64_t)padded >> (8 * b));
    int rc = write_all(fd, len8, 8) || write_all(fd, js, jl) || write_all(fd, "        ", padded - jl) ? -1 : 0;
    free(js);
    void *buf = NULL;
    float *f = NULL;
    for (int k = 0; k < n && !rc; k++) {
        size_t bytes = (size_t)e[k].numel * mh_dtype_size(e[k].dtype);
        free(buf);
        if (!(buf = malloc(bytes ? bytes : 1))) {
            rc = mt_error(MT_ERR_NOMEM, err, errlen, "out of memory for tensor '%s'", e[k].name);
            break;
        }
        if (read_entry(src, &e[k], buf, err, errlen)) {
            rc = MT_ERR_INVALID;
            break;
        }
        if (!e[k].quantize) {
            if (write_all(fd, buf, bytes))
                rc = -1;
            continue;
        }
        int64_t rows = e[k].shape[0], cols = e[k].shape[1];
        free(f);
        if (!(f = malloc((size_t)(e[k].numel ? e[k].numel : 1) * 4))) {
            rc = mt_error(MT_ERR_NOMEM, err, errlen, "out of memory for tensor '%s'", e[k].name);
            break;
        }
        to_f32(e[k].dtype, buf, f, e[k].numel);
        signed char *q = buf; /* the int8 bytes fit where the wider input was */
        float *scale = malloc((size_t)(rows ? rows : 1) * 4);
        if (!scale) {
            rc = mt_error(MT_ERR_NOMEM, err, errlen, "out of memory");
            break;
        }
        for (int64_t r = 0; r < rows; r++) {
            float amax = 0;
            for (int64_t c = 0; c < cols; c++)
                amax = fmaxf(amax, fabsf(f[r * cols + c]));
            scale[r] = amax > 0 ? amax / 127.0f : 1.0f;
            for (int64_t c = 0; c < cols; c++) {
                float v = rintf(f[r * cols + c] / scale[r]);
                q[r * cols + c] = (signed char)(v > 127 ? 127 : v < -127 ? -127 : v);
            }
        }
        if (write_all(fd, q, (size_t)(rows * cols)) || write_all(fd, scale, (size_t)rows * 4))
            rc = -1;
        free(scale);
    }
    free(buf);
    free(f);
    if (rc == -1)
        rc = mt_error(MT_ERR_INVALID, err, errlen, "cannot write %s: %s%s", path, strerror(errno),
                      errno == ENOSPC || errno == EFBIG || errno == EDQUOT ? " (disk full)" : "");
    if (close(fd) && !rc)
        rc = mt_error(MT_ERR_INVALID, err, errlen, "cannot write %s: %s", path, strerror(errno));
    if (rc)
        unlink(path);
    return rc;
}

/* Entries of a safetensors file (own small reader: model/'s is the engine's, internal). */
static int read_st_header(int fd, json_t **hdr, entry **out, int *n, char *err, size_t errlen)
{
    unsigned char len8[8];
    struct stat sb;
    if (fstat(fd, &sb) || pread(fd, len8, 8, 0) != 8)
        return mt_error(MT_ERR_INVALID, err, errlen, "model.safetensors: too short");
    uint64_t hl = 0;
    for (int b = 7; b >= 0; b--)
        hl = hl << 8 | len8[b];
    if (hl > 100u << 20 || 8 + hl > (uint64_t)sb.st_size)
        return mt_error(MT_ERR_INVALID, err, errlen, "model.safetensors: bad header length");
    char *js = malloc(hl + 1);
    if (!js || pread(fd, js, hl, 8) != (ssize_t)hl) {
        free(js);
        return mt_error(MT_ERR_INVALID, err, errlen, "model.safetensors: cannot read its header");
    }
    json_error_t je;
    *hdr = json_loadb(js, hl, 0, &je);
    free(js);
    if (!json_is_object(*hdr))
        return mt_error(MT_ERR_INVALID, err, errlen, "model.safetensors: header is not a JSON object");
    *out = calloc(json_object_size(*hdr) + 1, sizeof **out);
    if (!*out)
        return mt_error(MT_ERR_NOMEM, err, errlen, "out of memory");
    const char *name;
    json_t *v;
    *n = 0;
    json_object_foreach(*hdr, name, v) {
        if (!strcmp(name, "__metadata__"))
            continue;
        entry *e = &(*out)[(*n)++];
        const char *dt = json_string_value(json_object_get(v, "dtype"));
        json_t *shape = json_object_get(v, "shape"), *offs = json_object_get(v, "data_offsets");
        e->name = name;
        e->src = -1;
        e->dtype = -1;
        for (int d = 0; d < MH_NDTYPES; d++)
            if (dt && !strcmp(dt, mh_dtype_name(d)))
                e->dtype = d;
        if (e->dtype < 0 || !json_is_array(shape) || json_array_size(shape) > 8 || !json_is_array(offs) ||
            json_array_size(offs) != 2)
            return mt_error(MT_ERR_INVALID, err, errlen, "model.safetensors: bad entry '%s'", name);
        e->ndim = (int)json_array_size(shape);
        e->numel = 1;
        for (int d = 0; d < e->ndim; d++) {
            e->shape[d] = json_integer_value(json_array_get(shape, (size_t)d));
            if (e->shape[d] < 0 || e->shape[d] > (1LL << 40) || (e->shape[d] && e->numel > (1LL << 40) / e->shape[d]))
                return mt_error(MT_ERR_INVALID, err, errlen, "model.safetensors: bad shape of '%s'", name);
            e->numel *= e->shape[d];
        }
        json_int_t b = json_integer_value(json_array_get(offs, 0)), en = json_integer_value(json_array_get(offs, 1));
        if (b < 0 || en - b != e->numel * (int64_t)mh_dtype_size(e->dtype) ||
            8 + (int64_t)hl + en > (int64_t)sb.st_size)
            return mt_error(MT_ERR_INVALID, err, errlen, "model.safetensors: bad data_offsets of '%s'", name);
        e->file_off = 8 + (int64_t)hl + b;
    }
    return 0;
}

int mh_convert_dir(const char *dir, int int8, FILE *log, char *err, size_t errlen)
{
    char path[4096], out[4096], bin[4096];
    json_error_t je;
    json_t *cfg = json_load_file(mt_strfmt(path, sizeof path, "%s/config.json", dir), 0, &je);
    if (!cfg)
        return mt_error(MT_ERR_INVALID, err, errlen, "cannot read %s: %s", path, je.text);
    int rc = mh_check_marian_config(cfg, err, errlen);
    int enc = (int)json_integer_value(json_object_get(cfg, "encoder_layers"));
    int dec = (int)json_integer_value(json_object_get(cfg, "decoder_layers"));
    json_decref(cfg);
    if (rc)
        return rc;
    if (enc < 1 || dec < 1 || enc > 1000 || dec > 1000)
        return mt_error(MT_ERR_INVALID, err, errlen, "config.json: encoder_layers/decoder_layers missing or not positive");
    mt_strfmt(bin, sizeof bin, "%s/pytorch_model.bin", dir);
    mt_strfmt(out, sizeof out, "%s/model.safetensors", dir);
    int from_bin = access(bin, F_OK) == 0;
    if (!from_bin && !int8)
        return 0;
    source src = {.fd = -1};
    entry *e = NULL;
    json_t *hdr = NULL;
    int n = 0;
    if (from_bin) {
        if (!(src.torch = mh_torch_open(bin, err, errlen)))
            return MT_ERR_INVALID;
        n = mh_torch_count(src.torch);
        e = calloc((size_t)n + 1, sizeof *e);
        if (!e) {
            rc = mt_error(MT_ERR_NOMEM, err, errlen, "out of memory");
            goto done;
        }
        int kept = 0;
        for (int k = 0; k < n; k++) {
            const mh_torch_tensor *t = mh_torch_at(src.torch, k);
            /* A later tied name of the same memory is an alias the engine ties itself. */
            int alias = 0;
            for (int a = 0; a < 4 && !alias; a++)
                if (!strcmp(t->name, TIED[a]))
                    for (int j = 0; j < n && !alias; j++) {
                        const mh_torch_tensor *o = mh_torch_at(src.torch, j);
                        for (int b = 0; b < a; b++)
                            if (j != k && !strcmp(o->name, TIED[b]) && o->storage == t->storage &&
                                o->offset == t->offset && o->dtype == t->dtype && o->ndim == t->ndim &&
                                !memcmp(o->shape, t->shape, sizeof t->shape) &&
                                !memcmp(o->stride, t->stride, sizeof t->stride))
                                alias = 1;
                    }
            if (alias) {
                if (log)
                    fprintf(log, "tied copy left out: %s\n", t->name);
                continue;
            }
            if (t->dtype != MH_F32 && t->dtype != MH_F16 && t->dtype != MH_BF16) {
                rc = mt_error(MT_ERR_INVALID, err, errlen, "tensor '%s' is %s; float32/float16/bfloat16 expected",
                              t->name, mh_dtype_name(t->dtype));
                goto done;
            }
            entry *x = &e[kept++];
            x->name = t->name;
            x->dtype = t->dtype;
            x->ndim = t->ndim;
            memcpy(x->shape, t->shape, sizeof x->shape);
            x->numel = 1;
            for (int d = 0; d < t->ndim; d++)
                x->numel *= t->shape[d];
            x->src = k;
        }
        n = kept;
        if ((rc = check_keys(e, n, enc, dec, err, errlen)))
            goto done;
    } else {
        if ((src.fd = open(out, O_RDONLY)) < 0) {
            rc = mt_error(MT_ERR_INVALID, err, errlen, "cannot open %s: %s", out, strerror(errno));
            goto done;
        }
        if ((rc = read_st_header(src.fd, &hdr, &e, &n, err, errlen)))
            goto done;
        for (int k = 0; k < n; k++)
            if (e[k].dtype == MH_I8 || ends_with(e[k].name, "_scale")) {
                if (log)
                    fprintf(log, "%s is already stored as int8\n", out);
                goto done;
            }
    }
    qsort(e, (size_t)n, sizeof *e, by_name);
    char tmp[4200];
    mt_strfmt(tmp, sizeof tmp, "%s.tmp", out);
    if ((rc = write_safetensors(tmp, e, n, &src, int8, err, errlen)))
        goto done;
    if (rename(tmp, out)) {
        rc = mt_error(MT_ERR_INVALID, err, errlen, "cannot rename %s: %s", tmp, strerror(errno));
        unlink(tmp);
        goto done;
    }
    if (from_bin)
        unlink(bin);
    if (log)
        fprintf(log, "wrote %s (%d tensors%s)\n", out, n, int8 ? ", int8 matrices" : "");
done:
    if (src.torch)
        mh_torch_close(src.torch);
    if (src.fd >= 0)
        close(src.fd);
    free(e);
    json_decref(hdr);
    return rc;
}
