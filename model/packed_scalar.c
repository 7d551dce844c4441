/* packed_scalar.c: the scalar conversion and epilogue kernels of the packed products,
 * the reference that packed_avx512.c is tested against, and the choice between them. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"
#include "packed.h"

/* ---- scalar conversion and epilogue ---- */

static uint16_t bf16_rne(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u); /* NaN: keep it a (quiet) NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static void to_bf16_scalar(const float *x, uint16_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = bf16_rne(x[i]);
}

static float quant_u8_scalar(const float *x, int k, uint8_t *q)
{
    float amax = 0.0f;
    for (int i = 0; i < k; i++)
        amax = fmaxf(amax, fabsf(x[i]));
    float s = amax > 0.0f ? amax / 127.0f : 1.0f, inv = amax > 0.0f ? 127.0f / amax : 1.0f;
    for (int i = 0; i < k; i++)
        q[i] = (uint8_t)(lrintf(x[i] * inv) + 128); /* |x inv| <= 127 up to rounding: in 1..255 */
    return s;
}

static void epi_f32_scalar(const float *acc, int ld_acc, float *y, int ldy, int rows, int cols, const float *b,
                           int relu)
{
    for (int r = 0; r < rows; r++) {
        const float *a = acc + (size_t)r * (size_t)ld_acc;
        float *o = y + (size_t)r * (size_t)ldy;
        for (int j = 0; j < cols; j++) {
            float v = b ? a[j] + b[j] : a[j];
            o[j] = relu ? (v > 0.0f ? v : 0.0f) : v; /* as _mm512_max_ps(v, 0) */
        }
    }
}

static void epi_s32_scalar(const int32_t *acc, int ld_acc, float *y, int ldy, int rows, int cols, const float *xs,
                           const float *ws, const int32_t *colsum, const float *b, int relu)
{
    for (int r = 0; r < rows; r++) {
        const int32_t *a = acc + (size_t)r * (size_t)ld_acc;
        float *o = y + (size_t)r * (size_t)ldy;
        for (int j = 0; j < cols; j++) {
            float v = (float)(a[j] - 128 * colsum[j]) * ws[j] * xs[r];
            v = b ? v + b[j] : v;
            o[j] = relu ? (v > 0.0f ? v : 0.0f) : v;
        }
    }
}

const mt_packed_kernels mt_packed_kernels_scalar = {to_bf16_scalar, quant_u8_scalar, epi_f32_scalar,
                                                    epi_s32_scalar};

const mt_packed_kernels *mt_packed_kernels_for(const mt_kernels *kern)
{
    return kern == &mt_kernels_avx512 ? &mt_packed_kernels_avx512 : &mt_packed_kernels_scalar;
}
