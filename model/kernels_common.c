/* kernels_common.c: the scalar helpers every kernel table uses (kernels.h), apart from
 * the tables so that the vector tables depend on them and not on kernels.c's choice. */
#include <math.h>
#include <stdint.h>

#include "internal.h"
#include "kernels.h"

/* exp(x) for x <= 0 (Cephes' expf: range reduction by ln 2, degree-6 polynomial, about
 * 1 ulp), without calls or branches. The AVX-512 twin evaluates the same polynomial. */
float mt_exp_nonpositive(float x)
{
    x = x < -87.0f ? -87.0f : x;
    float n = -(float)(int)(0.5f - x * 1.44269504088896341f); /* round(x / ln 2); x <= 0 */
    float r = x - n * 0.693359375f + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    float y = p * r * r + r + 1.0f;
    union {
        uint32_t u;
        float f;
    } scale = {.u = (uint32_t)((int)n + 127) << 23};
    return y * scale.f;
}

float mt_activation(float v, int act)
{
    switch (act) {
    case MT_ACT_RELU + 1:
        return v > 0.0f ? v : 0.0f;
    case MT_ACT_GELU + 1:
        return 0.5f * v * (1.0f + erff(v * (float)M_SQRT1_2));
    case MT_ACT_SWISH + 1:
        return v / (1.0f + expf(-v));
    case MT_ACT_QUICK_GELU + 1:
        return v / (1.0f + expf(-1.702f * v));
    case MT_ACT_GELU_TANH + 1:
        return 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    default:
        return v;
    }
}

void mt_keep_best(mt_candidate *best, int *n, int k, mt_candidate c)
{
    if (k < 1 || (*n == k && !(c.score > best[k - 1].score)))
        return;
    int i = *n < k ? (*n)++ : k - 1;
    while (i > 0 && best[i - 1].score < c.score) {
        best[i] = best[i - 1];
        i--;
    }
    best[i] = c;
}
