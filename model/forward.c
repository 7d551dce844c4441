/* forward.c: the encoder over a batch of sources and one decoder step over a batch of
 * hypotheses.
 *
 * Sources are packed without padding: sentence s occupies rows [off[s], off[s]+len[s])
 * of every activation matrix, so each projection is one product over all tokens of the
 * batch and attention simply never looks outside a sentence's rows (that is the
 * padding mask). Decoder rows are hypotheses; row r at step t writes its self-attention
 * key/value into cache slot base+r, and hist[r][0..t] lists the slots of its ancestors,
 * so reordering beams copies a few integers instead of cached activations. */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "internal.h"
#include "packed.h"

/* ---- matrix products split over the state's threads ---- */

typedef struct {
    const mt_kernels *kern;
    const float *x, *w, *b;
    float *y;
    int m, k, n, act, chunk, by_rows;
} linear_job;

static void linear_task(void *ctx, int task, int n_tasks)
{
    (void)n_tasks;
    const linear_job *j = ctx;
    int lo = task * j->chunk, hi = lo + j->chunk;
    if (j->by_rows) {
        if (hi > j->m)
            hi = j->m;
        if (lo >= hi)
            return;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, hi - lo, j->n, j->k, 1.0f,
                    j->x + (size_t)lo * (size_t)j->k, j->k, j->w, j->k, 0.0f,
                    j->y + (size_t)lo * (size_t)j->n, j->n);
        j->kern->bias_act(j->y + (size_t)lo * (size_t)j->n, hi - lo, j->n, j->n, j->b, j->act);
    } else {
        if (hi > j->n)
            hi = j->n;
        if (lo >= hi)
            return;
        if (j->m <= MT_FEW_ROWS)
            j->kern->gemm_few_rows(j->x, j->m, j->k, j->w + (size_t)lo * (size_t)j->k, hi - lo, j->y + lo, j->n);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, j->m, hi - lo, j->k, 1.0f, j->x, j->k,
                        j->w + (size_t)lo * (size_t)j->k, j->k, 0.0f, j->y + lo, j->n);
        j->kern->bias_act(j->y + lo, j->m, j->n, hi - lo, j->b ? j->b + lo : NULL, j->act);
    }
}

/* y (m, n) = act(x (m, k) . w^T + b), w being (n, k) as PyTorch stores Linear weights.
 * act is 0 for none or MT_ACT_* + 1. Work is split by output columns when there are
 * many (each thread streams its own slice of the weights), else by rows. Either split
 * leaves each output element's summation unchanged, so results do not depend on the
 * thread count or on which other sentences share the batch. */
static void linear(mt_state *st, const float *x, int m, int k, const mt_linear_w *lin, int n, float *y, int act)
{
    if (lin->packed) { /* weights packed for oneDNN (packed.h), in any compute type */
        if (st->packed_failed ||
            mt_packed_linear(st->packed, st->pool, st->threads, st->model->kern, lin->packed, x, m, lin->b, y, act, st->error,
                             sizeof st->error))
            st->packed_failed = 1; /* reported by the forward call that asked */
        return;
    }
    int threads = st->threads;
    linear_job j = {.kern = st->model->kern, .x = x, .w = lin->w, .b = lin->b, .y = y, .m = m, .k = k, .n = n, .act = act};
    int tasks = 1;
    if (threads > 1 && n >= 512) {
        tasks = threads;
        j.chunk = ((n + tasks - 1) / tasks + 63) & ~63;
    } else if (threads > 1 && m >= 32) {
        tasks = threads;
        j.by_rows = 1;
        j.chunk = (m + tasks - 1) / tasks;
    } else {
        j.chunk = n;
    }
    mt_pool_run(st->pool, linear_task, &j, tasks);
}

/* MT_OK, or the error of a packed product since the last call (its message is in
 * st->error); the state is usable again afterwards. */
static int packed_status(mt_state *st)
{
    if (!st->packed_failed)
        return MT_OK;
    st->packed_failed = 0;
    return MT_ERR_NOMEM;
}

/* x = LayerNorm(x + delta), rows of width d (the kernels' add_norm). */
static void add_norm(const mt_state *st, float *x, const float *delta, int rows, int d, const mt_norm *norm)
{
    st->model->kern->add_norm(x, delta, rows, d, norm->weight, norm->bias);
}

/* Pre-norm pieces: dst = LayerNorm(src) row by row (dst may be src), and x += delta. */
static void norm_rows(float *dst, const float *src, int rows, int d, const mt_norm *n)
{
    for (int r = 0; r < rows; r++) {
        const float *s = src + (size_t)r * (size_t)d;
        float *o = dst + (size_t)r * (size_t)d;
        double mean = 0, var = 0;
        for (int j = 0; j < d; j++)
            mean += s[j];
        mean /= d;
        for (int j = 0; j < d; j++)
            var += (s[j] - mean) * (s[j] - mean);
        float inv = (float)(1.0 / sqrt(var / d + 1e-5)), mu = (float)mean;
        for (int j = 0; j < d; j++)
            o[j] = (s[j] - mu) * inv * n->weight[j] + n->bias[j];
    }
}

static void add_rows(float *x, const float *delta, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] += delta[i];
}

static void softmax_inplace(const mt_kernels *kern, float *x, int n)
{
    kern->scale(x, n, 1.0f / kern->exp_store_sum(x, n, kern->max(x, n)));
}

static void embed(const mt_model *m, const float *table, const int32_t *ids, int n, int first_pos,
                  int same_pos, float *out)
{
    int d = m->info.d_model;
    float scale = m->info.scale_embedding ? sqrtf((float)d) : 1.0f;
    for (int i = 0; i < n; i++) {
        const float *e = table + (size_t)ids[i] * (size_t)d;
        const float *p = m->positions + (size_t)(same_pos ? first_pos : first_pos + i) * (size_t)d;
        float *o = out + (size_t)i * (size_t)d;
        for (int j = 0; j < d; j++)
            o[j] = e[j] * scale + p[j];
    }
}

/* ---- encoder ---- */

typedef struct {
    const mt_model *model;
    float *qkv, *ctx, *scores;
    const int *off, *len;
    int n, heads, hd, max_len;
} enc_attn_job;

/* Thread `task` handles every n_tasks-th (sentence, head) pair with its own score buffer. */
static void enc_attn_task(void *p, int task, int n_tasks)
{
    const enc_attn_job *j = p;
    int d = j->model->info.d_model, ld = 3 * d;
    float *scores = j->scores + (size_t)task * (size_t)j->max_len * (size_t)j->max_len;
    float scale = 1.0f / sqrtf((float)j->hd);
    for (int pair = task; pair < j->n * j->heads; pair += n_tasks) {
        int s = pair / j->heads, h = pair % j->heads, len = j->len[s];
        float *q = j->qkv + (size_t)j->off[s] * (size_t)ld + (size_t)h * (size_t)j->hd;
        const float *k = q + d, *v = q + 2 * d;
        for (int i = 0; i < len; i++) /* HF scales q before the product */
            j->model->kern->scale(q + (size_t)i * (size_t)ld, j->hd, scale);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, len, len, j->hd, 1.0f, q, ld, k, ld, 0.0f, scores, len);
        for (int i = 0; i < len; i++)
            softmax_inplace(j->model->kern, scores + (size_t)i * (size_t)len, len);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, len, j->hd, len, 1.0f, scores, len, v, ld, 0.0f,
                    j->ctx + (size_t)j->off[s] * (size_t)d + (size_t)h * (size_t)j->hd, d);
    }
}

int mt_encode_batch(mt_state *st, int n, const int32_t *const *src, const int *lens, float **enc_out)
{
    const mt_model *m = st->model;
    const mt_model_info *in = &m->info;
    int d = in->d_model, ffn = in->encoder_ffn_dim, threads = st->threads;
    int total = 0, max_len = 0;
    int *off = mt_buf_reserve(&st->src_off, sizeof(int) * (size_t)(n + 1));
    if (!off)
        return MT_ERR_NOMEM;
    for (int s = 0; s < n; s++) {
        off[s] = total;
        total += lens[s];
        max_len = lens[s] > max_len ? lens[s] : max_len;
    }
    off[n] = total;
    size_t T = (size_t)total;
    float *x = mt_buf_reserve(&st->enc_x, sizeof(float) * T * (size_t)d);
    float *qkv = mt_buf_reserve(&st->enc_qkv, sizeof(float) * T * 3 * (size_t)d);
    float *ctx = mt_buf_reserve(&st->enc_ctx, sizeof(float) * T * (size_t)d);
    float *tmp = mt_buf_reserve(&st->enc_tmp, sizeof(float) * T * (size_t)d);
    float *f = mt_buf_reserve(&st->enc_ffn, sizeof(float) * T * (size_t)ffn);
    float *scores = mt_buf_reserve(&st->att_scores, sizeof(float) * (size_t)threads * (size_t)max_len * (size_t)max_len);
    if (!x || !qkv || !ctx || !tmp || !f || !scores) {
        mt_strfmt(st->error, sizeof st->error, "out of memory for the encoder's activations (%d sentences, %d tokens)",
                  n, total);
        return MT_ERR_NOMEM;
    }
    for (int s = 0; s < n; s++)
        embed(m, m->enc_embed, src[s], lens[s], 0, 0, x + (size_t)off[s] * (size_t)d);

    enc_attn_job aj = {.model = m, .qkv = qkv, .ctx = ctx, .scores = scores, .off = off, .len = lens,
                       .n = n, .heads = in->encoder_heads, .hd = m->head_dim_enc, .max_len = max_len};
    for (int l = 0; l < in->encoder_layers && m->pre_norm; l++) { /* pre-norm: x + f(LN(x)) */
        const mt_encoder_layer *L = &m->enc[l];
        norm_rows(tmp, x, total, d, &L->attn_norm);
        linear(st, tmp, total, d, &L->qkv, 3 * d, qkv, 0);
        mt_pool_run(st->pool, enc_attn_task, &aj, threads);
        linear(st, ctx, total, d, &L->out, d, tmp, 0);
        add_rows(x, tmp, T * (size_t)d);
        norm_rows(tmp, x, total, d, &L->ffn_norm);
        linear(st, tmp, total, d, &L->fc1, ffn, f, m->activation + 1);
        linear(st, f, total, ffn, &L->fc2, d, tmp, 0);
        add_rows(x, tmp, T * (size_t)d);
    }
    if (m->pre_norm)
        norm_rows(x, x, total, d, &m->enc_final_norm);
    for (int l = 0; l < in->encoder_layers && !m->pre_norm; l++) {
        const mt_encoder_layer *L = &m->enc[l];
        linear(st, x, total, d, &L->qkv, 3 * d, qkv, 0);
        mt_pool_run(st->pool, enc_attn_task, &aj, threads);
        linear(st, ctx, total, d, &L->out, d, tmp, 0);
        add_norm(st, x, tmp, total, d, &L->attn_norm);
        linear(st, x, total, d, &L->fc1, ffn, f, m->activation + 1);
        linear(st, f, total, ffn, &L->fc2, d, tmp, 0);
        add_norm(st, x, tmp, total, d, &L->ffn_norm);
    }
    *enc_out = x;
    return packed_status(st);
}

void mt_cross_kv(mt_state *st, const float *enc_out, int tokens, float *kv)
{
    const mt_model *m = st->model;
    int d = m->info.d_model;
    linear(st, enc_out, tokens, d, &m->cross_kv, m->info.decoder_layers * 2 * d, kv, 0);
}

/* ---- decoder step ---- */

typedef struct {
    const mt_model *model;
    const float *q;       /* (rows, ldq) queries, already scaled */
    int ldq;
    float *ctx;           /* (rows, d) */
    int layer, rows, step;
    const float *cache_k, *cache_v; /* self-attention cache: (slots, layers, d) */
    const int *hist;      /* (rows, hist_stride): cache slot of each step so far */
    int hist_stride;
    const float *cross;   /* (source tokens, layers * 2d): cross-attention k,v */
    const int *row_sent, *src_off, *src_len;
    float *scores;        /* max_keys floats per task */
    const float **rows_at; /* max_keys row pointers per task */
    int max_keys;
    float *attn_out;      /* optional alignment copy-out, see mt_decoder_input */
    int attn_layer, attn_ld;
} dec_attn_job;


static const float *self_key(const dec_attn_job *j, int r, int h, int i)
{
    const mt_model *m = j->model;
    size_t slot = (size_t)j->hist[(size_t)r * (size_t)j->hist_stride + (size_t)i];
    return j->cache_k + (slot * (size_t)m->info.decoder_layers + (size_t)j->layer) * (size_t)m->info.d_model +
           (size_t)h * (size_t)m->head_dim_dec;
}

static const float *cross_key(const dec_attn_job *j, int r, int h, int i)
{
    const mt_model *m = j->model;
    size_t d = (size_t)m->info.d_model, tok = (size_t)(j->src_off[j->row_sent[r]] + i);
    return j->cross + tok * (size_t)m->info.decoder_layers * 2 * d + (size_t)j->layer * 2 * d +
           (size_t)h * (size_t)m->head_dim_dec;
}

static void dec_attn_rows(const dec_attn_job *j, int task, int n_tasks, int cross)
{
    const mt_model *m = j->model;
    int d = m->info.d_model, hd = m->head_dim_dec;
    float *scores = j->scores + (size_t)task * (size_t)j->max_keys;
    const float **at = j->rows_at + (size_t)task * (size_t)j->max_keys;
    const mt_kernels *kern = m->kern;
    for (int r = task; r < j->rows; r += n_tasks) {
        int n = cross ? j->src_len[j->row_sent[r]] : j->step + 1;
        for (int h = 0; h < m->info.decoder_heads; h++) {
            const float *q = j->q + (size_t)r * (size_t)j->ldq + (size_t)h * (size_t)hd;
            /* out = softmax(q . keys) . values; a value sits at a fixed distance from its key */
            for (int i = 0; i < n; i++)
                at[i] = cross ? cross_key(j, r, h, i) : self_key(j, r, h, i);
            kern->dots(q, at, n, hd, scores);
            softmax_inplace(kern, scores, n);
            for (int i = 0; i < n; i++)
                at[i] = cross ? at[i] + d /* v follows k in a source token's row */
                              : j->cache_v + (at[i] - j->cache_k); /* the same slot of the v cache */
            kern->weighted_rows(scores, at, n, hd, j->ctx + (size_t)r * (size_t)d + (size_t)h * (size_t)hd);
            /* ---- alignments: scores now hold this head's probabilities; average the
             * heads of one layer (as Marian and CTranslate2 do) ---- */
            if (cross && j->attn_out && j->layer == j->attn_layer) {
                float *a = j->attn_out + (size_t)r * (size_t)j->attn_ld;
                if (h == 0)
                    memset(a, 0, sizeof *a * (size_t)j->attn_ld);
                for (int i = 0; i < n; i++)
                    a[i] += scores[i] / (float)m->info.decoder_heads;
            }
            /* ---- end alignments ---- */
        }
    }
}

static void self_attn_task(void *p, int task, int n_tasks) { dec_attn_rows(p, task, n_tasks, 0); }
static void cross_attn_task(void *p, int task, int n_tasks) { dec_attn_rows(p, task, n_tasks, 1); }

static void scale_rows(const mt_kernels *kern, float *x, int rows, int ld, int cols, float s)
{
    for (int i = 0; i < rows; i++)
        kern->scale(x + (size_t)i * (size_t)ld, cols, s);
}

int mt_decoder_step(mt_state *st, const mt_decoder_input *in, float **logits_out)
{
    const mt_model *m = st->model;
    const mt_model_info *info = &m->info;
    int d = info->d_model, ffn = info->decoder_ffn_dim, L = info->decoder_layers, rows = in->rows;
    int threads = st->threads;
    size_t R = (size_t)rows;
    float *x = mt_buf_reserve(&st->dec_x, sizeof(float) * R * (size_t)d);
    float *qkv = mt_buf_reserve(&st->dec_qkv, sizeof(float) * R * 3 * (size_t)d);
    float *ctx = mt_buf_reserve(&st->dec_ctx, sizeof(float) * R * (size_t)d);
    float *tmp = mt_buf_reserve(&st->dec_tmp, sizeof(float) * R * (size_t)d);
    float *f = mt_buf_reserve(&st->dec_ffn, sizeof(float) * R * (size_t)ffn);
    float *logits = mt_buf_reserve(&st->logits, sizeof(float) * R * (size_t)info->tgt_vocab_size);
    int max_keys = in->step + 1 > in->max_src_len ? in->step + 1 : in->max_src_len;
    float *scores = mt_buf_reserve(&st->att_scores, sizeof(float) * (size_t)threads * (size_t)max_keys);
    const float **rows_at = mt_buf_reserve(&st->att_rows, sizeof(float *) * (size_t)threads * (size_t)max_keys);
    size_t slot_floats = (size_t)L * (size_t)d;
    size_t slots_needed = in->slot_base + R;
    float *ck = mt_buf_grow(&st->self_k, sizeof(float) * in->slot_base * slot_floats,
                            sizeof(float) * slots_needed * slot_floats);
    float *cv = mt_buf_grow(&st->self_v, sizeof(float) * in->slot_base * slot_floats,
                            sizeof(float) * slots_needed * slot_floats);
    if (!x || !qkv || !ctx || !tmp || !f || !logits || !scores || !rows_at || !ck || !cv) {
        mt_strfmt(st->error, sizeof st->error,
                  "out of memory for the decoder at step %d (%d hypotheses, %zu cached key/value slots)", in->step,
                  rows, slots_needed);
        return MT_ERR_NOMEM;
    }
    if (in->step >= info->max_positions) {
        mt_strfmt(st->error, sizeof st->error, "decoding step %d is past max_position_embeddings (%d)", in->step,
                  info->max_positions);
        return MT_ERR_INVALID;
    }

    embed(m, m->dec_embed, in->tokens, rows, in->step, 1, x);
    float scale = 1.0f / sqrtf((float)m->head_dim_dec);
    dec_attn_job j = {.model = m, .ctx = ctx, .rows = rows, .step = in->step, .cache_k = ck, .cache_v = cv,
                      .hist = in->hist, .hist_stride = in->hist_stride, .cross = in->cross_kv,
                      .row_sent = in->row_sent, .src_off = in->src_off, .src_len = in->src_len,
                      .scores = scores, .rows_at = rows_at, .max_keys = max_keys,
                      .attn_out = in->attn_out, .attn_layer = in->attn_layer, .attn_ld = in->max_src_len};
    for (int l = 0; l < L; l++) {
        const mt_decoder_layer *Ly = &m->dec[l];
        j.layer = l;
        const int pre = m->pre_norm; /* pre-norm: each sublayer reads LN(x) from tmp, adds to x */
        if (pre)
            norm_rows(tmp, x, rows, d, &Ly->self_norm);
        /* self-attention: this step's k,v go to the cache first, then every row attends
         * over its own ancestry (which ends with the slot just written) */
        linear(st, pre ? tmp : x, rows, d, &Ly->qkv, 3 * d, qkv, 0);
        for (int r = 0; r < rows; r++) {
            size_t at = ((in->slot_base + (size_t)r) * (size_t)L + (size_t)l) * (size_t)d;
            memcpy(ck + at, qkv + (size_t)r * 3 * (size_t)d + (size_t)d, sizeof(float) * (size_t)d);
            memcpy(cv + at, qkv + (size_t)r * 3 * (size_t)d + 2 * (size_t)d, sizeof(float) * (size_t)d);
        }
        scale_rows(m->kern, qkv, rows, 3 * d, d, scale);
        j.q = qkv;
        j.ldq = 3 * d;
        mt_pool_run(st->pool, self_attn_task, &j, threads);
        linear(st, ctx, rows, d, &Ly->out, d, tmp, 0);
        if (pre) {
            add_rows(x, tmp, R * (size_t)d);
            norm_rows(tmp, x, rows, d, &Ly->cross_norm);
        } else {
            add_norm(st, x, tmp, rows, d, &Ly->self_norm);
        }
        /* cross-attention over the (precomputed) encoder keys and values */
        linear(st, pre ? tmp : x, rows, d, &Ly->cross_q, d, qkv, 0);
        scale_rows(m->kern, qkv, rows, d, d, scale);
        j.ldq = d;
        mt_pool_run(st->pool, cross_attn_task, &j, threads);
        linear(st, ctx, rows, d, &Ly->cross_out, d, tmp, 0);
        if (pre) {
            add_rows(x, tmp, R * (size_t)d);
            norm_rows(tmp, x, rows, d, &Ly->ffn_norm);
        } else {
            add_norm(st, x, tmp, rows, d, &Ly->cross_norm);
        }
        /* feed-forward */
        linear(st, pre ? tmp : x, rows, d, &Ly->fc1, ffn, f, m->activation + 1);
        linear(st, f, rows, ffn, &Ly->fc2, d, tmp, 0);
        if (pre)
            add_rows(x, tmp, R * (size_t)d);
        else
            add_norm(st, x, tmp, rows, d, &Ly->ffn_norm);
    }
    if (m->pre_norm)
        norm_rows(x, x, rows, d, &m->dec_final_norm);
    mt_linear_w head = {.w = m->lm_head, .b = m->logits_bias, .packed = m->lm_head_packed};
    linear(st, x, rows, d, &head, info->tgt_vocab_size, logits, 0);
    *logits_out = logits;
    return packed_status(st);
}
