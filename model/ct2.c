/* ct2.c: loads a CTranslate2 model directory (model.bin, and config.json and the
 * vocabularies that ct2_dir.c reads) into the same read-only float32 arena and layer tables
 * model.c builds from a MarianMT directory, so everything after the load (compute types,
 * packing, search) is shared.
 *
 * What is accepted: CTranslate2's TransformerSpec, post-norm as CTranslate2's Marian
 * converter (and ours, ../shared/peers/ctranslate2/hf_to_ct2.py) writes it, or pre-norm
 * with its final layer norms (OpenNMT's, which argos-translate packages carry), with or
 * without eos at the end of the source; every other option (relative positions, ALiBi,
 * multi-query attention, factors, a layer norm after the embeddings, ...) is refused by the
 * variable or flag that shows it.
 *
 * The mapping: self_attention/linear_0 is our fused q,k,v (3d, d) and linear_1 its output;
 * attention/linear_0 the cross-attention query, linear_1 the fused k,v (2d, d) that goes
 * into the all-layers cross k,v matrix, linear_2 its output; ffn/linear_0 and linear_1 are
 * fc1 and fc2. int8 variables are held as q / scale[row] (CTranslate2 stores scale =
 * 127 / amax per row), which the int8 packing finds again; int16 likewise with its one
 * scale. CTranslate2's Marian models start decoding from a zero vector instead of the
 * start token's embedding: the target side gets one more row, all zeros, that is the
 * start token and pad here (masked, so never produced, and given a logit bias of -inf
 * so that it takes no probability mass from the real vocabulary). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ct2.h"
#include "ct2_dir.h"
#include "ct2_file.h"
#include "internal.h"
#include "packed.h"

/* ---- model.bin ---- */

typedef struct {
    const mt_ct2_file *f;
    const char *map;    /* model.bin's mapping (NULL: parsed memory), map_len bytes */
    size_t map_len;
    char *used;         /* per variable: consumed */
    int stored_int8;
    char *err;
    size_t errlen;
} ct2_loader;

static const mt_ct2_var *get(ct2_loader *L, const char *name)
{
    const mt_ct2_var *v = mt_ct2_find(L->f, name);
    if (v)
        L->used[mt_ct2_index(L->f, v)] = 1;
    return v;
}

/* A flag or number; def when absent. */
static int scalar(ct2_loader *L, const char *name, double def, double *out)
{
    const mt_ct2_var *v = get(L, name);
    if (!v) {
        *out = def;
        return 0;
    }
    return mt_ct2_scalar(v, out, L->err, L->errlen);
}

static int shape_error(ct2_loader *L, const mt_ct2_var *v, int64_t rows, int64_t cols)
{
    char got[96] = "", *p = got;
    for (int i = 0; i < v->rank; i++)
        p += snprintf(p, (size_t)(got + sizeof got - p), "%s%lld", i ? ", " : "", (long long)v->shape[i]);
    if (cols)
        return mt_error(MT_ERR_INVALID, L->err, L->errlen, "model.bin: variable '%s' has shape [%s], the model's "
                        "dimensions imply [%lld, %lld]", v->name, got, (long long)rows, (long long)cols);
    return mt_error(MT_ERR_INVALID, L->err, L->errlen, "model.bin: variable '%s' has shape [%s], the model's "
                    "dimensions imply [%lld]", v->name, got, (long long)rows);
}

/* Hands v's whole pages back to the page cache once copied, so that loading peaks at one
 * copy of the weights, not two (a later read of v faults them in again). */
static void release(const ct2_loader *L, const mt_ct2_var *v)
{
    if (!L->map)
        return;
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t base = (uintptr_t)L->map, a = (uintptr_t)v->data, b = a + (size_t)v->numel * mt_ct2_type_size(v->dtype);
    a = (a + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
    b &= ~((uintptr_t)page - 1);
    if (a >= base && b <= base + L->map_len && b > a)
        madvise((void *)a, b - a, MADV_DONTNEED);
}

/* Copies variable `name` of shape (rows, cols) (cols 0: a vector) into dst as float32,
 * dequantized. optional: a missing variable gives zeros (biases). */
static int put(ct2_loader *L, const char *name, int64_t rows, int64_t cols, float *dst, int optional)
{
    const mt_ct2_var *v = get(L, name);
    if (!v) {
        if (optional) {
            memset(dst, 0, sizeof(float) * (size_t)(rows * (cols ? cols : 1)));
            return 0;
        }
        return mt_error(MT_ERR_INVALID, L->err, L->errlen, "model.bin: missing variable '%s'", name);
    }
    if (cols ? v->rank != 2 || v->shape[0] != rows || v->shape[1] != cols : v->rank != 1 || v->shape[0] != rows)
        return shape_error(L, v, rows, cols);
    if (v->dtype == MT_CT2_I32)
        return mt_error(MT_ERR_INVALID, L->err, L->errlen, "model.bin: variable '%s' is int32, not a weight type",
                        name);
    mt_ct2_to_f32(v, dst);
    release(L, v);
    if (v->dtype != MT_CT2_I8 && v->dtype != MT_CT2_I16)
        return 0;
    char sname[300];
    const mt_ct2_var *s = get(L, mt_strfmt(sname, sizeof sname, "%s_scale", name));
    int64_t n = cols ? rows : 1;
    if (!s)
        return mt_error(MT_ERR_INVALID, L->err, L->errlen, "model.bin: %s variable '%s' has no '%s'",
                        mt_ct2_type_name(v->dtype), name, sname);
    if (s->dtype == MT_CT2_I8 || s->dtype == MT_CT2_I16 || s->dtype == MT_CT2_I32 ||
        (s->numel != n && s->numel != 1))
        return mt_error(MT_ERR_INVALID, L->err, L->errlen, "model.bin: '%s' must be a float vector of %lld (or "
                        "one) scales", sname, (long long)n);
    float *scale = malloc(sizeof(float) * (size_t)s->numel);
    if (!scale)
        return mt_error(MT_ERR_NOMEM, L->err, L->errlen, "out of memory");
    mt_ct2_to_f32(s, scale);
    int64_t row_len = cols ? cols : rows;
    for (int64_t r = 0; r < n; r++) {
        float sc = scale[s->numel == 1 ? 0 : r];
        if (!isfinite(sc) || sc <= 0.0f) {
            free(scale);
            return mt_error(MT_ERR_INVALID, L->err, L->errlen, "model.bin: scale %lld of '%s' is %g, not a "
                            "finite positive number", (long long)r, name, (double)sc);
        }
        for (int64_t c = 0; c < row_len; c++)
            dst[r * row_len + c] /= sc;
    }
    free(scale);
    if (v->dtype == MT_CT2_I8)
        L->stored_int8 = 1;
    return 0;
}

static float *take(float **at, size_t floats)
{
    float *p = *at;
    *at += (floats + 15) & ~(size_t)15; /* every matrix 64-byte aligned */
    return p;
}

static int put_linear(ct2_loader *L, float **at, const char *scope, int64_t out, int64_t in, mt_linear_w *lin)
{
    char name[256];
    float *w = take(at, (size_t)(out * in)), *b = take(at, (size_t)out);
    if (put(L, mt_strfmt(name, sizeof name, "%s/weight", scope), out, in, w, 0) ||
        put(L, mt_strfmt(name, sizeof name, "%s/bias", scope), out, 0, b, 1))
        return -1;
    lin->w = w;
    lin->b = b;
    return 0;
}

static int put_norm(ct2_loader *L, float **at, const char *scope, int64_t d, mt_norm *n)
{
    char name[256];
    float *g = take(at, (size_t)d), *b = take(at, (size_t)d);
    if (put(L, mt_strfmt(name, sizeof name, "%s/gamma", scope), d, 0, g, 0) ||
        put(L, mt_strfmt(name, sizeof name, "%s/beta", scope), d, 0, b, 0))
        return -1;
    n->weight = g;
    n->bias = b;
    return 0;
}

/* A layer's self-attention (the fused qkv projection, the output one, the norm) and its
 * feed-forward block, named as CTranslate2 names them under the layer's scope; both the
 * encoder's and the decoder's layers have them. */
static int put_self_attention(ct2_loader *L, float **at, const char *layer, int64_t d, mt_linear_w *qkv,
                              mt_linear_w *out, mt_norm *norm)
{
    char n[256];
    if (put_linear(L, at, mt_strfmt(n, sizeof n, "%s/self_attention/linear_0", layer), 3 * d, d, qkv) ||
        put_linear(L, at, mt_strfmt(n, sizeof n, "%s/self_attention/linear_1", layer), d, d, out) ||
        put_norm(L, at, mt_strfmt(n, sizeof n, "%s/self_attention/layer_norm", layer), d, norm))
        return -1;
    return 0;
}

static int put_ffn(ct2_loader *L, float **at, const char *layer, int64_t d, int64_t ffn_dim, mt_linear_w *fc1,
                   mt_linear_w *fc2, mt_norm *norm)
{
    char n[256];
    if (put_linear(L, at, mt_strfmt(n, sizeof n, "%s/ffn/linear_0", layer), ffn_dim, d, fc1) ||
        put_linear(L, at, mt_strfmt(n, sizeof n, "%s/ffn/linear_1", layer), d, ffn_dim, fc2) ||
        put_norm(L, at, mt_strfmt(n, sizeof n, "%s/ffn/layer_norm", layer), d, norm))
        return -1;
    return 0;
}

/* Floats the arena needs, padded as take() pads. */
static size_t arena_floats(const mt_model_info *in, int own_enc, int own_lm_head, int pre_norm)
{
    size_t d = (size_t)in->d_model, total = 0;
#define T(n) (total += ((size_t)(n) + 15) & ~(size_t)15)
    if (pre_norm)
        T(d), T(d), T(d), T(d);
    if (own_enc)
        T((size_t)in->src_vocab_size * d);
    T((size_t)in->tgt_vocab_size * d);
    if (own_lm_head)
        T((size_t)in->tgt_vocab_size * d);
    T(in->tgt_vocab_size);
    T((size_t)in->max_positions * d);
    T((size_t)in->decoder_layers * 2 * d * d);
    T((size_t)in->decoder_layers * 2 * d);
    for (int l = 0; l < in->encoder_layers; l++) {
        T(3 * d * d), T(3 * d), T(d * d), T(d), T(d), T(d);
        T((size_t)in->encoder_ffn_dim * d), T(in->encoder_ffn_dim), T(d * (size_t)in->encoder_ffn_dim), T(d);
        T(d), T(d);
    }
    for (int l = 0; l < in->decoder_layers; l++) {
        T(3 * d * d), T(3 * d), T(d * d), T(d), T(d), T(d);
        T(d * d), T(d), T(d * d), T(d), T(d), T(d);
        T((size_t)in->decoder_ffn_dim * d), T(in->decoder_ffn_dim), T(d * (size_t)in->decoder_ffn_dim), T(d);
        T(d), T(d);
    }
#undef T
    return total;
}

/* Number of layers: the first index n with no "<side>/layer_<n>/ffn/linear_0/weight". */
static int count_layers(const mt_ct2_file *f, const char *side)
{
    char name[128];
    int n = 0;
    while (n < 4096 && mt_ct2_find(f, mt_strfmt(name, sizeof name, "%s/layer_%d/ffn/linear_0/weight", side, n)))
        n++;
    return n;
}

/* The options of the spec that this engine runs one way only, checked; the
 * hyperparameters read from the shapes. */
static int read_spec(mt_model *m, ct2_loader *L, int *zero_start)
{
    mt_model_info *in = &m->info;
    const mt_ct2_file *f = L->f;
    const char *spec = mt_ct2_spec(f);
    int legacy_heads = !strcmp(spec, "TransformerBase") ? 8 : !strcmp(spec, "TransformerBig") ? 16 : 0;
    if (mt_ct2_version(f) >= 2 && strcmp(spec, "TransformerSpec") && !legacy_heads)
        return mt_error(MT_ERR_INVALID, L->err, L->errlen, "model.bin: spec '%s' is not supported (a "
                        "TransformerSpec encoder-decoder is)", spec);
    double v, heads_e, heads_d, top_heads;
    if (scalar(L, "num_heads", legacy_heads, &top_heads) ||
        scalar(L, "encoder/num_heads", top_heads, &heads_e) || scalar(L, "decoder/num_heads", top_heads, &heads_d))
        return -1;
    if (heads_e < 1 || heads_d < 1 || heads_e > 4096 || heads_d > 4096)
        return mt_error(MT_ERR_INVALID, L->err, L->errlen, "model.bin: num_heads missing or out of range "
                        "(encoder %g, decoder %g)", heads_e, heads_d);
    /* CTranslate2's default is pre-norm: a file that does not say otherwise is one */
    static const char *const sides[2] = {"encoder", "decoder"};
    int act[2];
    double scale[2];
    char name[128];
    double pre[2];
    for (int s = 0; s < 2; s++) {
        if (scalar(L, mt_strfmt(name, sizeof name, "%s/pre_norm", sides[s]), 1, &pre[s]))
            return -1;
        if (scalar(L, mt_strfmt(name, sizeof name, "%s/activation", sides[s]), 0, &v))
            return -1;
        act[s] = (int)v;
        static const char *const flags[] = {"alibi", "alibi_use_positive_positions", "scale_alibi",
                                            "multi_query_attention", "rms_norm", "parallel_residual",
                                            "shared_layer_norm", "ffn_glu"};
        for (size_t i = 0; i < sizeof flags / sizeof *flags; i++) {
            if (scalar(L, mt_strfmt(name, sizeof name, "%s/%s", sides[s], flags[i]), 0, &v))
                return -1;
            if (v != 0)
                return mt_error(MT_ERR_INVALID, L->err, L->errlen, "model.bin: %s is set: not supported", name);
        }
        const mt_ct2_var *sc = get(L, mt_strfmt(name, sizeof name, "%s/scale_embeddings", sides[s]));
        if (!sc)
            sc = get(L, mt_strfmt(name, sizeof name, "%s/embeddings/multiply_by_sqrt_depth", sides[s]));
        if (!sc) {
            scale[s] = -1; /* sqrt(d), CTranslate2's default */
        } else {
            if (mt_ct2_scalar(sc, &v, L->err, L->errlen))
                return -1;
            scale[s] = sc->dtype == MT_CT2_I8 ? (v ? -1 : 1) : v;
        }
    }
    if ((pre[0] != 0) != (pre[1] != 0))
        return mt_error(MT_ERR_INVALID, L->err, L->errlen, "model.bin: the encoder is %s-norm, the decoder %s-norm: "
                        "supported are both one or the other", pre[0] ? "pre" : "post", pre[1] ? "pre" : "post");
    m->pre_norm = pre[0] != 0; /* CTranslate2's default when no flag says otherwise */
    /* ignored: they only steer CTranslate2's alignment output and factor merging */
    get(L, "decoder/alignment_layer");
    get(L, "decoder/alignment_heads");
    get(L, "encoder/embeddings_merge");
    if (scalar(L, "decoder/start_from_zero_embedding", 0, &v))
        return -1;
    *zero_start = v != 0;
    if (act[0] != act[1])
        return mt_error(MT_ERR_INVALID, L->err, L->errlen, "model.bin: the encoder's activation (%d) differs from "
                        "the decoder's (%d)", act[0], act[1]);
    static const int acts[] = {MT_ACT_RELU, MT_ACT_GELU_TANH, MT_ACT_SWISH, MT_ACT_GELU};
    static const char *const act_names[] = {"relu", "gelu_new", "swish", "gelu"};
    if (act[0] < 0 || act[0] > 3)
        return mt_error(MT_ERR_INVALID, L->err, L->errlen, "model.bin: activation %d is not supported (0 relu, "
                        "1 gelu tanh, 2 swish, 3 gelu)", act[0]);
    m->activation = acts[act[0]];
    snprintf(in->activation, sizeof in->activation, "%s", act_names[act[0]]);

    const mt_ct2_var *ee = get(L, "encoder/embeddings_0/weight");
    if (!ee)
        ee = get(L, "encoder/embeddings/weight");
    if (get(L, "encoder/embeddings_1/weight"))
        return mt_error(MT_ERR_INVALID, L->err, L->errlen, "model.bin: source factors (encoder/embeddings_1) are "
                        "not supported");
    const mt_ct2_var *de = get(L, "decoder/embeddings/weight");
    if (!ee || !de || ee->rank != 2 || de->rank != 2)
        return mt_error(MT_ERR_INVALID, L->err, L->errlen, "model.bin: %s", !ee ? "missing variable "
                        "'encoder/embeddings_0/weight'" : !de ? "missing variable 'decoder/embeddings/weight'"
                        : "the embeddings must be matrices");
    int64_t d = ee->shape[1];
    if (d < 2 || d > 65536 || d % 2 || de->shape[1] != d || d % (int64_t)heads_e || d % (int64_t)heads_d)
        return mt_error(MT_ERR_INVALID, L->err, L->errlen, "model.bin: model dimension %lld (decoder %lld) must be "
                        "even and divisible by the heads (%g, %g)", (long long)d, (long long)de->shape[1],
                        heads_e, heads_d);
    in->d_model = (int)d;
    in->encoder_heads = (int)heads_e;
    in->decoder_heads = (int)heads_d;
    for (int s = 0; s < 2; s++)
        if (scale[s] == -1)
            scale[s] = sqrtf((float)d);
    if (scale[0] != scale[1] || (scale[0] != 1 && fabs(scale[0] - sqrtf((float)d)) > 1e-6 * scale[0]))
        return mt_error(MT_ERR_INVALID, L->err, L->errlen, "model.bin: embedding scales %g (encoder) and %g "
                        "(decoder): supported are 1 or sqrt(%lld) on both", scale[0], scale[1], (long long)d);
    in->scale_embedding = scale[0] != 1;
    in->encoder_layers = count_layers(f, "encoder");
    in->decoder_layers = count_layers(f, "decoder");
    if (in->encoder_layers < 1 || in->decoder_layers < 1)
        return mt_error(MT_ERR_INVALID, L->err, L->errlen, "model.bin: no %s layers (no variable "
                        "'%s/layer_0/ffn/linear_0/weight')", in->encoder_layers < 1 ? "encoder" : "decoder",
                        in->encoder_layers < 1 ? "encoder" : "decoder");
    const mt_ct2_var *f1 = mt_ct2_find(f, "encoder/layer_0/ffn/linear_0/weight");
    const mt_ct2_var *f2 = mt_ct2_find(f, "decoder/layer_0/ffn/linear_0/weight");
    if (f1->rank != 2 || f2->rank != 2 || f1->shape[0] < 1 || f2->shape[0] < 1 || f1->shape[0] > (1 << 20) ||
        f2->shape[0] > (1 << 20))
        return mt_error(MT_ERR_INVALID, L->err, L->errlen, "model.bin: ffn/linear_0/weight must be a matrix");
    in->encoder_ffn_dim = (int)f1->shape[0];
    in->decoder_ffn_dim = (int)f2->shape[0];
    in->src_vocab_size = (int)ee->shape[0];
    in->tgt_vocab_size = (int)de->shape[0] + 1; /* the zero start row (see the top) */
    if (ee->shape[0] < 2 || de->shape[0] < 2 || ee->shape[0] > (1 << 24) || de->shape[0] > (1 << 24))
        return mt_error(MT_ERR_INVALID, L->err, L->errlen, "model.bin: vocabulary sizes %lld / %lld out of range",
                        (long long)ee->shape[0], (long long)de->shape[0]);
    const mt_ct2_var *pe = get(L, "encoder/position_encodings/encodings");
    const mt_ct2_var *pd = get(L, "decoder/position_encodings/encodings");
    if (!pe != !pd)
        return mt_error(MT_ERR_INVALID, L->err, L->errlen, "model.bin: only the %s stores position encodings",
                        pe ? "encoder" : "decoder");
    if (pe) {
        if (pe->rank != 2 || pe->shape[1] != d || pe->shape[0] < 1 || pe->shape[0] > (1 << 20))
            return shape_error(L, pe, pe->rank ? pe->shape[0] : 1, d);
        if (pd->rank != 2 || pd->shape[0] != pe->shape[0] || pd->shape[1] != d)
            return shape_error(L, pd, pe->shape[0], d);
        in->max_positions = (int)pe->shape[0];
        snprintf(in->positions, sizeof in->positions, "stored");
    } else {
        in->max_positions = 1024;
        snprintf(in->positions, sizeof in->positions, "ctranslate2");
    }
    m->head_dim_enc = in->d_model / in->encoder_heads;
    m->head_dim_dec = in->d_model / in->decoder_heads;
    return 0;
}

/* CTranslate2's own table when none is stored: float arithmetic, position p at row p-1
 * (its rows start at position 1), sin in the first half, cos in the second. */
static void ct2_sinusoids(float *pos, int n, int d)
{
    const float inc = logf(10000.f) / (float)(d / 2 - 1 > 0 ? d / 2 - 1 : 1);
    for (int p = 0; p < n; p++)
        for (int i = 0; i < d / 2; i++) {
            float t = (float)(p + 1) * expf(-inc * (float)i);
            pos[(size_t)p * d + i] = sinf(t);
            pos[(size_t)p * d + d / 2 + i] = cosf(t);
        }
}

static int put_positions(ct2_loader *L, mt_model *m, float *pos)
{
    const mt_model_info *in = &m->info;
    const mt_ct2_var *pe = mt_ct2_find(L->f, "encoder/position_encodings/encodings");
    const mt_ct2_var *pd = mt_ct2_find(L->f, "decoder/position_encodings/encodings");
    size_t n = (size_t)in->max_positions * (size_t)in->d_model;
    if (!pe) {
        ct2_sinusoids(pos, in->max_positions, in->d_model);
        return 0;
    }
    mt_ct2_to_f32(pe, pos);
    if (pe != pd) { /* the engine has one table for both sides */
        float *other = malloc(sizeof(float) * n);
        if (!other)
            return mt_error(MT_ERR_NOMEM, L->err, L->errlen, "out of memory");
        mt_ct2_to_f32(pd, other);
        int same = !memcmp(other, pos, sizeof(float) * n);
        free(other);
        if (!same)
            return mt_error(MT_ERR_INVALID, L->err, L->errlen, "model.bin: the encoder's and the decoder's position "
                            "encodings differ (one shared table is supported)");
    }
    return 0;
}

static int put_weights(mt_model *m, ct2_loader *L, float *arena, int own_enc, int own_lm_head)
{
    const mt_model_info *in = &m->info;
    int64_t d = in->d_model, vt = in->tgt_vocab_size - 1;
    float *at = arena;
    if (m->pre_norm && (put_norm(L, &at, "encoder/layer_norm", d, &m->enc_final_norm) ||
                        put_norm(L, &at, "decoder/layer_norm", d, &m->dec_final_norm)))
        return -1;
    const mt_ct2_var *ee = mt_ct2_find(L->f, "encoder/embeddings_0/weight");
    float *enc = own_enc ? take(&at, (size_t)(in->src_vocab_size * d)) : NULL;
    float *dec = take(&at, (size_t)((vt + 1) * d));
    const char *enc_name = ee ? "encoder/embeddings_0/weight" : "encoder/embeddings/weight";
    if ((own_enc && put(L, enc_name, in->src_vocab_size, d, enc, 0)) ||
        put(L, "decoder/embeddings/weight", vt, d, dec, 0))
        return -1;
    if (!own_enc) { /* one table (an alias): the decoder's, whose extra row the encoder never reads */
        get(L, enc_name);
        enc = dec;
    }
    memset(dec + vt * d, 0, sizeof(float) * (size_t)d);
    float *head = dec;
    if (own_lm_head) {
        head = take(&at, (size_t)((vt + 1) * d));
        if (put(L, "decoder/projection/weight", vt, d, head, 0))
            return -1;
        memset(head + vt * d, 0, sizeof(float) * (size_t)d);
    } else {
        get(L, "decoder/projection/weight");
    }
    float *bias = take(&at, (size_t)(vt + 1));
    if (put(L, "decoder/projection/bias", vt, 0, bias, 1))
        return -1;
    bias[vt] = -INFINITY;
    float *pos = take(&at, (size_t)(in->max_positions * d));
    if (put_positions(L, m, pos))
        return -1;
    m->enc_embed = enc;
    m->dec_embed = dec;
    m->lm_head = head;
    m->logits_bias = bias;
    m->positions = pos;

    float *ckv_w = take(&at, (size_t)(in->decoder_layers * 2 * d * d));
    float *ckv_b = take(&at, (size_t)(in->decoder_layers * 2 * d));
    m->cross_kv.w = ckv_w;
    m->cross_kv.b = ckv_b;
    char s[128], n[256];
    for (int l = 0; l < in->encoder_layers; l++) {
        mt_encoder_layer *E = &m->enc[l];
        mt_strfmt(s, sizeof s, "encoder/layer_%d", l);
        if (put_self_attention(L, &at, s, d, &E->qkv, &E->out, &E->attn_norm) ||
            put_ffn(L, &at, s, d, in->encoder_ffn_dim, &E->fc1, &E->fc2, &E->ffn_norm))
            return -1;
    }
    for (int l = 0; l < in->decoder_layers; l++) {
        mt_decoder_layer *D = &m->dec[l];
        mt_strfmt(s, sizeof s, "decoder/layer_%d", l);
        if (put_self_attention(L, &at, s, d, &D->qkv, &D->out, &D->self_norm) ||
            put_linear(L, &at, mt_strfmt(n, sizeof n, "%s/attention/linear_0", s), d, d, &D->cross_q) ||
            put(L, mt_strfmt(n, sizeof n, "%s/attention/linear_1/weight", s), 2 * d, d,
                ckv_w + (size_t)(2 * l) * (size_t)(d * d), 0) ||
            put(L, mt_strfmt(n, sizeof n, "%s/attention/linear_1/bias", s), 2 * d, 0,
                ckv_b + (size_t)(2 * l * d), 1) ||
            put_linear(L, &at, mt_strfmt(n, sizeof n, "%s/attention/linear_2", s), d, d, &D->cross_out) ||
            put_norm(L, &at, mt_strfmt(n, sizeof n, "%s/attention/layer_norm", s), d, &D->cross_norm) ||
            put_ffn(L, &at, s, d, in->decoder_ffn_dim, &D->fc1, &D->fc2, &D->ffn_norm))
            return -1;
    }
    /* Anything left is a part this engine does not run (a final layer norm, relative
     * position tables, a layer norm on the embeddings, ...): refuse it by name. */
    for (int i = 0; i < mt_ct2_count(L->f); i++)
        if (!L->used[i])
            return mt_error(MT_ERR_INVALID, L->err, L->errlen, "model.bin: unexpected variable '%s' (not part of "
                            "a post-norm Transformer this engine runs)", mt_ct2_at(L->f, i)->name);
    return 0;
}

int mt_ct2_check(const mt_ct2_file *f, char *err, size_t errlen)
{
    mt_model m = {0};
    ct2_loader L = {.f = f, .err = err, .errlen = errlen};
    L.used = calloc((size_t)mt_ct2_count(f) + 1, 1);
    if (!L.used)
        return mt_error(MT_ERR_NOMEM, err, errlen, "out of memory");
    int zero_start, rc = read_spec(&m, &L, &zero_start);
    free(L.used);
    return rc;
}

/* Maps path read-only; *len its size. */
static void *map_file(const char *path, size_t *len, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        mt_error(MT_ERR_INVALID, err, errlen, "%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    *len = (size_t)st.st_size;
    void *p = *len ? mmap(NULL, *len, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
    close(fd);
    if (p == MAP_FAILED) {
        mt_error(MT_ERR_INVALID, err, errlen, "%s: %s", path, *len ? strerror(errno) : "empty file");
        return NULL;
    }
    return p;
}

mt_model *mt_ct2_load(const char *dir, const mt_model_options *opts, char *err, size_t errlen)
{
    mt_model *m = calloc(1, sizeof *m);
    if (!m)
        return mt_error(MT_ERR_NOMEM, err, errlen, "out of memory"), NULL;
    mt_compute_type asked;
    if (mt_compute_options(m, opts, err, errlen) ||
        mt_compute_requested(m, opts ? opts->compute_type : MT_COMPUTE_DEFAULT, &asked, err, errlen)) {
        mt_model_free(m);
        return NULL;
    }
    mt_ct2_tokens cfg;
    mt_ct2_vocab src = {0}, tgt = {0};
    int shared = 0;
    if (mt_ct2_config_load(dir, &cfg, err, errlen) || mt_ct2_vocabs_load(dir, &src, &tgt, &shared, err, errlen)) {
        mt_model_free(m);
        return NULL;
    }
    const mt_ct2_vocab *tv = shared ? &src : &tgt;
    char path[4096];
    size_t len = 0;
    void *bytes = map_file(mt_strfmt(path, sizeof path, "%s/model.bin", dir), &len, err, errlen);
    mt_ct2_file *f = bytes ? mt_ct2_parse(bytes, len, err, errlen) : NULL;
    ct2_loader L = {.f = f, .map = bytes, .map_len = len, .err = err, .errlen = errlen};
    int rc = -1, zero_start = 0;
    if (!f || !(L.used = calloc((size_t)mt_ct2_count(f) + 1, 1)) || read_spec(m, &L, &zero_start))
        goto done;
    mt_model_info *in = &m->info;
    if (in->src_vocab_size != src.n || in->tgt_vocab_size - 1 != tv->n) {
        mt_error(MT_ERR_INVALID, err, errlen, "model.bin has %d source and %d target embeddings, the vocabularies "
                 "%d (%s) and %d (%s) tokens", in->src_vocab_size, in->tgt_vocab_size - 1, src.n, src.name, tv->n,
                 tv->name);
        goto done;
    }
    int eos = mt_ct2_vocab_find(tv, cfg.eos), start = mt_ct2_vocab_find(tv, cfg.start);
    if (eos < 0 || start < 0) {
        mt_error(MT_ERR_INVALID, err, errlen, "%s: the %s token \"%s\" (config.json) is not in the vocabulary",
                 tv->name, eos < 0 ? "eos" : "decoder start", eos < 0 ? cfg.eos : cfg.start);
        goto done;
    }
    if (mt_ct2_vocab_find(&src, cfg.eos) != eos) {
        mt_error(MT_ERR_INVALID, err, errlen, "%s: the eos token \"%s\" has another id in the source vocabulary "
                 "(the engine uses one eos id on both sides)", src.name, cfg.eos);
        goto done;
    }
    in->eos_id = eos;
    in->pad_id = in->tgt_vocab_size - 1;
    in->decoder_start_id = zero_start ? in->pad_id : start;
    in->default_beam_size = 4;
    in->default_max_length = 256;
    in->default_length_penalty = 1.0f;
    /* the projection is its own matrix unless it is (an alias of) the decoder embeddings */
    const mt_ct2_var *proj = mt_ct2_find(f, "decoder/projection/weight");
    if (!proj) {
        mt_error(MT_ERR_INVALID, err, errlen, "model.bin: missing variable 'decoder/projection/weight'");
        goto done;
    }
    int own_head = proj != mt_ct2_find(f, "decoder/embeddings/weight");
    const mt_ct2_var *enc_var = mt_ct2_find(f, "encoder/embeddings_0/weight");
    if (!enc_var)
        enc_var = mt_ct2_find(f, "encoder/embeddings/weight");
    int own_enc = enc_var != mt_ct2_find(f, "decoder/embeddings/weight") || in->src_vocab_size != in->tgt_vocab_size - 1;
    m->enc = calloc((size_t)in->encoder_layers, sizeof *m->enc);
    m->dec = calloc((size_t)in->decoder_layers, sizeof *m->dec);
    if (!m->enc || !m->dec) {
        mt_error(MT_ERR_NOMEM, err, errlen, "out of memory");
        goto done;
    }
    m->arena_bytes = arena_floats(in, own_enc, own_head, m->pre_norm) * sizeof(float);
    m->drop_source_eos = !cfg.add_source_eos;
    m->arena = mmap(NULL, m->arena_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m->arena == MAP_FAILED) {
        m->arena = NULL;
        mt_error(MT_ERR_NOMEM, err, errlen, "cannot allocate %zu bytes for the weights: %s", m->arena_bytes,
                 strerror(errno));
        goto done;
    }
    if (put_weights(m, &L, m->arena, own_enc, own_head))
        goto done;
    if (mprotect(m->arena, m->arena_bytes, PROT_READ) != 0) {
        mt_error(MT_ERR_INVALID, err, errlen, "mprotect: %s", strerror(errno));
        goto done;
    }
    int int8_unavailable = 0;
    if (asked == MT_COMPUTE_DEFAULT) { /* what the directory stores, as CTranslate2 does */
        int8_unavailable = L.stored_int8 && !mt_packed_available(MT_COMPUTE_INT8, m->cpu_hide, NULL, 0, NULL, 0);
        asked = L.stored_int8 && !int8_unavailable ? MT_COMPUTE_INT8 : MT_COMPUTE_FLOAT32;
    }
    m->compute = asked;
    if (mt_compute_setup(m, asked, err, errlen))
        goto done;
    size_t n = strlen(m->compute_detail);
    snprintf(m->compute_detail + n, sizeof m->compute_detail - n, " (CTranslate2 model.bin v%u%s)",
             mt_ct2_version(f), int8_unavailable ? ", int8 weights widened: this CPU has no int8 path" : "");
    rc = 0;
done:
    free(L.used);
    mt_ct2_free(f);
    if (bytes)
        munmap(bytes, len);
    mt_ct2_vocab_free(&src);
    mt_ct2_vocab_free(&tgt);
    if (rc) {
        mt_model_free(m);
        return NULL;
    }
    return m;
}
