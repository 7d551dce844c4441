/* kernels.h: the element-wise and reduction kernels of the forward pass and the search
 * (internal to model/), each with a plain scalar version and a vectorised twin chosen at
 * run time from the CPU's features (never at build time).
 *
 * Thread-safety: the tables are constant; every kernel works only on its arguments.
 *
 * Selection: mt_kernels_select(cap) takes the cap a program passed in mt_model_options
 * (MT_KERNELS=scalar|avx2|avx512|auto, read by config/ or main) so tests and users can
 * force a fallback; asking for a path the CPU lacks gives the best one below it that the
 * CPU has. The model picks its table once at load. */
#ifndef MT_KERNELS_H
#define MT_KERNELS_H

#include <stddef.h>

enum { MT_ISA_SCALAR, MT_ISA_AVX2, MT_ISA_AVX512, MT_ISA_COUNT };

/* One search candidate: a hypothesis row extended by a token, with its total score. */
typedef struct {
    float score;
    int row, token;
} mt_candidate;

typedef struct {
    const char *name; /* "scalar", "avx2", "avx512" */
    /* max of x[0..n), n >= 1 */
    float (*max)(const float *x, int n);
    /* sum of exp(x[i] - shift) over i < n, for x[i] <= shift (nothing stored) */
    float (*exp_sum)(const float *x, int n, float shift);
    /* x[i] = exp(x[i] - shift); returns their sum */
    float (*exp_store_sum)(float *x, int n, float shift);
    /* x[i] *= s */
    void (*scale)(float *x, int n, float s);
    /* sum of a[i] * b[i] */
    float (*dot)(const float *a, const float *b, int n);
    /* y[i] += a * x[i] */
    void (*axpy)(float *y, float a, const float *x, int n);
    /* rows of y (stride ld, cols wide) = act(y + b); b may be NULL; act 0 = none or
     * MT_ACT_* + 1 */
    void (*bias_act)(float *y, int rows, int ld, int cols, const float *b, int act);
    /* The k best of score[v] = cum + (x[v] - lse) over v < n, skipping x[v] = -inf, into
     * best (score descending, smaller v first on ties), each tagged with row; returns how
     * many (<= k). Same result as feeding every v in order to mt_keep_best. */
    int (*top_k)(const float *x, int n, float lse, float cum, int k, int row, mt_candidate *best);
    /* y[r * ldy + j] = sum over i < k of x[r * k + i] * w[j * k + i], for r < m, j < n: a
     * product of few rows (m <= MT_FEW_ROWS) with a Linear weight as stored, (n, k)
     * row-major, reading the weights once and never repacking them */
    void (*gemm_few_rows)(const float *x, int m, int k, const float *w, int n, float *y, int ldy);
    /* each of `rows` rows of x (width d) = LayerNorm(x + delta) with gamma, beta and eps
     * 1e-5 (PyTorch's default): the residual add and the norm in one pass over the row;
     * mean and variance summed in double */
    void (*add_norm)(float *x, const float *delta, int rows, int d, const float *gamma, const float *beta);
    /* attention over n keys of len floats each (anywhere in memory, e.g. gathered cache
     * slots): out[i] = q . keys[i] */
    void (*dots)(const float *q, const float *const *keys, int n, int len, float *out);
    /* out[0..len) = sum over i < n of w[i] * rows[i][0..len) */
    void (*weighted_rows)(const float *w, const float *const *rows, int n, int len, float *out);
} mt_kernels;

/* Rows up to which the forward pass uses gemm_few_rows rather than OpenBLAS's sgemm,
 * which copies the whole weight matrix into its packed layout on every call (70% of the
 * time of one-sentence beam-4 decoding). */
enum { MT_FEW_ROWS = 8 };

/* The table for isa, or NULL when this CPU cannot run it. */
const mt_kernels *mt_kernels_get(int isa);
/* The best table this CPU runs at most cap ("scalar", "avx2", "avx512"; NULL, "" or
 * "auto": no cap); NULL for another name. */
const mt_kernels *mt_kernels_select(const char *cap);
/* 1 when the running CPU has what path isa needs. */
int mt_kernels_cpu_has(int isa);

/* Inserts c into best[0..*n) (score descending, then arrival order), keeping at most k. */
void mt_keep_best(mt_candidate *best, int *n, int k, mt_candidate c);

/* Scalar helpers shared by both paths. */
float mt_exp_nonpositive(float x);
float mt_activation(float v, int act);

/* The vectorised tables (kernels_avx2.c, kernels_avx512.c). */
extern const mt_kernels mt_kernels_avx2, mt_kernels_avx512;

#endif
