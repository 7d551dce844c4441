/* model.h: the Transformer translation model (Hugging Face MarianMT / OPUS-MT layout).
 *
 * Thread-safety: an mt_model is read-only after mt_model_load() returns and may be
 * shared by any number of threads. An mt_state belongs to one thread at a time:
 * every call that takes a state may run concurrently with calls on other states.
 *
 * Errors: constructors return NULL and write a message into err[errlen]; other calls
 * return an mt_status (status.h: MT_OK or a negative MT_ERR_*), with
 * mt_state_error() giving text.
 *
 * Environment: the library reads no environment variable. What used to be read here
 * (MT_COMPUTE_TYPE, MT_KERNELS, MT_CPU_HIDE, MT_SPLIT_MIN, MT_BLAS_CORETYPE) comes in
 * through mt_model_options and mt_process_setup(): config/ reads those names (one
 * precedence: flag > environment > file > default) and the programs pass them down.
 */
#ifndef MT_MODEL_H
#define MT_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "status.h" /* mt_status: MT_OK, MT_ERR_INVALID, MT_ERR_NOMEM, MT_ERR_CANCELLED */

typedef struct mt_model mt_model; /* weights + hyperparameters, shared read-only */
typedef struct mt_state mt_state; /* one worker's scratch: activations, caches, beams */


/* Hyperparameters as read from config.json / generation_config.json. */
typedef struct {
    int d_model, encoder_layers, decoder_layers, encoder_heads, decoder_heads;
    int encoder_ffn_dim, decoder_ffn_dim;
    int src_vocab_size;       /* rows of the encoder embedding */
    int tgt_vocab_size;       /* rows of the decoder embedding and of the logits */
    int pad_id, eos_id, decoder_start_id;
    int max_positions;        /* max_position_embeddings */
    int scale_embedding;      /* 1: embeddings are multiplied by sqrt(d_model) */
    int default_beam_size;    /* num_beams from generation_config.json/config.json, else 4 */
    int default_max_length;   /* max_length from generation_config.json/config.json, else 256 */
    float default_length_penalty; /* length_penalty from the same files, else 1.0 */
    char activation[16];      /* "relu", "gelu", "swish", "quick_gelu", "gelu_new" */
    char positions[16];       /* where the position table came from: "huggingface" (10000^(2i/d),
                               * the default), "marian" (tensor2tensor timescales, config.json
                               * "positions_formula": "marian") or "stored" (embed_positions) */
} mt_model_info;

/* Arithmetic the matrix products use. DEFAULT: what the directory stores (programs map
 * MT_COMPUTE_TYPE to a type before loading): F32/F16/BF16 weights run float32, I8 weights
 * (tools/quantize_model.py) run int8, or float32 on a CPU without an int8 path. FLOAT32: the
 * exact path (OpenBLAS and our kernels). BFLOAT16 and INT8 (per-row weight scales,
 * activations quantized per row on the fly) run every Linear and the output projection
 * through oneDNN on weights packed once at load; a type the CPU cannot run fast is
 * refused at load with "not available on this CPU" (int8 needs VNNI, bfloat16 a oneDNN
 * bf16 kernel). AUTO: the fastest type measured at load on the running CPU. */
typedef enum {
    MT_COMPUTE_DEFAULT, MT_COMPUTE_FLOAT32, MT_COMPUTE_BFLOAT16, MT_COMPUTE_INT8, MT_COMPUTE_AUTO
} mt_compute_type;

typedef struct {
    mt_compute_type compute_type; /* see above; MT_COMPUTE_DEFAULT unless asked */
    const char *kernels;  /* at most this kernel path: "scalar" (also keeps float32 on OpenBLAS),
                           * "avx2", "avx512"; NULL, "" or "auto": the best this CPU runs
                           * (MT_KERNELS); another name is refused at load. Borrowed for the load */
    const char *cpu_hide; /* CPU features the compute-type check takes as absent, a comma-separated
                           * list of vnni, bf16, amx (MT_CPU_HIDE), so tests can force the
                           * fallbacks; NULL: none. Borrowed for the load */
    int split_min;        /* a state splits a batch by sentence when it has at least this many
                           * sentences per thread; 0 never splits; < 0: the default, 1 (MT_SPLIT_MIN) */
} mt_model_options;

/* compute_type DEFAULT, kernels and cpu_hide NULL, split_min -1. */
void mt_model_options_default(mt_model_options *opts);
/* "float32" | "bfloat16" | "int8" | "auto" | "default" -> *out; 0, or -1 for other names. */
int mt_compute_type_parse(const char *name, mt_compute_type *out);
const char *mt_compute_type_name(mt_compute_type type);

/* Loads DIR/config.json (+ generation_config.json) and DIR/model.safetensors.
 * Weights are converted once into one aligned arena that is then made read-only.
 * mt_model_load is mt_model_load_ex with default options. */
mt_model *mt_model_load(const char *dir, char *err, size_t errlen);
mt_model *mt_model_load_ex(const char *dir, const mt_model_options *opts, char *err, size_t errlen);
/* The compute type the model runs (never DEFAULT or AUTO: what they resolved to). */
mt_compute_type mt_model_compute_type(const mt_model *model);
/* One line for logs: the type, the library and kernel running the products (oneDNN's
 * impl name for bfloat16 / int8) and, for AUTO, the timings it chose by. */
const char *mt_model_compute_detail(const mt_model *model);
void mt_model_free(mt_model *model);
const mt_model_info *mt_model_get_info(const mt_model *model);

/* Called between decoding steps; returning non-zero drops sentence `index`
 * (its result gets status MT_ERR_CANCELLED) so it stops consuming compute. */
typedef int (*mt_cancel_fn)(void *user, int index);

typedef struct {
    int beam_size;          /* 1 = greedy */
    float length_penalty;   /* alpha: final score = sum(log p) / length^alpha */
    int max_length;         /* at most this many decoding steps, eos included */
    float max_length_factor;/* also at most factor * source length + 10 steps; 0 disables */
    int n_best;             /* hypotheses returned per sentence, <= beam_size */
    const int32_t *bad_ids; /* extra target ids never produced (pad never is) */
    int n_bad_ids;
    mt_cancel_fn cancel;    /* optional */
    void *cancel_user;
    /* Decoding controls (model/decode_opts.c); the defaults change nothing. Names follow
     * CTranslate2's TranslationOptions. Sentences with different values must not share
     * a batch (target_prefix excepted: it is per sentence). */
    int sampling_topk;          /* 1: no sampling (default); 0: sample from the whole vocabulary;
                                 * k > 1: from the k most likely. Sampling needs beam_size 1 */
    float sampling_topp;        /* (0, 1]: sample from the smallest most-likely set of mass >= p */
    float sampling_temperature; /* > 0: logits are divided by it before sampling (default 1) */
    uint64_t seed;              /* sampling seed: sentence i draws from (seed, sentence_index[i], step) */
    const uint64_t *sentence_index; /* per sentence, its index in the request; NULL: its batch
                                 * position. Makes samples independent of batch composition */
    int no_repeat_ngram_size;   /* > 0: no n-gram of this size occurs twice in an output */
    float repetition_penalty;   /* >= 1 (1 = off): logits of generated tokens divided (if > 0)
                                 * or multiplied (if < 0) by it, as CTranslate2 and HF do */
    int min_length;             /* eos is not allowed before this many tokens (eos excluded),
                                 * except at the step limit */
    const int32_t *const *target_prefix; /* per sentence, ids the output starts with (NULL each
                                 * or all: none); with beams the rest is searched as usual */
    const int *target_prefix_len;
    int return_scores;          /* fill mt_hypothesis.token_scores */
    int return_alignments;      /* fill mt_hypothesis.alignment */
    int alignment_layer;        /* decoder layer whose cross-attention aligns; < 0 counts from
                                 * the end (default -1: the last) */
    int replace_unknowns;       /* shared vocabulary only: an unk_id in an output becomes the
                                 * source id it is aligned to (unless that is unk_id too) */
    int32_t unk_id;             /* the tokenizer's <unk> id (default -1: none) */
} mt_search_options;

/* Fills opts with the model's defaults (beam, length penalty, max length, n_best 1). */
void mt_search_options_default(const mt_model *model, mt_search_options *opts);
/* The checks mt_translate_ids makes on opts' decoding controls (ranges, sampling needs
 * beam 1, alignment_layer, replace_unknowns), without target_prefix (per sentence):
 * MT_OK, or MT_ERR_INVALID with a message, so a caller can refuse a request up front. */
int mt_search_options_check(const mt_model_info *info, const mt_search_options *opts, char *err, size_t errlen);

/* One hypothesis; ids exclude the start token and the final eos. */
typedef struct {
    const int32_t *ids; /* borrowed from the state, valid until its next search */
    int length;
    float score;        /* normalised: sum of log-probs / length^alpha (eos counted) */
    const float *token_scores;  /* return_scores: length + 1 log-probs (the last is eos's), as
                                 * the search saw them (after the controls); else NULL */
    const int32_t *alignment;   /* return_alignments: per id, the source position (0-based, in
                                 * the source ids) its step attended to most; else NULL */
} mt_hypothesis;

typedef struct {
    int status;             /* MT_OK or MT_ERR_CANCELLED */
    int n_hyps;             /* n_best, best first */
    const mt_hypothesis *hyps;
} mt_result;

/* The compute threads of a process: one pool, shared by every state of every model, so
 * that a process runs workers x threads compute threads however many models it serves.
 * `helpers` threads are started (0: none; every product then runs on its caller). Any
 * number of states may drive one pool at once. Free it after the states that use it. */
typedef struct mt_pool mt_pool;
mt_pool *mt_pool_create(int helpers);
void mt_pool_free(mt_pool *pool);

/* Creates a worker state whose work is split into `threads` tasks. With a pool the
 * tasks run on the calling thread and the pool's free helpers (borrowed: it must outlive
 * the state); with pool NULL the state starts threads - 1 helpers of its own. A batch of
 * at least `threads` sentences is split by sentence (each thread searches its share, on
 * one-thread states the state owns; results are the same); a smaller one by product.
 * The model's split_min (mt_model_options) sets how many sentences a share needs. A model
 * with packed weights gets its oneDNN engine and streams here, never in a product. */
mt_state *mt_state_create_in(const mt_model *model, mt_pool *pool, int threads, char *err,
                             size_t errlen);
/* mt_state_create_in(model, NULL, threads, ...). */
mt_state *mt_state_create(const mt_model *model, int threads, char *err, size_t errlen);
void mt_state_free(mt_state *state);
/* Scratch memory grows to the largest batch seen. When the state holds more than `keep`
 * bytes of it, frees all of it (it is allocated again as needed) and returns the bytes
 * freed; otherwise returns 0. Results of the state's last search become invalid. */
size_t mt_state_trim(mt_state *state, size_t keep);
const char *mt_state_error(const mt_state *state);

/* Translates n source id sequences (each already ending in eos) in one batch.
 * results[i] is filled for each sentence; its memory belongs to the state. */
int mt_translate_ids(mt_state *state, const mt_search_options *opts, int n,
                     const int32_t *const *src_ids, const int *src_lens, mt_result *results);

/* Name of the BLAS kernel family in use, e.g. "SkylakeX" (for logs). */
const char *mt_blas_core_name(void);

/* Process setup: call once, first thing in main(), before any thread starts. It makes
 * OpenBLAS single-threaded (states split products across their own threads; OpenBLAS
 * threads on top would oversubscribe the cores) and, on an AVX-512 CPU where OpenBLAS
 * would use older kernels (misdetected, or OPENBLAS_CORETYPE pinned to e.g. Haswell),
 * re-executes the program (argv; NULL: never) with OPENBLAS_CORETYPE=SkylakeX.
 * blas_coretype is the program's MT_BLAS_CORETYPE: NAME forces a family, "keep" opts out,
 * NULL / "" / "auto" chooses as above. Before re-executing it sets MT_BLAS_CORETYPE=keep,
 * so the new image, passing that back, never re-executes. Returns when nothing needed
 * changing (or exec failed). mt_model_load does none of this. */
void mt_process_setup(char **argv, const char *blas_coretype);

#endif
