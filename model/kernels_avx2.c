/* kernels_avx2.c: AVX2 + FMA twins of kernels.c, for CPUs without AVX-512 (and for tests,
 * through MT_KERNELS=avx2, on CPUs with it). Only this file is compiled for AVX2 (the
 * pragma below); nothing here runs unless mt_kernels_get() found the CPU able to. Tails
 * use masked loads and stores (vmaskmov), never a read or write past the end. Results
 * follow the scalar path's definitions: relu and no activation bit for bit, top-k the same
 * candidates in the same order, sums within float rounding (summation order differs). */
#if !defined(__clang__)
#pragma GCC target("avx2,fma")
#endif

#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"
#include "kernels.h"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#endif

/* Lanes below `left` (all 8 when left >= 8) as an integer mask for vmaskmov. */
static inline __m256i tail8(int left)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(left < 8 ? left : 8), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

static inline __m256 load8(const float *p, __m256i m) { return _mm256_maskload_ps(p, m); }

static inline float hsum8(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline double hsum4d(__m256d v)
{
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

/* mt_exp_nonpositive over 8 lanes (the same polynomial as the scalar and AVX-512 paths). */
static inline __m256 exp8(__m256 x)
{
    x = _mm256_max_ps(x, _mm256_set1_ps(-87.0f));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fmadd_ps(n, _mm256_set1_ps(2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    __m256 y = _mm256_add_ps(_mm256_fmadd_ps(_mm256_mul_ps(p, r), r, r), _mm256_set1_ps(1.0f));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

static float max_avx2(const float *x, int n)
{
    __m256 m = _mm256_set1_ps(-INFINITY);
    for (int i = 0; i < n; i += 8) {
        __m256i k = tail8(n - i);
        m = _mm256_max_ps(m, _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), load8(x + i, k), _mm256_castsi256_ps(k)));
    }
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static float exp_sum_avx2(const float *x, int n, float shift)
{
    __m256 s = _mm256_setzero_ps(), sh = _mm256_set1_ps(shift);
    for (int i = 0; i < n; i += 8) {
        __m256i k = tail8(n - i);
        __m256 e = exp8(_mm256_sub_ps(load8(x + i, k), sh));
        s = _mm256_add_ps(s, _mm256_and_ps(e, _mm256_castsi256_ps(k)));
    }
    return hsum8(s);
}

static float exp_store_sum_avx2(float *x, int n, float shift)
{
    __m256 s = _mm256_setzero_ps(), sh = _mm256_set1_ps(shift);
    for (int i = 0; i < n; i += 8) {
        __m256i k = tail8(n - i);
        __m256 e = exp8(_mm256_sub_ps(load8(x + i, k), sh));
        _mm256_maskstore_ps(x + i, k, e);
        s = _mm256_add_ps(s, _mm256_and_ps(e, _mm256_castsi256_ps(k)));
    }
    return hsum8(s);
}

static void scale_avx2(float *x, int n, float s)
{
    __m256 f = _mm256_set1_ps(s);
    for (int i = 0; i < n; i += 8) {
        __m256i k = tail8(n - i);
        _mm256_maskstore_ps(x + i, k, _mm256_mul_ps(load8(x + i, k), f));
    }
}

static float dot_avx2(const float *a, const float *b, int n)
{
    __m256 s = _mm256_setzero_ps();
    for (int i = 0; i < n; i += 8) {
        __m256i k = tail8(n - i);
        s = _mm256_fmadd_ps(load8(a + i, k), load8(b + i, k), s);
    }
    return hsum8(s);
}

static void axpy_avx2(float *y, float a, const float *x, int n)
{
    __m256 f = _mm256_set1_ps(a);
    for (int i = 0; i < n; i += 8) {
        __m256i k = tail8(n - i);
        _mm256_maskstore_ps(y + i, k, _mm256_fmadd_ps(f, load8(x + i, k), load8(y + i, k)));
    }
}

/* Bias and relu in one pass, rounding as the scalar code; other activations per element
 * through mt_activation (libm), as on the other paths. */
static void bias_act_avx2(float *y, int rows, int ld, int cols, const float *b, int act)
{
    int relu = act == MT_ACT_RELU + 1, other = act && !relu;
    __m256 zero = _mm256_setzero_ps();
    for (int r = 0; r < rows; r++) {
        float *row = y + (size_t)r * (size_t)ld;
        for (int j = 0; j < cols; j += 8) {
            __m256i k = tail8(cols - j);
            __m256 v = load8(row + j, k);
            if (b)
                v = _mm256_add_ps(v, load8(b + j, k));
            if (relu)
                v = _mm256_max_ps(v, zero);
            _mm256_maskstore_ps(row + j, k, v);
        }
        if (other)
            for (int j = 0; j < cols; j++)
                row[j] = mt_activation(row[j], act);
    }
}

/* 8 tokens at a time; only lanes that beat the k-th best held (or any finite lane while
 * fewer than k are held) go through mt_keep_best, in token order, as the scalar scan. */
static int top_k_avx2(const float *x, int n, float lse, float cum, int k, int row, mt_candidate *best)
{
    int got = 0;
    if (k < 1)
        return 0;
    __m256 vl = _mm256_set1_ps(lse), vc = _mm256_set1_ps(cum), ninf = _mm256_set1_ps(-INFINITY);
    float s[8];
    for (int i = 0; i < n; i += 8) {
        __m256i m = tail8(n - i);
        __m256 v = _mm256_blendv_ps(ninf, load8(x + i, m), _mm256_castsi256_ps(m));
        __m256 sc = _mm256_add_ps(vc, _mm256_sub_ps(v, vl));
        unsigned hit = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(v, ninf, _CMP_NEQ_OQ));
        if (got == k)
            hit &= (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(sc, _mm256_set1_ps(best[k - 1].score), _CMP_GT_OQ));
        if (!hit)
            continue;
        _mm256_storeu_ps(s, sc);
        for (; hit; hit &= hit - 1) {
            int l = __builtin_ctz(hit);
            mt_keep_best(best, &got, k, (mt_candidate){s[l], row, i + l});
        }
    }
    return got;
}

/* R rows of x against C rows of w (R <= 4, C <= 2 after inlining: 8 accumulators of the
 * 16 registers AVX2 has). */
static inline __attribute__((always_inline)) void few_rows_block(const float *x, int k, const float *w, float *y,
                                                                 int ldy, const int R, const int C)
{
    __m256 acc[4][2];
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++)
            acc[r][c] = _mm256_setzero_ps();
    for (int i = 0; i < k; i += 8) {
        __m256i mk = tail8(k - i);
        __m256 wv[2];
        for (int c = 0; c < C; c++)
            wv[c] = load8(w + (size_t)c * (size_t)k + i, mk);
        for (int r = 0; r < R; r++) {
            __m256 xv = load8(x + (size_t)r * (size_t)k + i, mk);
            for (int c = 0; c < C; c++)
                acc[r][c] = _mm256_fmadd_ps(xv, wv[c], acc[r][c]);
        }
    }
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++)
            y[(size_t)r * (size_t)ldy + (size_t)c] = hsum8(acc[r][c]);
}

static void gemm_few_rows_avx2(const float *x, int m, int k, const float *w, int n, float *y, int ldy)
{
    for (int r = 0; r < m; r += 4) {
        const float *xr = x + (size_t)r * (size_t)k;
        float *yr = y + (size_t)r * (size_t)ldy;
        int rows = m - r < 4 ? m - r : 4;
        for (int c = 0; c < n; c += 2) {
            const float *wc = w + (size_t)c * (size_t)k;
            int two = n - c >= 2;
            switch (rows * 2 + two) {
            case 9: few_rows_block(xr, k, wc, yr + c, ldy, 4, 2); break;
            case 8: few_rows_block(xr, k, wc, yr + c, ldy, 4, 1); break;
            case 7: few_rows_block(xr, k, wc, yr + c, ldy, 3, 2); break;
            case 6: few_rows_block(xr, k, wc, yr + c, ldy, 3, 1); break;
            case 5: few_rows_block(xr, k, wc, yr + c, ldy, 2, 2); break;
            case 4: few_rows_block(xr, k, wc, yr + c, ldy, 2, 1); break;
            case 3: few_rows_block(xr, k, wc, yr + c, ldy, 1, 2); break;
            default: few_rows_block(xr, k, wc, yr + c, ldy, 1, 1); break;
            }
        }
    }
}

/* The scalar add_norm 8 lanes at a time: sums in double (two 4-lane halves). */
static void add_norm_avx2(float *x, const float *delta, int rows, int d, const float *gamma, const float *beta)
{
    for (int i = 0; i < rows; i++) {
        float *r = x + (size_t)i * (size_t)d;
        const float *dr = delta + (size_t)i * (size_t)d;
        __m256d s = _mm256_setzero_pd();
        for (int j = 0; j < d; j += 8) {
            __m256i mk = tail8(d - j);
            __m256 v = _mm256_and_ps(_mm256_add_ps(load8(r + j, mk), load8(dr + j, mk)), _mm256_castsi256_ps(mk));
            _mm256_maskstore_ps(r + j, mk, v);
            s = _mm256_add_pd(s, _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)),
                                               _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1))));
        }
        double mean = hsum4d(s) / d;
        __m256d m = _mm256_set1_pd(mean), var = _mm256_setzero_pd();
        for (int j = 0; j < d; j += 8) {
            __m256i mk = tail8(d - j);
            __m256 v = load8(r + j, mk);
            __m256d a = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)), m);
            __m256d b = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)), m);
            /* masked-off lanes hold 0 - mean: keep them out of the sum */
            __m256i lo = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(mk));
            __m256i hi = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(mk, 1));
            a = _mm256_and_pd(a, _mm256_castsi256_pd(lo));
            b = _mm256_and_pd(b, _mm256_castsi256_pd(hi));
            var = _mm256_fmadd_pd(a, a, _mm256_fmadd_pd(b, b, var));
        }
        __m256 inv = _mm256_set1_ps((float)(1.0 / sqrt(hsum4d(var) / d + 1e-5))), mu = _mm256_set1_ps((float)mean);
        for (int j = 0; j < d; j += 8) {
            __m256i mk = tail8(d - j);
            __m256 v = _mm256_mul_ps(_mm256_sub_ps(load8(r + j, mk), mu), inv);
            _mm256_maskstore_ps(r + j, mk, _mm256_fmadd_ps(v, load8(gamma + j, mk), load8(beta + j, mk)));
        }
    }
}

static void dots_avx2(const float *q, const float *const *keys, int n, int len, float *out)
{
    for (int i = 0; i < n; i++)
        out[i] = dot_avx2(q, keys[i], len);
}

/* Rows of up to 32 floats at a time: the sum stays in 4 registers over all n rows. */
static void weighted_rows_avx2(const float *w, const float *const *rows, int n, int len, float *out)
{
    for (int c = 0; c < len; c += 32) {
        __m256 acc[4];
        __m256i mk[4];
        int parts = len - c >= 32 ? 4 : (len - c + 7) / 8;
        for (int p = 0; p < parts; p++) {
            acc[p] = _mm256_setzero_ps();
            mk[p] = tail8(len - c - 8 * p);
        }
        for (int i = 0; i < n; i++) {
            __m256 f = _mm256_set1_ps(w[i]);
            for (int p = 0; p < parts; p++)
                acc[p] = _mm256_fmadd_ps(f, load8(rows[i] + c + 8 * p, mk[p]), acc[p]);
        }
        for (int p = 0; p < parts; p++)
            _mm256_maskstore_ps(out + c + 8 * p, mk[p], acc[p]);
    }
}

const mt_kernels mt_kernels_avx2 = {
    .name = "avx2", .max = max_avx2, .exp_sum = exp_sum_avx2, .exp_store_sum = exp_store_sum_avx2,
    .scale = scale_avx2, .dot = dot_avx2, .axpy = axpy_avx2, .bias_act = bias_act_avx2,
    .top_k = top_k_avx2, .gemm_few_rows = gemm_few_rows_avx2, .add_norm = add_norm_avx2,
    .dots = dots_avx2, .weighted_rows = weighted_rows_avx2,
};

#if defined(__clang__)
#pragma clang attribute pop
#endif
