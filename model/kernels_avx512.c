/* kernels_avx512.c: AVX-512 twins of kernels.c. This file alone is compiled for
 * AVX-512 (the pragma below); nothing here runs unless mt_kernels_get() found the CPU
 * able to, so the build stays for any x86-64. Tails use masked loads and stores, never a
 * scalar loop or a read past the end. */
#if !defined(__clang__)
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl")
#endif

#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "internal.h"
#include "kernels.h"

#if defined(__clang__) /* clang ignores GCC's pragma: the same target, function by function */
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"))), \
                             apply_to = function)
#endif

static inline __mmask16 tail_mask(int left) { return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u); }

/* mt_exp_nonpositive over 16 lanes. */
static inline __m512 exp16(__m512 x)
{
    x = _mm512_max_ps(x, _mm512_set1_ps(-87.0f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    __m512 y = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.0f));
    __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(y, _mm512_castsi512_ps(e));
}

static float max_avx512(const float *x, int n)
{
    __m512 m = _mm512_set1_ps(-INFINITY);
    for (int i = 0; i < n; i += 16)
        m = _mm512_max_ps(m, _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), tail_mask(n - i), x + i));
    return _mm512_reduce_max_ps(m);
}

static float exp_sum_avx512(const float *x, int n, float shift)
{
    __m512 s = _mm512_setzero_ps(), sh = _mm512_set1_ps(shift);
    for (int i = 0; i < n; i += 16) {
        __mmask16 k = tail_mask(n - i);
        __m512 v = _mm512_maskz_loadu_ps(k, x + i);
        s = _mm512_mask_add_ps(s, k, s, exp16(_mm512_sub_ps(v, sh)));
    }
    return _mm512_reduce_add_ps(s);
}

static float exp_store_sum_avx512(float *x, int n, float shift)
{
    __m512 s = _mm512_setzero_ps(), sh = _mm512_set1_ps(shift);
    for (int i = 0; i < n; i += 16) {
        __mmask16 k = tail_mask(n - i);
        __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), sh));
        _mm512_mask_storeu_ps(x + i, k, e);
        s = _mm512_mask_add_ps(s, k, s, e);
    }
    return _mm512_reduce_add_ps(s);
}

static void scale_avx512(float *x, int n, float s)
{
    __m512 f = _mm512_set1_ps(s);
    for (int i = 0; i < n; i += 16) {
        __mmask16 k = tail_mask(n - i);
        _mm512_mask_storeu_ps(x + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + i), f));
    }
}

static float dot_avx512(const float *a, const float *b, int n)
{
    __m512 s = _mm512_setzero_ps();
    for (int i = 0; i < n; i += 16) {
        __mmask16 k = tail_mask(n - i);
        s = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, a + i), _mm512_maskz_loadu_ps(k, b + i), s);
    }
    return _mm512_reduce_add_ps(s);
}

static void axpy_avx512(float *y, float a, const float *x, int n)
{
    __m512 f = _mm512_set1_ps(a);
    for (int i = 0; i < n; i += 16) {
        __mmask16 k = tail_mask(n - i);
        __m512 v = _mm512_fmadd_ps(f, _mm512_maskz_loadu_ps(k, x + i), _mm512_maskz_loadu_ps(k, y + i));
        _mm512_mask_storeu_ps(y + i, k, v);
    }
}

/* Bias and relu (the bundled models' activation) in one vector pass, exactly as the
 * scalar code rounds; other activations add the bias here and apply the libm function
 * per element (erff/expf/tanhf keep the results equal to PyTorch's). */
static void bias_act_avx512(float *y, int rows, int ld, int cols, const float *b, int act)
{
    int relu = act == MT_ACT_RELU + 1, other = act && !relu;
    __m512 zero = _mm512_setzero_ps();
    for (int r = 0; r < rows; r++) {
        float *row = y + (size_t)r * (size_t)ld;
        for (int j = 0; j < cols; j += 16) {
            __mmask16 k = tail_mask(cols - j);
            __m512 v = _mm512_maskz_loadu_ps(k, row + j);
            if (b)
                v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, b + j));
            if (relu)
                v = _mm512_max_ps(v, zero);
            _mm512_mask_storeu_ps(row + j, k, v);
        }
        if (other)
            for (int j = 0; j < cols; j++)
                row[j] = mt_activation(row[j], act);
    }
}

/* Scores 16 tokens at a time; only lanes that beat the current k-th best (or any finite
 * lane while fewer than k are held) go through mt_keep_best, in token order, so ties
 * resolve exactly as in the scalar scan. Almost every block is rejected by one compare. */
static int top_k_avx512(const float *x, int n, float lse, float cum, int k, int row, mt_candidate *best)
{
    int got = 0;
    if (k < 1)
        return 0;
    __m512 vl = _mm512_set1_ps(lse), vc = _mm512_set1_ps(cum), ninf = _mm512_set1_ps(-INFINITY);
    float s[16];
    for (int i = 0; i < n; i += 16) {
        __mmask16 m = tail_mask(n - i);
        __m512 v = _mm512_mask_loadu_ps(ninf, m, x + i);
        __mmask16 finite = _mm512_cmp_ps_mask(v, ninf, _CMP_NEQ_OQ);
        __m512 sc = _mm512_add_ps(vc, _mm512_sub_ps(v, vl));
        __mmask16 hit = finite;
        if (got == k)
            hit &= _mm512_cmp_ps_mask(sc, _mm512_set1_ps(best[k - 1].score), _CMP_GT_OQ);
        if (!hit)
            continue;
        _mm512_storeu_ps(s, sc);
        for (unsigned h = hit; h; h &= h - 1) {
            int l = __builtin_ctz(h);
            mt_keep_best(best, &got, k, (mt_candidate){s[l], row, i + l});
        }
    }
    return got;
}

/* R rows of x against C rows of w (R, C <= 4, constants after inlining): R x C
 * accumulators of 16 lanes over k, each summed across its lanes at the end. */
static inline __attribute__((always_inline)) void few_rows_block(const float *x, int k, const float *w,
                                                                 float *y, int ldy, const int R, const int C)
{
    __m512 acc[4][4];
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++)
            acc[r][c] = _mm512_setzero_ps();
    for (int i = 0; i < k; i += 16) {
        __mmask16 mk = tail_mask(k - i);
        __m512 wv[4];
        for (int c = 0; c < C; c++)
            wv[c] = _mm512_maskz_loadu_ps(mk, w + (size_t)c * (size_t)k + i);
        for (int r = 0; r < R; r++) {
            __m512 xv = _mm512_maskz_loadu_ps(mk, x + (size_t)r * (size_t)k + i);
            for (int c = 0; c < C; c++)
                acc[r][c] = _mm512_fmadd_ps(xv, wv[c], acc[r][c]);
        }
    }
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++)
            y[(size_t)r * (size_t)ldy + (size_t)c] = _mm512_reduce_add_ps(acc[r][c]);
}

/* Groups of 4 rows of x by groups of 4 rows (outputs) of w: each weight is read once per
 * group of 4 rows, i.e. once for a beam of 4. */
static void gemm_few_rows_avx512(const float *x, int m, int k, const float *w, int n, float *y, int ldy)
{
    for (int r = 0; r < m; r += 4) {
        const float *xr = x + (size_t)r * (size_t)k;
        float *yr = y + (size_t)r * (size_t)ldy;
        int rows = m - r < 4 ? m - r : 4, c = 0;
        for (; c + 4 <= n; c += 4) {
            const float *wc = w + (size_t)c * (size_t)k;
            switch (rows) {
            case 4: few_rows_block(xr, k, wc, yr + c, ldy, 4, 4); break;
            case 3: few_rows_block(xr, k, wc, yr + c, ldy, 3, 4); break;
            case 2: few_rows_block(xr, k, wc, yr + c, ldy, 2, 4); break;
            default: few_rows_block(xr, k, wc, yr + c, ldy, 1, 4); break;
            }
        }
        for (; c < n; c++) /* the last n % 4 outputs, one at a time */
            switch (rows) {
            case 4: few_rows_block(xr, k, w + (size_t)c * (size_t)k, yr + c, ldy, 4, 1); break;
            case 3: few_rows_block(xr, k, w + (size_t)c * (size_t)k, yr + c, ldy, 3, 1); break;
            case 2: few_rows_block(xr, k, w + (size_t)c * (size_t)k, yr + c, ldy, 2, 1); break;
            default: few_rows_block(xr, k, w + (size_t)c * (size_t)k, yr + c, ldy, 1, 1); break;
            }
    }
}

/* The scalar add_norm's arithmetic 16 lanes at a time: sums in double (two 8-lane halves),
 * the normalisation in float with the same operation order. */
static void add_norm_avx512(float *x, const float *delta, int rows, int d, const float *gamma, const float *beta)
{
    for (int i = 0; i < rows; i++) {
        float *r = x + (size_t)i * (size_t)d;
        const float *dr = delta + (size_t)i * (size_t)d;
        __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
        for (int j = 0; j < d; j += 16) {
            __mmask16 mk = tail_mask(d - j);
            __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(mk, r + j), _mm512_maskz_loadu_ps(mk, dr + j));
            _mm512_mask_storeu_ps(r + j, mk, v);
            s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
            s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
        }
        double mean = _mm512_reduce_add_pd(_mm512_add_pd(s0, s1)) / d;
        __m512d m = _mm512_set1_pd(mean), v0 = _mm512_setzero_pd(), v1 = _mm512_setzero_pd();
        for (int j = 0; j < d; j += 16) {
            __mmask16 mk = tail_mask(d - j);
            __m512 v = _mm512_maskz_loadu_ps(mk, r + j);
            __m512d a = _mm512_sub_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(v)), m);
            __m512d b = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))), m);
            /* masked-off lanes are 0 - mean: keep them out of the sum */
            a = _mm512_maskz_mov_pd((__mmask8)(mk & 0xff), a);
            b = _mm512_maskz_mov_pd((__mmask8)(mk >> 8), b);
            v0 = _mm512_fmadd_pd(a, a, v0);
            v1 = _mm512_fmadd_pd(b, b, v1);
        }
        double var = _mm512_reduce_add_pd(_mm512_add_pd(v0, v1));
        __m512 inv = _mm512_set1_ps((float)(1.0 / sqrt(var / d + 1e-5))), mu = _mm512_set1_ps((float)mean);
        for (int j = 0; j < d; j += 16) {
            __mmask16 mk = tail_mask(d - j);
            __m512 v = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, r + j), mu), inv);
            v = _mm512_fmadd_ps(v, _mm512_maskz_loadu_ps(mk, gamma + j), _mm512_maskz_loadu_ps(mk, beta + j));
            _mm512_mask_storeu_ps(r + j, mk, v);
        }
    }
}

/* Sums of the 16 lanes of each of a[0..16), as one vector (element i: a[i]'s sum), in
 * 4 rounds of pairwise adds: pairs of floats, of pairs, then of 128-bit lanes twice. */
static inline __m512 sum16x16(__m512 a[16])
{
    __m512 b[8], c[4], d[2];
    for (int i = 0; i < 8; i++)
        b[i] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]), _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]));
    for (int i = 0; i < 4; i++) {
        __m512d x = _mm512_castps_pd(b[2 * i]), y = _mm512_castps_pd(b[2 * i + 1]);
        c[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)), _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
    }
    for (int i = 0; i < 2; i++)
        d[i] = _mm512_add_ps(_mm512_shuffle_f32x4(c[2 * i], c[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_f32x4(c[2 * i], c[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_add_ps(_mm512_shuffle_f32x4(d[0], d[1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(d[0], d[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

/* Keys of up to 64 floats (a head): q stays in 4 registers, 16 keys share one reduction. */
static void dots_avx512(const float *q, const float *const *keys, int n, int len, float *out)
{
    if (len > 64) {
        for (int i = 0; i < n; i++)
            out[i] = dot_avx512(q, keys[i], len);
        return;
    }
    __m512 qv[4];
    __mmask16 mk[4];
    int parts = (len + 15) / 16;
    for (int p = 0; p < parts; p++) {
        mk[p] = tail_mask(len - 16 * p);
        qv[p] = _mm512_maskz_loadu_ps(mk[p], q + 16 * p);
    }
    for (int i = 0; i < n; i += 16) {
        int m = n - i < 16 ? n - i : 16;
        __m512 acc[16];
        for (int j = 0; j < 16; j++) {
            acc[j] = _mm512_setzero_ps();
            if (j < m)
                for (int p = 0; p < parts; p++)
                    acc[j] = _mm512_fmadd_ps(qv[p], _mm512_maskz_loadu_ps(mk[p], keys[i + j] + 16 * p), acc[j]);
        }
        _mm512_mask_storeu_ps(out + i, tail_mask(m), sum16x16(acc));
    }
}

/* Rows of up to 64 floats: the sum stays in 4 registers over all n rows. */
static void weighted_rows_avx512(const float *w, const float *const *rows, int n, int len, float *out)
{
    for (int c = 0; c < len; c += 64) {
        __m512 acc[4];
        __mmask16 mk[4];
        int parts = len - c >= 64 ? 4 : (len - c + 15) / 16;
        for (int p = 0; p < parts; p++) {
            acc[p] = _mm512_setzero_ps();
            mk[p] = tail_mask(len - c - 16 * p);
        }
        for (int i = 0; i < n; i++) {
            __m512 f = _mm512_set1_ps(w[i]);
            for (int p = 0; p < parts; p++)
                acc[p] = _mm512_fmadd_ps(f, _mm512_maskz_loadu_ps(mk[p], rows[i] + c + 16 * p), acc[p]);
        }
        for (int p = 0; p < parts; p++)
            _mm512_mask_storeu_ps(out + c + 16 * p, mk[p], acc[p]);
    }
}

const mt_kernels mt_kernels_avx512 = {
    .name = "avx512", .max = max_avx512, .exp_sum = exp_sum_avx512, .exp_store_sum = exp_store_sum_avx512,
    .scale = scale_avx512, .dot = dot_avx512, .axpy = axpy_avx512, .bias_act = bias_act_avx512,
    .top_k = top_k_avx512, .gemm_few_rows = gemm_few_rows_avx512, .add_norm = add_norm_avx512,
    .dots = dots_avx512, .weighted_rows = weighted_rows_avx512,
};

#if defined(__clang__)
#pragma clang attribute pop
#endif
