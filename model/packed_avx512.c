/* packed_avx512.c: AVX-512 twins of packed_scalar.c's conversion and epilogue kernels (the
 * bfloat16 rounding, the int8 row quantization, the dequantizing epilogue). Compiled for
 * AVX-512 by the pragma below and run only where mt_kernels_get() found the CPU able to,
 * like kernels_avx512.c. Each gives the same results as its scalar twin: the same
 * operations in the same order, rounding to nearest even in both. */
#if !defined(__clang__)
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl")
#endif

#include <immintrin.h>
#include <stdint.h>

#include "packed.h"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"))), \
                             apply_to = function)
#endif

static inline __mmask16 tail_mask(size_t left)
{
    return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u);
}

/* bfloat16 by integer rounding: u + 0x7fff + (bit 16 of u), then the high half; NaN
 * lanes keep their top bits with the quiet bit set. */
static void to_bf16_avx512(const float *x, uint16_t *out, size_t n)
{
    const __m512i bias = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1), quiet = _mm512_set1_epi32(0x40);
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 k = tail_mask(n - i);
        __m512 v = _mm512_maskz_loadu_ps(k, x + i);
        __m512i u = _mm512_castps_si512(v);
        __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(bias, _mm512_and_si512(_mm512_srli_epi32(u, 16), one)));
        r = _mm512_srli_epi32(r, 16);
        __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(u, 16), quiet);
        _mm256_mask_storeu_epi16(out + i, k, _mm512_cvtepi32_epi16(r));
    }
}

static float quant_u8_avx512(const float *x, int k, uint8_t *q)
{
    const __m512 sign = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
    __m512 m = _mm512_setzero_ps();
    for (int i = 0; i < k; i += 16) {
        __m512 v = _mm512_maskz_loadu_ps(tail_mask((size_t)(k - i)), x + i);
        m = _mm512_max_ps(m, _mm512_and_ps(v, sign));
    }
    float amax = _mm512_reduce_max_ps(m);
    float s = amax > 0.0f ? amax / 127.0f : 1.0f, inv = amax > 0.0f ? 127.0f / amax : 1.0f;
    const __m512 f = _mm512_set1_ps(inv);
    const __m512i off = _mm512_set1_epi32(128);
    for (int i = 0; i < k; i += 16) {
        __mmask16 t = tail_mask((size_t)(k - i));
        __m512i r = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(t, x + i), f)); /* nearest even */
        _mm_mask_storeu_epi8(q + i, t, _mm512_cvtepi32_epi8(_mm512_add_epi32(r, off)));
    }
    return s;
}

static void epi_f32_avx512(const float *acc, int ld_acc, float *y, int ldy, int rows, int cols, const float *b,
                           int relu)
{
    const __m512 zero = _mm512_setzero_ps();
    for (int r = 0; r < rows; r++) {
        const float *a = acc + (size_t)r * (size_t)ld_acc;
        float *o = y + (size_t)r * (size_t)ldy;
        for (int j = 0; j < cols; j += 16) {
            __mmask16 t = tail_mask((size_t)(cols - j));
            __m512 v = _mm512_maskz_loadu_ps(t, a + j);
            if (b)
                v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(t, b + j));
            if (relu)
                v = _mm512_max_ps(v, zero);
            _mm512_mask_storeu_ps(o + j, t, v);
        }
    }
}

static void epi_s32_avx512(const int32_t *acc, int ld_acc, float *y, int ldy, int rows, int cols, const float *xs,
                           const float *ws, const int32_t *colsum, const float *b, int relu)
{
    const __m512 zero = _mm512_setzero_ps();
    for (int r = 0; r < rows; r++) {
        const int32_t *a = acc + (size_t)r * (size_t)ld_acc;
        float *o = y + (size_t)r * (size_t)ldy;
        const __m512 sx = _mm512_set1_ps(xs[r]);
        for (int j = 0; j < cols; j += 16) {
            __mmask16 t = tail_mask((size_t)(cols - j));
            __m512i comp = _mm512_slli_epi32(_mm512_maskz_loadu_epi32(t, colsum + j), 7); /* 128 colsum */
            __m512i d = _mm512_sub_epi32(_mm512_maskz_loadu_epi32(t, a + j), comp);
            __m512 v = _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(d), _mm512_maskz_loadu_ps(t, ws + j)), sx);
            if (b)
                v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(t, b + j));
            if (relu)
                v = _mm512_max_ps(v, zero);
            _mm512_mask_storeu_ps(o + j, t, v);
        }
    }
}

#if defined(__clang__)
#pragma clang attribute pop
#endif

const mt_packed_kernels mt_packed_kernels_avx512 = {to_bf16_avx512, quant_u8_avx512, epi_f32_avx512,
                                                    epi_s32_avx512};
