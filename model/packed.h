/* packed.h: bfloat16 and int8 matrix products through oneDNN's matmul primitive
 * (internal to model/): the CPU check and the packing in packed.c, the products in
 * packed_run.c, the conversion and epilogue kernels in packed_scalar.c / packed_avx512.c.
 *
 * A weight matrix W (n, k) (PyTorch's Linear layout) is converted once, at load, into
 * bfloat16, or into int8 with one symmetric float scale per output row, and reordered
 * into the blocked layout oneDNN's brgemm kernels ask for. It is cut into column blocks
 * (output features) that a state's threads share; one packed copy serves every state.
 *
 * A product y (m, n) = act(x (m, k) . W^T + b) converts x once per call: bfloat16 rounds
 * to nearest even; int8 quantizes every row on the fly to u8 around 128 with its own
 * scale (u8 x s8 is the pair VNNI's brgemm takes without oneDNN scales, which would
 * send it to the slow gemm:jit path), and our epilogue applies the two scales, the
 * 128 x column-sum compensation, the bias and the activation. Primitives are created
 * for concrete row counts (at most MT_PACKED_MAX_ROWS; more rows are chunked), never
 * for a runtime row count (which also falls back to gemm:jit), and cached per state.
 *
 * Thread-safety: an mt_packed is read-only after mt_packed_create and shared by any
 * number of threads. An mt_packed_ctx belongs to one state (one driving thread at a
 * time); its tasks run on the state's pool. Every call into oneDNN runs with one
 * OpenMP thread: the parallelism is ours, across column blocks and row chunks.
 *
 * What the CPU offers: int8 needs VNNI (AVX-512 VNNI, AVX-VNNI or AMX): without it
 * oneDNN multiplies u8 x s8 pairs into saturating 16-bit sums. bfloat16 needs a oneDNN
 * brgemm kernel for it (AVX-512 BF16 or AMX). mt_model_options.cpu_hide (MT_CPU_HIDE=
 * vnni,bf16,amx) hides features from this check, so tests can force the fallbacks on any
 * machine.
 */
#ifndef MT_PACKED_H
#define MT_PACKED_H

#include <stddef.h>
#include <stdint.h>

#include "kernels.h"
#include "model.h"
#include "pool.h"

enum { MT_PACKED_MAX_ROWS = 128 };

typedef struct mt_packed mt_packed;
typedef struct mt_packed_ctx mt_packed_ctx;

/* 1 when `type` (MT_COMPUTE_BFLOAT16 or MT_COMPUTE_INT8) runs on a fast oneDNN kernel on
 * this CPU; else 0 with the reason in why[whylen]. cpu_hide (mt_model_options, may be
 * NULL) lists features taken as absent. impl (may be NULL) gets the kernel's name as
 * oneDNN reports it (impl_info_str). */
int mt_packed_available(mt_compute_type type, const char *cpu_hide, char *impl, size_t impl_len, char *why,
                        size_t whylen);
/* 1 when hide is NULL or a comma-separated list of vnni, bf16 and amx. */
int mt_packed_cpu_hide_valid(const char *hide);

/* oneDNN's version, e.g. "2.6.3". */
const char *mt_packed_library_version(void);

/* Packs w (n, k) for `type`; NULL with a message when oneDNN refuses or memory runs out. */
mt_packed *mt_packed_create(mt_compute_type type, const float *w, int n, int k, char *err, size_t errlen);
void mt_packed_free(mt_packed *p);
/* Bytes the packed copy holds (weights, scales, compensation). */
size_t mt_packed_bytes(const mt_packed *p);
int mt_packed_block_cols(const mt_packed *p); /* width of the column blocks */

/* The oneDNN engine and one stream per task for `slots` concurrent tasks (a state's
 * thread count), made once when the state is created, never inside a product; more
 * tasks than slots get streams on first use. NULL with a message on failure. */
mt_packed_ctx *mt_packed_ctx_create(int slots, char *err, size_t errlen);
void mt_packed_ctx_free(mt_packed_ctx *c);

/* y (m, n) = act(x (m, k) . W^T + b) with act 0 (none) or MT_ACT_* + 1; b may be NULL.
 * Split into at most `threads` tasks run on the caller and pool's free helpers (pool NULL:
 * the calling thread alone). kern picks the scalar or the AVX-512 conversion and epilogue.
 * 0, or -1 with a message in err. */
int mt_packed_linear(mt_packed_ctx *c, mt_pool *pool, int threads, const mt_kernels *kern, const mt_packed *p,
                     const float *x, int m, const float *b, float *y, int act, char *err, size_t errlen);

/* The oneDNN implementation the ctx multiplies `rows` rows of p with (creates the
 * primitive if needed), e.g. "brg:avx512_core_bf16"; NULL with a message on failure. */
const char *mt_packed_impl(mt_packed_ctx *c, const mt_packed *p, int rows, char *err, size_t errlen);

/* The oneDNN implementation of the first primitive this ctx created that is not a fast
 * brgemm kernel (a silent fallback to gemm:jit or ref), or NULL when there was none. */
const char *mt_packed_slow_impl(const mt_packed_ctx *c);

/* Conversion and epilogue kernels (scalar in packed_scalar.c, AVX-512 in packed_avx512.c). */
typedef struct {
    /* out[i] = x[i] rounded to bfloat16, nearest even (NaN stays NaN) */
    void (*to_bf16)(const float *x, uint16_t *out, size_t n);
    /* q[i] = 128 + round(x[i] / s), s = max|x| / 127 (1 when x is all zero); returns s */
    float (*quant_u8)(const float *x, int k, uint8_t *q);
    /* y[r, j] = act(acc[r, j] + b[j]); act: 0 none, 1 relu */
    void (*epi_f32)(const float *acc, int ld_acc, float *y, int ldy, int rows, int cols, const float *b,
                    int relu);
    /* y[r, j] = act((acc[r, j] - 128 colsum[j]) ws[j] xs[r] + b[j]) */
    void (*epi_s32)(const int32_t *acc, int ld_acc, float *y, int ldy, int rows, int cols, const float *xs,
                    const float *ws, const int32_t *colsum, const float *b, int relu);
} mt_packed_kernels;

extern const mt_packed_kernels mt_packed_kernels_scalar, mt_packed_kernels_avx512;
/* The table that goes with kern's choice (scalar kernels: scalar conversion too). */
const mt_packed_kernels *mt_packed_kernels_for(const mt_kernels *kern);

#endif
