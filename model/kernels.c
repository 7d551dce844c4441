/* kernels.c: the scalar kernels (the reference the vectorised ones are tested against,
 * and the path for CPUs without AVX-512) and the run-time choice between paths. */
#include "kernels.h"

#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static float max_scalar(const float *x, int n)
{
    float m = x[0];
    for (int i = 1; i < n; i++)
        m = x[i] > m ? x[i] : m;
    return m;
}

static float exp_sum_scalar(const float *x, int n, float shift)
{
    float s = 0.0f;
    for (int i = 0; i < n; i++)
        s += mt_exp_nonpositive(x[i] - shift);
    return s;
}

static float exp_store_sum_scalar(float *x, int n, float shift)
{
    float s = 0.0f;
    for (int i = 0; i < n; i++) {
        x[i] = mt_exp_nonpositive(x[i] - shift);
        s += x[i];
    }
    return s;
}

static void scale_scalar(float *x, int n, float s)
{
    for (int i = 0; i < n; i++)
        x[i] *= s;
}

static float dot_scalar(const float *a, const float *b, int n)
{
    float s = 0.0f;
    for (int i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

static void axpy_scalar(float *y, float a, const float *x, int n)
{
    for (int i = 0; i < n; i++)
        y[i] += a * x[i];
}

static void bias_act_scalar(float *y, int rows, int ld, int cols, const float *b, int act)
{
    for (int i = 0; i < rows; i++) {
        float *r = y + (size_t)i * (size_t)ld;
        for (int j = 0; j < cols; j++)
            r[j] = mt_activation(r[j] + (b ? b[j] : 0.0f), act);
    }
}

static int top_k_scalar(const float *x, int n, float lse, float cum, int k, int row, mt_candidate *best)
{
    int got = 0;
    for (int v = 0; v < n; v++) {
        if (x[v] == -INFINITY)
            continue;
        mt_keep_best(best, &got, k, (mt_candidate){cum + (x[v] - lse), row, v});
    }
    return got;
}

/* The plain path: one OpenBLAS matrix-vector product per row (no packing either). */
static void gemm_few_rows_scalar(const float *x, int m, int k, const float *w, int n, float *y, int ldy)
{
    for (int r = 0; r < m; r++)
        cblas_sgemv(CblasRowMajor, CblasNoTrans, n, k, 1.0f, w, k, x + (size_t)r * (size_t)k, 1, 0.0f,
                    y + (size_t)r * (size_t)ldy, 1);
}

static void add_norm_scalar(float *x, const float *delta, int rows, int d, const float *gamma, const float *beta)
{
    for (int i = 0; i < rows; i++) {
        float *r = x + (size_t)i * (size_t)d;
        const float *dr = delta + (size_t)i * (size_t)d;
        double mean = 0.0, var = 0.0;
        for (int j = 0; j < d; j++) {
            r[j] += dr[j];
            mean += r[j];
        }
        mean /= d;
        for (int j = 0; j < d; j++)
            var += (r[j] - mean) * (r[j] - mean);
        float inv = (float)(1.0 / sqrt(var / d + 1e-5));
        float mu = (float)mean;
        for (int j = 0; j < d; j++)
            r[j] = (r[j] - mu) * inv * gamma[j] + beta[j];
    }
}

static void dots_scalar(const float *q, const float *const *keys, int n, int len, float *out)
{
    for (int i = 0; i < n; i++)
        out[i] = dot_scalar(q, keys[i], len);
}

static void weighted_rows_scalar(const float *w, const float *const *rows, int n, int len, float *out)
{
    memset(out, 0, sizeof *out * (size_t)len);
    for (int i = 0; i < n; i++)
        axpy_scalar(out, w[i], rows[i], len);
}

static const mt_kernels scalar_table = {
    .name = "scalar", .max = max_scalar, .exp_sum = exp_sum_scalar, .exp_store_sum = exp_store_sum_scalar,
    .scale = scale_scalar, .dot = dot_scalar, .axpy = axpy_scalar, .bias_act = bias_act_scalar,
    .top_k = top_k_scalar, .gemm_few_rows = gemm_few_rows_scalar, .add_norm = add_norm_scalar,
    .dots = dots_scalar, .weighted_rows = weighted_rows_scalar,
};

int mt_kernels_cpu_has(int isa)
{
    __builtin_cpu_init();
    if (isa == MT_ISA_SCALAR)
        return 1;
    if (isa == MT_ISA_AVX2)
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (isa == MT_ISA_AVX512)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    return 0;
}

static const mt_kernels *const tables[MT_ISA_COUNT] = {&scalar_table, &mt_kernels_avx2, &mt_kernels_avx512};

const mt_kernels *mt_kernels_get(int isa)
{
    if (isa < 0 || isa >= MT_ISA_COUNT || !mt_kernels_cpu_has(isa))
        return NULL;
    return tables[isa];
}

const mt_kernels *mt_kernels_select(const char *cap)
{
    int top = MT_ISA_COUNT - 1;
    if (cap && *cap && strcmp(cap, "auto")) {
        for (top = MT_ISA_COUNT - 1; top >= 0 && strcmp(cap, tables[top]->name); top--)
            ;
        if (top < 0)
            return NULL;
    }
    for (int isa = top; isa > MT_ISA_SCALAR; isa--)
        if (mt_kernels_cpu_has(isa))
            return tables[isa];
    return &scalar_table;
}
