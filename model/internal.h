/* internal.h: structures shared by the files of model/ (not a public header). */
#ifndef MT_MODEL_INTERNAL_H
#define MT_MODEL_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"
#include "kernels.h"
#include "model.h"
#include "pool.h"

/* relu; gelu (erf); swish = silu = x sigmoid(x); quick_gelu = x sigmoid(1.702 x) (Marian's
 * "gelu"); gelu_new = the tanh approximation (also "gelu_pytorch_tanh"). */
enum { MT_ACT_RELU, MT_ACT_GELU, MT_ACT_SWISH, MT_ACT_QUICK_GELU, MT_ACT_GELU_TANH };

typedef struct {
    const float *weight, *bias; /* LayerNorm (d) */
} mt_norm;

struct mt_packed;
struct mt_packed_ctx;

typedef struct {
    const float *w, *b;         /* Linear: w (out, in) as in PyTorch, b (out) */
    const struct mt_packed *packed; /* bfloat16 / int8 compute types: w packed for oneDNN
                                 * (packed.h), used instead of w; NULL for float32 */
} mt_linear_w;

typedef struct {
    mt_linear_w qkv;            /* fused q,k,v projections: w (3d, d), b (3d) */
    mt_linear_w out;            /* (d, d) */
    mt_norm attn_norm;
    mt_linear_w fc1;            /* (ffn, d) */
    mt_linear_w fc2;            /* (d, ffn) */
    mt_norm ffn_norm;
} mt_encoder_layer;

typedef struct {
    mt_linear_w qkv, out;       /* self-attention, as in the encoder */
    mt_norm self_norm;
    mt_linear_w cross_q;        /* (d, d) */
    mt_linear_w cross_out;      /* (d, d) */
    mt_norm cross_norm;
    mt_linear_w fc1, fc2;
    mt_norm ffn_norm;
} mt_decoder_layer;

struct mt_model {
    mt_model_info info;
    int activation;             /* MT_ACT_* */
    int head_dim_enc, head_dim_dec;
    const mt_kernels *kern;     /* chosen at load (mt_kernels_select, mt_model_options.kernels) */
    char cpu_hide[64];          /* mt_model_options.cpu_hide ("" for none) */
    int split_min;              /* mt_model_options.split_min, resolved (never < 0) */
    mt_compute_type compute;    /* resolved at load: never DEFAULT or AUTO */
    char compute_detail[320];   /* what runs the products, for logs (mt_model_compute_detail) */
    struct mt_packed **packs;   /* every packed matrix, owned (bfloat16 / int8) */
    int n_packs;
    const struct mt_packed *lm_head_packed;
    int32_t *bad_ids;           /* from bad_words_ids (single-token entries) */
    int n_bad_ids;

    void *arena;                /* every float below points into it; read-only after load */
    size_t arena_bytes;

    const float *enc_embed;     /* (src_vocab, d) */
    const float *dec_embed;     /* (tgt_vocab, d) */
    const float *lm_head;       /* (tgt_vocab, d) */
    const float *logits_bias;   /* (tgt_vocab) */
    const float *positions;     /* (max_positions, d) sinusoidal table */
    mt_linear_w cross_kv;       /* all decoder layers' cross k,v: w (layers*2d, d) */
    int pre_norm;               /* 1: x + f(LayerNorm(x)) per sublayer and a final LayerNorm on
                                 * each side (CTranslate2's pre-norm TransformerSpec); 0: Marian's
                                 * post-norm LayerNorm(x + f(x)) */
    mt_norm enc_final_norm, dec_final_norm; /* pre_norm only */
    int drop_source_eos;        /* 1: the model was trained without eos at the end of the source
                                 * (CTranslate2's add_source_eos false): a final eos is dropped */
    mt_encoder_layer *enc;      /* encoder_layers */
    mt_decoder_layer *dec;      /* decoder_layers */
};

/* Growable scratch buffer: grows on demand, never shrinks, so steady state allocates nothing. */
typedef struct {
    void *ptr;
    size_t cap;
} mt_buf;

/* Per-sentence decoding bookkeeping during one mt_translate_ids call. */
typedef struct mt_sentence mt_sentence;

enum { MT_SPLIT_MAX = 16, MT_SPLIT_MIN_DEFAULT = 1 };

struct mt_state {
    const mt_model *model;
    mt_pool *pool;              /* the pool products are split on (shared or own_pool) */
    mt_pool *own_pool;          /* started by mt_state_create without a pool; freed with the state */
    int threads;                /* tasks each product is split into */
    char error[256];

    /* encoder */
    mt_buf enc_x, enc_qkv, enc_ctx, enc_tmp, enc_ffn, att_scores;
    mt_buf att_rows;            /* decoder attention: per task, the key/value row pointers */
    mt_buf cross_kv;            /* (total source tokens, layers*2d) */
    mt_buf src_off;             /* int: token offset of each sentence */

    /* decoder */
    mt_buf dec_x, dec_qkv, dec_ctx, dec_tmp, dec_ffn;
    mt_buf logits;              /* (rows, tgt_vocab) */
    mt_buf self_k, self_v;      /* (slots, layers, d): self-attention cache */

    /* beam search (search.c) */
    mt_buf hist[2];             /* int (rows, steps): cache slot of each step, double-buffered */
    mt_buf toks[2];             /* int (rows, steps): generated tokens, double-buffered */
    mt_buf rows, next_rows;     /* per live hypothesis: sentence, token fed, score */
    mt_buf cand, n_cand;        /* per row: its best candidates */
    mt_buf sentences;           /* mt_sentence */
    mt_buf fin_ids, fin;        /* finished hypotheses: ids and mt_hypothesis */
    /* return_scores / return_alignments (decode_opts.c): per-row histories like toks */
    mt_buf attn;                /* float (rows, max_src): head-averaged cross-attention */
    mt_buf ahist[2], shist[2];  /* int / float (rows, steps): aligned source position, log-prob */
    mt_buf fin_align, fin_scores;
    mt_buf sample_scratch;      /* float (tasks, vocab): sampling's sort space */
    /* packed weights (any compute type): the oneDNN engine and streams (packed.h), made
     * with the state, and its primitives, made on first use of a shape; a failed packed
     * product is recorded here and reported by the forward call */
    struct mt_packed_ctx *packed;
    int packed_failed;
    /* A batch of at least split_min sentences per thread is searched as one part per
     * thread on one-thread states of its own (search.c: split_parts) */
    int split_min;
    int n_split;
    struct mt_state *split[MT_SPLIT_MAX];
    mt_buf split_scratch;
};


/* Makes b hold at least bytes; returns its pointer or NULL when out of memory. */
void *mt_buf_reserve(mt_buf *b, size_t bytes);
/* Like mt_buf_reserve but keeps the first `used` bytes. */
void *mt_buf_grow(mt_buf *b, size_t used, size_t bytes);
void mt_buf_release(mt_buf *b);

/* One decoder step's inputs: row r feeds tokens[r] at position `step`, belongs to
 * sentence row_sent[r], writes its key/value to cache slot slot_base + r and attends
 * over slots hist[r * hist_stride + 0..step]. */
typedef struct {
    int rows, step;
    const int32_t *tokens;
    const int *row_sent;
    const int *hist;
    int hist_stride;
    size_t slot_base;
    const float *cross_kv;          /* from mt_cross_kv */
    const int *src_off, *src_len;   /* per sentence: first row in cross_kv, token count */
    int max_src_len;
    float *attn_out;                /* optional (rows, max_src_len): layer attn_layer's cross-
                                     * attention probabilities averaged over heads */
    int attn_layer;
} mt_decoder_input;

/* The compute type at load (compute.c): the options other than the type (kernel cap,
 * hidden CPU features, split threshold) into m; the type asked for, refused when the CPU
 * cannot run it (DEFAULT stays DEFAULT); after the weights are in, AUTO measured and the
 * packed types packed, with m->compute_detail saying what runs the products. 0 or -1
 * with a message. */
int mt_compute_options(mt_model *m, const mt_model_options *o, char *err, size_t errlen);
int mt_compute_requested(const mt_model *m, mt_compute_type want, mt_compute_type *out, char *err,
                         size_t errlen);
int mt_compute_setup(mt_model *m, mt_compute_type asked, char *err, size_t errlen);

/* Forward pieces (forward.c). Results live in the state's buffers. */
int mt_encode_batch(mt_state *st, int n, const int32_t *const *src, const int *lens,
                    float **enc_out);
/* kv (tokens, decoder_layers * 2d): every decoder layer's cross-attention keys|values. */
void mt_cross_kv(mt_state *st, const float *enc_out, int tokens, float *kv);
/* logits_out (rows, tgt_vocab), raw (bias added, nothing masked). */
int mt_decoder_step(mt_state *st, const mt_decoder_input *in, float **logits_out);


#endif
