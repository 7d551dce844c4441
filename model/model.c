/* model.c: reads config.json and model.safetensors of a MarianMT directory into one
 * read-only float32 arena (the compute type and the packing for it: compute.c).
 *
 * Every weight is copied (and widened from F16/BF16) once, at load, so the file mapping
 * can be dropped afterwards and the hot path sees aligned float32 only. Two fusions are
 * made here because they turn several small products into one larger one:
 * q,k,v of each self-attention become one (3d, d) matrix, and the cross-attention k,v of
 * all decoder layers become one (layers*2d, d) matrix applied once to the encoder output. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ct2.h"
#include "internal.h"
#include "packed.h"
#include "safetensors.h"

/* ---- config.json ---- */

static json_t *load_json(const char *dir, const char *name, int required, char *err, size_t errlen, int *failed)
{
    char path[4096];
    mt_strfmt(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (required || errno != ENOENT) {
            mt_strfmt(err, errlen, "%s: %s", path, strerror(errno));
            *failed = 1;
        }
        return NULL;
    }
    json_error_t jerr;
    json_t *j = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
    fclose(f);
    if (!j) {
        mt_strfmt(err, errlen, "%s: invalid JSON: %s at line %d, column %d", path, jerr.text, jerr.line, jerr.column);
        *failed = 1;
    } else if (!json_is_object(j)) {
        mt_strfmt(err, errlen, "%s: top level is not a JSON object", path);
        json_decref(j);
        *failed = 1;
        return NULL;
    }
    return j;
}

typedef struct {
    json_t *cfg, *gen;  /* config.json, generation_config.json (may be NULL) */
    char *err;
    size_t errlen;
    int failed;
} config_reader;

/* Looks key up in generation_config.json first when prefer_gen, then config.json. */
static json_t *lookup(config_reader *r, const char *key, int prefer_gen)
{
    json_t *v = prefer_gen && r->gen ? json_object_get(r->gen, key) : NULL;
    return v && !json_is_null(v) ? v : json_object_get(r->cfg, key);
}

static int read_int(config_reader *r, const char *key, int fallback, int required, int min, int prefer_gen)
{
    if (r->failed)
        return fallback;
    json_t *v = lookup(r, key, prefer_gen);
    if (!v || json_is_null(v)) {
        if (required) {
            mt_strfmt(r->err, r->errlen, "config.json: missing required key \"%s\"", key);
            r->failed = 1;
        }
        return fallback;
    }
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > (1 << 30)) {
        mt_strfmt(r->err, r->errlen, "config.json: \"%s\" must be an integer >= %d", key, min);
        r->failed = 1;
        return fallback;
    }
    return (int)json_integer_value(v);
}

static int read_bool(config_reader *r, const char *key, int fallback)
{
    json_t *v = r->failed ? NULL : json_object_get(r->cfg, key);
    if (!v || json_is_null(v))
        return fallback;
    if (!json_is_boolean(v)) {
        mt_strfmt(r->err, r->errlen, "config.json: \"%s\" must be true or false", key);
        r->failed = 1;
        return fallback;
    }
    return json_is_true(v);
}

/* activation_function (MarianConfig's default: gelu) into m->activation and info. */
static int read_activation(mt_model *m, config_reader *r)
{
    mt_model_info *in = &m->info;
    json_t *act = json_object_get(r->cfg, "activation_function");
    const char *a = act ? json_string_value(act) : "gelu"; /* MarianConfig's default */
    if (!a)
        return mt_strfmt(r->err, r->errlen, "config.json: \"activation_function\" must be a string"), -1;
    if (!strcmp(a, "relu")) {
        m->activation = MT_ACT_RELU;
    } else if (!strcmp(a, "gelu")) {
        m->activation = MT_ACT_GELU;
    } else if (!strcmp(a, "swish") || !strcmp(a, "silu")) {
        m->activation = MT_ACT_SWISH;
    } else if (!strcmp(a, "quick_gelu")) {
        m->activation = MT_ACT_QUICK_GELU;
    } else if (!strcmp(a, "gelu_new") || !strcmp(a, "gelu_pytorch_tanh")) {
        m->activation = MT_ACT_GELU_TANH;
    } else {
        return mt_strfmt(r->err, r->errlen,
                         "config.json: activation_function \"%s\" is not supported (relu, gelu, swish, silu, "
                         "quick_gelu, gelu_new, gelu_pytorch_tanh)", a), -1;
    }
    static const char *const names[] = {"relu", "gelu", "swish", "quick_gelu", "gelu_new"};
    snprintf(in->activation, sizeof in->activation, "%s", names[m->activation]);
    return 0;
}

/* bad_words_ids: single-token entries only. */
static int read_bad_ids(mt_model *m, config_reader *r)
{
    mt_model_info *in = &m->info;
    json_t *bad = lookup(r, "bad_words_ids", 1);
    if (bad && !json_is_null(bad)) {
        if (!json_is_array(bad))
            return mt_strfmt(r->err, r->errlen, "config.json: \"bad_words_ids\" must be a list of lists of ids"), -1;
        m->bad_ids = calloc(json_array_size(bad) + 1, sizeof *m->bad_ids);
        if (!m->bad_ids)
            return mt_strfmt(r->err, r->errlen, "out of memory"), -1;
        size_t i;
        json_t *seq;
        json_array_foreach(bad, i, seq) {
            json_t *id = json_array_get(seq, 0);
            if (!json_is_array(seq) || json_array_size(seq) != 1 || !json_is_integer(id) ||
                json_integer_value(id) < 0 || json_integer_value(id) >= in->tgt_vocab_size)
                return mt_strfmt(r->err, r->errlen,
                                 "config.json: bad_words_ids[%zu] must be a one-token list with an id below %d "
                                 "(multi-token sequences are not supported)", i, in->tgt_vocab_size), -1;
            m->bad_ids[m->n_bad_ids++] = (int32_t)json_integer_value(id);
        }
    }
    return 0;
}

static int read_hparams(mt_model *m, config_reader *r)
{
    mt_model_info *in = &m->info;
    in->d_model = read_int(r, "d_model", 0, 1, 2, 0);
    in->encoder_layers = read_int(r, "encoder_layers", 0, 1, 1, 0);
    in->decoder_layers = read_int(r, "decoder_layers", 0, 1, 1, 0);
    in->encoder_heads = read_int(r, "encoder_attention_heads", 0, 1, 1, 0);
    in->decoder_heads = read_int(r, "decoder_attention_heads", 0, 1, 1, 0);
    in->encoder_ffn_dim = read_int(r, "encoder_ffn_dim", 0, 1, 1, 0);
    in->decoder_ffn_dim = read_int(r, "decoder_ffn_dim", 0, 1, 1, 0);
    in->src_vocab_size = read_int(r, "vocab_size", 0, 1, 2, 0);
    in->tgt_vocab_size = read_int(r, "decoder_vocab_size", in->src_vocab_size, 0, 2, 0);
    in->pad_id = read_int(r, "pad_token_id", 0, 1, 0, 0);
    in->eos_id = read_int(r, "eos_token_id", 0, 1, 0, 1);
    in->decoder_start_id = read_int(r, "decoder_start_token_id", in->pad_id, 0, 0, 1);
    in->max_positions = read_int(r, "max_position_embeddings", 1024, 0, 1, 0);
    in->default_beam_size = read_int(r, "num_beams", 4, 0, 1, 1);
    in->default_max_length = read_int(r, "max_length", 256, 0, 1, 1);
    in->scale_embedding = read_bool(r, "scale_embedding", 0);
    int static_pos = read_bool(r, "static_position_embeddings", 1);
    int pre_norm = read_bool(r, "normalize_before", 0);
    int norm_emb = read_bool(r, "normalize_embedding", 0);
    if (r->failed)
        return -1;

    in->default_length_penalty = 1.0f;
    json_t *lp = lookup(r, "length_penalty", 1);
    if (lp && !json_is_null(lp)) {
        if (!json_is_number(lp))
            return mt_strfmt(r->err, r->errlen, "config.json: \"length_penalty\" must be a number"), -1;
        in->default_length_penalty = (float)json_number_value(lp);
    }
    if (read_activation(m, r))
        return -1;
    /* Marian (which trained OPUS-MT) and Hugging Face compute different sinusoids; a
     * converter records which one the weights were trained with. */
    json_t *pf = json_object_get(r->cfg, "positions_formula");
    const char *f = pf ? json_string_value(pf) : "huggingface";
    if (!f || (strcmp(f, "huggingface") && strcmp(f, "marian")))
        return mt_strfmt(r->err, r->errlen, "config.json: \"positions_formula\" must be \"huggingface\" or \"marian\""), -1;
    snprintf(in->positions, sizeof in->positions, "%s", f);

    if (!static_pos)
        return mt_strfmt(r->err, r->errlen, "config.json: static_position_embeddings=false (learned positions) is not supported"), -1;
    if (pre_norm)
        return mt_strfmt(r->err, r->errlen, "config.json: normalize_before=true (pre-norm) is not supported: this engine runs post-norm Transformers"), -1;
    if (norm_emb)
        return mt_strfmt(r->err, r->errlen, "config.json: normalize_embedding=true is not supported"), -1;
    if (in->d_model % 2)
        return mt_strfmt(r->err, r->errlen, "config.json: d_model %d must be even (sinusoidal positions)", in->d_model), -1;
    if (in->d_model % in->encoder_heads || in->d_model % in->decoder_heads)
        return mt_strfmt(r->err, r->errlen, "config.json: d_model %d is not divisible by the attention heads (%d, %d)",
                         in->d_model, in->encoder_heads, in->decoder_heads), -1;
    if (in->pad_id >= in->tgt_vocab_size || in->eos_id >= in->tgt_vocab_size || in->decoder_start_id >= in->tgt_vocab_size)
        return mt_strfmt(r->err, r->errlen, "config.json: pad/eos/decoder_start token ids (%d, %d, %d) must be below decoder_vocab_size %d",
                         in->pad_id, in->eos_id, in->decoder_start_id, in->tgt_vocab_size), -1;
    if (in->eos_id >= in->src_vocab_size)
        return mt_strfmt(r->err, r->errlen, "config.json: eos_token_id %d must be below vocab_size %d", in->eos_id, in->src_vocab_size), -1;
    m->head_dim_enc = in->d_model / in->encoder_heads;
    m->head_dim_dec = in->d_model / in->decoder_heads;

    return read_bad_ids(m, r);
}

/* ---- weights ---- */

typedef struct {
    mt_safetensors *file;
    char *used;         /* per tensor index: consumed by some role */
    float *arena;
    size_t arena_floats, arena_used;
    const mt_model_info *in;
    int stored_int8;    /* tensors stored as I8 with row scales (a quantized directory) */
    char *err;
    size_t errlen;
} weight_loader;

static float *take(weight_loader *w, size_t floats)
{
    size_t padded = (floats + 15) & ~(size_t)15; /* keep every tensor 64-byte aligned */
    if (!w->arena) { /* sizing pass */
        w->arena_floats += padded;
        return NULL;
    }
    float *p = w->arena + w->arena_used;
    w->arena_used += padded;
    return p;
}

static const mt_tensor_view *find(weight_loader *w, const char *name)
{
    const mt_tensor_view *t = mt_safetensors_find(w->file, name);
    if (t)
        w->used[t - mt_safetensors_at(w->file, 0)] = 1;
    return t;
}

static int check_shape(weight_loader *w, const mt_tensor_view *t, int64_t rows, int64_t cols)
{
    int ok = cols ? (t->ndim == 2 && t->shape[0] == rows && t->shape[1] == cols)
                  : (t->ndim == 1 && t->shape[0] == rows);
    if (ok)
        return 0;
    char got[128] = "[", *p = got + 1;
    for (int i = 0; i < t->ndim && p < got + 100; i++)
        p += snprintf(p, (size_t)(got + sizeof got - p), "%s%lld", i ? ", " : "", (long long)t->shape[i]);
    snprintf(p, (size_t)(got + sizeof got - p), "]");
    if (cols)
        mt_strfmt(w->err, w->errlen, "model.safetensors: tensor '%s' has shape %s, config.json implies [%lld, %lld]",
                  t->name, got, (long long)rows, (long long)cols);
    else
        mt_strfmt(w->err, w->errlen, "model.safetensors: tensor '%s' has shape %s, config.json implies [%lld]",
                  t->name, got, (long long)rows);
    return -1;
}

/* Tables and the logits bias are never quantized: an I8 one has no meaning here. */
static int refuse_int8(weight_loader *w, const mt_tensor_view *t)
{
    if (t->dtype != MT_DTYPE_I8)
        return 0;
    return mt_strfmt(w->err, w->errlen, "model.safetensors: tensor '%s' is I8, which only the weight "
                     "matrices of Linear layers and embeddings may be", t->name), -1;
}

/* An I8 matrix (a directory quantized by tools/safetensors_io.py quantize_int8) is held
 * as q * scale[row] in float32: the int8 packing of the same rows finds q and scale
 * again, so a stored int8 model runs as its load-time-quantized twin does, and float32
 * still works on it. */
static int copy_quantized(weight_loader *w, const mt_tensor_view *t, int64_t rows, int64_t cols, float *dst)
{
    char name[300];
    if (!cols)
        return refuse_int8(w, t);
    const mt_tensor_view *s = find(w, mt_strfmt(name, sizeof name, "%s_scale", t->name));
    if (!s)
        return mt_strfmt(w->err, w->errlen, "model.safetensors: I8 tensor '%s' has no row scales '%s'",
                         t->name, name), -1;
    if (s->dtype == MT_DTYPE_I8 || s->ndim != 1 || s->shape[0] != rows)
        return mt_strfmt(w->err, w->errlen, "model.safetensors: row scales '%s' must be a float vector of %lld "
                         "elements", name, (long long)rows), -1;
    w->stored_int8 = 1;
    if (!dst)
        return 0;
    float *scale = malloc(sizeof(float) * (size_t)rows);
    if (!scale)
        return mt_strfmt(w->err, w->errlen, "out of memory"), -1;
    mt_tensor_to_f32(s, scale);
    mt_tensor_to_f32(t, dst);
    for (int64_t r = 0; r < rows; r++) {
        if (!isfinite(scale[r]) || scale[r] < 0.0f) {
            double bad = scale[r];
            free(scale);
            return mt_strfmt(w->err, w->errlen, "model.safetensors: row scale %lld of '%s' is %g, not a finite "
                             "non-negative number", (long long)r, name, bad), -1;
        }
        for (int64_t c = 0; c < cols; c++)
            dst[r * cols + c] *= scale[r];
    }
    free(scale);
    mt_safetensors_release(w->file, t);
    return 0;
}

/* Copies tensor `name` of shape (rows, cols) (cols 0: a vector) to dst; on the sizing pass
 * only validates. */
static int copy_tensor(weight_loader *w, const char *name, int64_t rows, int64_t cols, float *dst)
{
    const mt_tensor_view *t = find(w, name);
    if (!t)
        return mt_strfmt(w->err, w->errlen, "model.safetensors: missing tensor '%s'", name), -1;
    if (check_shape(w, t, rows, cols))
        return -1;
    if (t->dtype == MT_DTYPE_I8)
        return copy_quantized(w, t, rows, cols, dst);
    if (dst) {
        mt_tensor_to_f32(t, dst);
        mt_safetensors_release(w->file, t);
    }
    return 0;
}

/* `prefix`.weight (rows, cols; cols 0: a vector of rows) and `prefix`.bias (rows), taken
 * from the arena in that order: a Linear's or a LayerNorm's two tensors. */
static int load_weight_bias(weight_loader *w, const char *prefix, int64_t rows, int64_t cols, const float **weight,
                            const float **bias)
{
    char name[256];
    float *wt = take(w, (size_t)(rows * (cols ? cols : 1))), *b = take(w, (size_t)rows);
    if (copy_tensor(w, mt_strfmt(name, sizeof name, "%s.weight", prefix), rows, cols, wt) ||
        copy_tensor(w, mt_strfmt(name, sizeof name, "%s.bias", prefix), rows, 0, b))
        return -1;
    *weight = wt;
    *bias = b;
    return 0;
}

static int load_linear(weight_loader *w, const char *prefix, int64_t out, int64_t in, mt_linear_w *lin)
{
    return load_weight_bias(w, prefix, out, in, &lin->w, &lin->b);
}

static int load_norm(weight_loader *w, const char *prefix, int64_t d, mt_norm *n)
{
    return load_weight_bias(w, prefix, d, 0, &n->weight, &n->bias);
}

/* q,k,v projections of `prefix` into one (3d, d) matrix. */
static int load_fused_qkv(weight_loader *w, const char *prefix, int64_t d, mt_linear_w *lin)
{
    static const char *parts[3] = {"q_proj", "k_proj", "v_proj"};
    float *wt = take(w, (size_t)(3 * d * d)), *b = take(w, (size_t)(3 * d));
    char name[256];
    for (int i = 0; i < 3; i++) {
        if (copy_tensor(w, mt_strfmt(name, sizeof name, "%s.%s.weight", prefix, parts[i]), d, d,
                        wt ? wt + i * d * d : NULL) ||
            copy_tensor(w, mt_strfmt(name, sizeof name, "%s.%s.bias", prefix, parts[i]), d, 0,
                        b ? b + i * d : NULL))
            return -1;
    }
    lin->w = wt;
    lin->b = b;
    return 0;
}

/* First present tensor among names; NULL when none. */
static const mt_tensor_view *find_first(weight_loader *w, const char *const *names, int n)
{
    for (int i = 0; i < n; i++) {
        const mt_tensor_view *t = find(w, names[i]);
        if (t)
            return t;
    }
    return NULL;
}

/* Embedding-like matrix: copies t unless an earlier role already copied the same tensor. */
static const float *load_matrix(weight_loader *w, const mt_tensor_view *t, int64_t rows, int64_t d,
                                const mt_tensor_view **seen, const float **seen_dst, int *n_seen)
{
    for (int i = 0; i < *n_seen; i++)
        if (seen[i] == t)
            return seen_dst[i];
    if (check_shape(w, t, rows, d))
        return NULL;
    float *dst = take(w, (size_t)(rows * d));
    if (t->dtype == MT_DTYPE_I8) {
        if (copy_quantized(w, t, rows, d, dst))
            return NULL;
    } else if (dst) {
        mt_tensor_to_f32(t, dst);
        mt_safetensors_release(w->file, t);
    }
    seen[*n_seen] = t;
    /* On the sizing pass there is no destination yet: any non-NULL value marks success. */
    seen_dst[*n_seen] = dst ? dst : (const float *)w;
    return seen_dst[(*n_seen)++];
}

/* The (max_positions, d) position table: a stored embed_positions table when the checkpoint
 * has one (both sides must then agree, as the engine shares one table), else the formula
 * of config.json. Both formulas put sin in the first half and cos in the second and are
 * evaluated in double, then rounded, as the PyTorch reference does. */
static int load_positions(weight_loader *w, mt_model *m, float *pos)
{
    mt_model_info *in = &m->info;
    int64_t d = in->d_model, n = in->max_positions;
    const mt_tensor_view *te = find(w, "model.encoder.embed_positions.weight");
    const mt_tensor_view *td = find(w, "model.decoder.embed_positions.weight");
    if ((te && (check_shape(w, te, n, d) || refuse_int8(w, te))) ||
        (td && (check_shape(w, td, n, d) || refuse_int8(w, td))))
        return -1;
    if (te || td) {
        snprintf(in->positions, sizeof in->positions, "stored");
        if (!pos)
            return 0;
        mt_tensor_to_f32(te ? te : td, pos);
        if (te && td) {
            float *other = malloc(sizeof *other * (size_t)(n * d));
            if (!other)
                return mt_strfmt(w->err, w->errlen, "out of memory"), -1;
            mt_tensor_to_f32(td, other);
            int same = !memcmp(other, pos, sizeof *other * (size_t)(n * d));
            free(other);
            if (!same)
                return mt_strfmt(w->err, w->errlen, "model.safetensors: the encoder's and the decoder's "
                                 "embed_positions differ (one shared table is supported)"), -1;
        }
        return 0;
    }
    if (!pos)
        return 0;
    int marian = !strcmp(in->positions, "marian");
    double log_inc = log(10000.0) / (d / 2 - 1 > 0 ? (double)(d / 2 - 1) : 1.0);
    for (int64_t p = 0; p < n; p++)
        for (int64_t i = 0; i < d / 2; i++) {
            /* Marian: tensor2tensor timescales exp(-i log(10000)/(d/2-1)); HF: 10000^(2i/d) */
            double angle = marian ? (double)p * exp(-(double)i * log_inc)
                                  : (double)p / pow(10000.0, 2.0 * (double)i / (double)d);
            pos[p * d + i] = (float)sin(angle);
            pos[p * d + d / 2 + i] = (float)cos(angle);
        }
    return 0;
}

/* Embeddings, output projection, logits bias and the sinusoidal position table. */
static int load_embeddings(mt_model *m, weight_loader *w)
{
    const mt_model_info *in = &m->info;
    int64_t d = in->d_model;
    const mt_tensor_view *seen[3];
    const float *seen_dst[3];
    int n_seen = 0;

    static const char *enc_names[] = {"model.encoder.embed_tokens.weight", "model.shared.weight"};
    static const char *dec_names[] = {"model.decoder.embed_tokens.weight", "model.shared.weight",
                                      "model.encoder.embed_tokens.weight"};
    const mt_tensor_view *te = find_first(w, enc_names, 2);
    const mt_tensor_view *td = find_first(w, dec_names, in->src_vocab_size == in->tgt_vocab_size ? 3 : 1);
    if (!te)
        return mt_strfmt(w->err, w->errlen, "model.safetensors: missing tensor 'model.shared.weight' "
                         "(nor 'model.encoder.embed_tokens.weight')"), -1;
    if (!td)
        return mt_strfmt(w->err, w->errlen, "model.safetensors: missing tensor 'model.decoder.embed_tokens.weight' "
                         "(needed: decoder_vocab_size differs from vocab_size)"), -1;
    /* Tied copies saved under the other names are the same matrix: accept them. */
    for (int i = 0; i < 3; i++)
        find(w, dec_names[i]);
    const mt_tensor_view *tl = find(w, "lm_head.weight");
    if (!(m->enc_embed = load_matrix(w, te, in->src_vocab_size, d, seen, seen_dst, &n_seen)) ||
        !(m->dec_embed = load_matrix(w, td, in->tgt_vocab_size, d, seen, seen_dst, &n_seen)) ||
        !(m->lm_head = load_matrix(w, tl ? tl : td, in->tgt_vocab_size, d, seen, seen_dst, &n_seen)))
        return -1;

    float *bias = take(w, (size_t)in->tgt_vocab_size);
    const mt_tensor_view *tb = find(w, "final_logits_bias");
    if (tb) {
        if (check_shape(w, tb, 1, in->tgt_vocab_size) || refuse_int8(w, tb))
            return -1;
        if (bias)
            mt_tensor_to_f32(tb, bias);
    } else if (bias) {
        memset(bias, 0, sizeof *bias * (size_t)in->tgt_vocab_size);
    }
    m->logits_bias = bias;

    float *pos = take(w, (size_t)(in->max_positions * d));
    if (load_positions(w, m, pos))
        return -1;
    m->positions = pos;
    return 0;
}

/* The self-attention block every layer starts with: `pre`.self_attn's fused q,k,v, its
 * out_proj and self_attn_layer_norm. */
static int load_self_attention(weight_loader *w, const char *pre, int64_t d, mt_linear_w *qkv, mt_linear_w *out,
                               mt_norm *norm)
{
    char name[256];
    if (load_fused_qkv(w, mt_strfmt(name, sizeof name, "%s.self_attn", pre), d, qkv) ||
        load_linear(w, mt_strfmt(name, sizeof name, "%s.self_attn.out_proj", pre), d, d, out) ||
        load_norm(w, mt_strfmt(name, sizeof name, "%s.self_attn_layer_norm", pre), d, norm))
        return -1;
    return 0;
}

/* The feed-forward block every layer ends with: `pre`.fc1 (ffn, d), fc2 (d, ffn) and
 * final_layer_norm. */
static int load_feed_forward(weight_loader *w, const char *pre, int64_t d, int64_t ffn, mt_linear_w *fc1,
                             mt_linear_w *fc2, mt_norm *norm)
{
    char name[256];
    if (load_linear(w, mt_strfmt(name, sizeof name, "%s.fc1", pre), ffn, d, fc1) ||
        load_linear(w, mt_strfmt(name, sizeof name, "%s.fc2", pre), d, ffn, fc2) ||
        load_norm(w, mt_strfmt(name, sizeof name, "%s.final_layer_norm", pre), d, norm))
        return -1;
    return 0;
}

static int load_encoder_layer(mt_model *m, weight_loader *w, int l)
{
    const mt_model_info *in = &m->info;
    int64_t d = in->d_model;
    mt_encoder_layer *L = &m->enc[l];
    char pre[128];
    mt_strfmt(pre, sizeof pre, "model.encoder.layers.%d", l);
    if (load_self_attention(w, pre, d, &L->qkv, &L->out, &L->attn_norm) ||
        load_feed_forward(w, pre, d, in->encoder_ffn_dim, &L->fc1, &L->fc2, &L->ffn_norm))
        return -1;
    return 0;
}

/* Decoder layer l; its cross-attention k,v go into rows 2l*d.. of the fused matrix. */
static int load_decoder_layer(mt_model *m, weight_loader *w, int l, float *ckv_w, float *ckv_b)
{
    const mt_model_info *in = &m->info;
    int64_t d = in->d_model;
    mt_decoder_layer *L = &m->dec[l];
    char name[256];
    char pre[128];
    mt_strfmt(pre, sizeof pre, "model.decoder.layers.%d", l);
    size_t kw = (size_t)(2 * l) * (size_t)(d * d), kb = (size_t)(2 * l * d);
    if (load_self_attention(w, pre, d, &L->qkv, &L->out, &L->self_norm) ||
        load_linear(w, mt_strfmt(name, sizeof name, "%s.encoder_attn.q_proj", pre), d, d, &L->cross_q) ||
        copy_tensor(w, mt_strfmt(name, sizeof name, "%s.encoder_attn.k_proj.weight", pre), d, d,
                    ckv_w ? ckv_w + kw : NULL) ||
        copy_tensor(w, mt_strfmt(name, sizeof name, "%s.encoder_attn.k_proj.bias", pre), d, 0,
                    ckv_b ? ckv_b + kb : NULL) ||
        copy_tensor(w, mt_strfmt(name, sizeof name, "%s.encoder_attn.v_proj.weight", pre), d, d,
                    ckv_w ? ckv_w + kw + (size_t)(d * d) : NULL) ||
        copy_tensor(w, mt_strfmt(name, sizeof name, "%s.encoder_attn.v_proj.bias", pre), d, 0,
                    ckv_b ? ckv_b + kb + (size_t)d : NULL) ||
        load_linear(w, mt_strfmt(name, sizeof name, "%s.encoder_attn.out_proj", pre), d, d, &L->cross_out) ||
        load_norm(w, mt_strfmt(name, sizeof name, "%s.encoder_attn_layer_norm", pre), d, &L->cross_norm) ||
        load_feed_forward(w, pre, d, in->decoder_ffn_dim, &L->fc1, &L->fc2, &L->ffn_norm))
        return -1;
    return 0;
}

static int load_weights(mt_model *m, weight_loader *w)
{
    const mt_model_info *in = &m->info;
    int64_t d = in->d_model;
    if (load_embeddings(m, w))
        return -1;
    for (int l = 0; l < in->encoder_layers; l++)
        if (load_encoder_layer(m, w, l))
            return -1;
    float *ckv_w = take(w, (size_t)(in->decoder_layers * 2 * d * d));
    float *ckv_b = take(w, (size_t)(in->decoder_layers * 2 * d));
    m->cross_kv.w = ckv_w;
    m->cross_kv.b = ckv_b;
    for (int l = 0; l < in->decoder_layers; l++)
        if (load_decoder_layer(m, w, l, ckv_w, ckv_b))
            return -1;

    /* Anything left over is a tensor this architecture does not have: refuse rather than
     * silently ignore weights (e.g. a pre-norm model's final layer_norm). */
    for (int i = 0; i < mt_safetensors_count(w->file); i++) {
        const char *tn = mt_safetensors_at(w->file, i)->name;
        if (!w->used[i])
            return mt_strfmt(w->err, w->errlen, "model.safetensors: unexpected tensor '%s' "
                             "(not part of a post-norm MarianMT model with this config.json)", tn), -1;
    }
    return 0;
}

/* Highest layer index n such that model.<part>.layers.<n-1>.fc1.weight exists, probing
 * upwards (cheap: names are looked up, nothing is allocated). */
static int layers_in_file(const mt_safetensors *f, const char *part, int limit)
{
    char name[128];
    int n = 0;
    while (n < limit) {
        mt_strfmt(name, sizeof name, "model.%s.layers.%d.fc1.weight", part, n);
        if (!mt_safetensors_find(f, name))
            break;
        n++;
    }
    return n;
}

static int check_layer_count(const mt_safetensors *f, const char *part, int wanted, char *err, size_t errlen)
{
    int have = layers_in_file(f, part, wanted + 1);
    if (have >= wanted)
        return 0; /* more layers than configured: the unexpected-tensor check names them */
    mt_strfmt(err, errlen, "config.json: %s_layers is %d but model.safetensors holds %d %s layer%s "
              "(no tensor 'model.%s.layers.%d.fc1.weight')", part, wanted, have, part, have == 1 ? "" : "s",
              part, have);
    return -1;
}

mt_model *mt_model_load(const char *dir, char *err, size_t errlen) { return mt_model_load_ex(dir, NULL, err, errlen); }

mt_model *mt_model_load_ex(const char *dir, const mt_model_options *opts, char *err, size_t errlen)
{
    char tmp[1];
    if (!err) {
        err = tmp;
        errlen = sizeof tmp;
    }
    /* A CTranslate2 directory (an argos-translate package's model/): ct2.c */
    char probe[4096];
    if (access(mt_strfmt(probe, sizeof probe, "%s/model.safetensors", dir), F_OK) != 0 &&
        access(mt_strfmt(probe, sizeof probe, "%s/model.bin", dir), F_OK) == 0)
        return mt_ct2_load(dir, opts, err, errlen);
    mt_model *m = calloc(1, sizeof *m);
    if (!m)
        return mt_strfmt(err, errlen, "out of memory"), NULL;
    mt_compute_type asked;
    if (mt_compute_options(m, opts, err, errlen) ||
        mt_compute_requested(m, opts ? opts->compute_type : MT_COMPUTE_DEFAULT, &asked, err, errlen)) {
        mt_model_free(m);
        return NULL;
    }
    config_reader r = {.err = err, .errlen = errlen};
    r.cfg = load_json(dir, "config.json", 1, err, errlen, &r.failed);
    if (!r.failed)
        r.gen = load_json(dir, "generation_config.json", 0, err, errlen, &r.failed);
    int rc = r.failed ? -1 : read_hparams(m, &r);
    json_decref(r.cfg);
    json_decref(r.gen);
    if (rc) {
        mt_model_free(m);
        return NULL;
    }
    char path[4096];
    mt_strfmt(path, sizeof path, "%s/model.safetensors", dir);
    weight_loader w = {.in = &m->info, .err = err, .errlen = errlen};
    w.file = mt_safetensors_open(path, err, errlen);
    if (!w.file) {
        mt_model_free(m);
        return NULL;
    }
    /* The layer counts size per-layer tables: check them against the file first, so a
     * config asking for 10^9 layers is named as such rather than as "out of memory". */
    if (check_layer_count(w.file, "encoder", m->info.encoder_layers, err, errlen) ||
        check_layer_count(w.file, "decoder", m->info.decoder_layers, err, errlen)) {
        mt_safetensors_close(w.file);
        mt_model_free(m);
        return NULL;
    }
    m->enc = calloc((size_t)m->info.encoder_layers, sizeof *m->enc);
    m->dec = calloc((size_t)m->info.decoder_layers, sizeof *m->dec);
    if (!m->enc || !m->dec) {
        mt_safetensors_close(w.file);
        mt_model_free(m);
        return mt_strfmt(err, errlen, "out of memory for %d + %d layer tables", m->info.encoder_layers,
                         m->info.decoder_layers), NULL;
    }
    w.used = calloc((size_t)mt_safetensors_count(w.file) + 1, 1);
    /* Pass 1 validates names and shapes and sizes the arena; pass 2 fills it. */
    rc = w.used ? load_weights(m, &w) : -1;
    if (!rc) {
        m->arena_bytes = w.arena_floats * sizeof(float);
        m->arena = mmap(NULL, m->arena_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m->arena == MAP_FAILED) {
            m->arena = NULL;
            mt_strfmt(err, errlen, "cannot allocate %zu bytes for the weights: %s", m->arena_bytes, strerror(errno));
            rc = -1;
        } else {
            w.arena = m->arena;
            memset(w.used, 0, (size_t)mt_safetensors_count(w.file));
            rc = load_weights(m, &w);
            /* From here on a stray write into the weights faults instead of corrupting
             * what other threads read. */
            if (!rc && mprotect(m->arena, m->arena_bytes, PROT_READ) != 0) {
                mt_strfmt(err, errlen, "mprotect: %s", strerror(errno));
                rc = -1;
            }
        }
    }
    free(w.used);
    mt_safetensors_close(w.file);
    int int8_unavailable = 0;
    if (!rc && asked == MT_COMPUTE_DEFAULT) { /* what the directory stores, like CTranslate2 */
        int8_unavailable = w.stored_int8 && !mt_packed_available(MT_COMPUTE_INT8, m->cpu_hide, NULL, 0, NULL, 0);
        asked = w.stored_int8 && !int8_unavailable ? MT_COMPUTE_INT8 : MT_COMPUTE_FLOAT32;
    }
    if (!rc) {
        m->compute = asked;
        rc = mt_compute_setup(m, asked, err, errlen);
    }
    if (!rc && int8_unavailable) {
        size_t n = strlen(m->compute_detail);
        snprintf(m->compute_detail + n, sizeof m->compute_detail - n,
                 " (int8 weights widened: this CPU has no int8 path)");
    }
    if (rc) {
        mt_model_free(m);
        return NULL;
    }
    return m;
}

const mt_model_info *mt_model_get_info(const mt_model *m) { return &m->info; }

void mt_search_options_default(const mt_model *m, mt_search_options *o)
{
    memset(o, 0, sizeof *o);
    o->beam_size = m->info.default_beam_size;
    o->length_penalty = m->info.default_length_penalty;
    o->max_length = m->info.default_max_length;
    o->max_length_factor = 0.0f;
    o->n_best = 1;
    o->sampling_topk = 1;
    o->sampling_topp = 1.0f;
    o->sampling_temperature = 1.0f;
    o->repetition_penalty = 1.0f;
    o->alignment_layer = -1;
    o->unk_id = -1;
}
