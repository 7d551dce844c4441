/* test_model_kernels.c: every kernel path (AVX-512, AVX2) against the scalar one on odd
 * sizes, unaligned starts and guard values, and the run-time choice of path. */
#include <check.h>
#include <cpuid.h>
#include <math.h>
#include <signal.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "../model/internal.h"
#include "../model/packed.h"
#include "../model/pool.h"
#include "../model/probe.h"
#include "../model/safetensors.h"
#include "model.h"
#include "model_fixtures.h"
#include "tiny_model.h"

/* ---- kernels: every path against the scalar one, odd sizes, unaligned starts, guards ---- */

static const int kernel_sizes[] = {1, 2, 7, 15, 16, 17, 31, 33, 64, 100, 1001};
enum { GUARD = 8 };
static const float guard_value = 12345.5f;

/* n floats at an odd (unaligned) offset of a buffer with guard values either side. */
static float *guarded(float *buf, int n, unsigned seed)
{
    float *x = buf + GUARD + 1;
    for (int i = 0; i < GUARD + 1; i++)
        buf[i] = x[n + i] = guard_value;
    srand(seed);
    for (int i = 0; i < n; i++)
        x[i] = (float)rand() / (float)RAND_MAX * 8.0f - 6.0f;
    return x;
}

static void check_guards(const float *buf, int n)
{
    const float *x = buf + GUARD + 1;
    for (int i = 0; i < GUARD + 1; i++)
        ck_assert_msg(buf[i] == guard_value && x[n + i] == guard_value, "write outside [0, %d)", n);
}

static void assert_close(float got, float want, float rel, const char *what, int n)
{
    float tol = rel * (fabsf(want) > 1.0f ? fabsf(want) : 1.0f);
    ck_assert_msg(fabsf(got - want) <= tol, "%s n=%d: %.9g vs scalar %.9g", what, n, got, want);
}

/* Compares path isa with the scalar table on every size (the scalar table against itself
 * still checks guards and the exp polynomial against libm). */
static void check_kernels_against_scalar(int isa)
{
    const mt_kernels *ref = mt_kernels_get(MT_ISA_SCALAR), *k = mt_kernels_get(isa);
    ck_assert_ptr_nonnull(ref);
    if (!k)
        return;
    static float a[1001 + 2 * GUARD + 2], b[1001 + 2 * GUARD + 2], c[1001 + 2 * GUARD + 2];
    for (size_t si = 0; si < sizeof kernel_sizes / sizeof *kernel_sizes; si++) {
        int n = kernel_sizes[si];
        float *x = guarded(a, n, 1u + (unsigned)n), *y = guarded(b, n, 2u + (unsigned)n);
        ck_assert_float_eq(k->max(x, n), ref->max(x, n));
        float mx = ref->max(x, n);
        double want = 0.0;
        for (int i = 0; i < n; i++)
            want += exp((double)x[i] - mx);
        assert_close(k->exp_sum(x, n, mx), (float)want, 2e-6f, "exp_sum", n);
        assert_close(k->dot(x, y, n), ref->dot(x, y, n), 1e-5f, "dot", n);
        float *z = guarded(c, n, 1u + (unsigned)n);
        float sum = k->exp_store_sum(z, n, mx);
        assert_close(sum, (float)want, 2e-6f, "exp_store_sum", n);
        for (int i = 0; i < n; i++)
            assert_close(z[i], (float)exp((double)x[i] - mx), 2e-7f, "exp_store_sum element", n);
        check_guards(c, n);
        z = guarded(c, n, 3u);
        float w[1001];
        memcpy(w, z, sizeof(float) * (size_t)n);
        k->scale(z, n, 0.37f);
        ref->scale(w, n, 0.37f);
        ck_assert(memcmp(z, w, sizeof(float) * (size_t)n) == 0);
        check_guards(c, n);
        z = guarded(c, n, 4u);
        memcpy(w, z, sizeof(float) * (size_t)n);
        k->axpy(z, -1.25f, x, n);
        ref->axpy(w, -1.25f, x, n);
        for (int i = 0; i < n; i++)
            assert_close(z[i], w[i], 1e-6f, "axpy", n);
        check_guards(c, n);
    }
}

START_TEST(kernels_match_scalar)
{
    for (int isa = 0; isa < MT_ISA_COUNT; isa++)
        check_kernels_against_scalar(isa);
}
END_TEST

/* bias + activation: rows with a stride wider than the columns (the column-split
 * products write such slices); relu and none must be bit-identical to the scalar path. */
START_TEST(bias_act_matches_scalar)
{
    const mt_kernels *ref = mt_kernels_get(MT_ISA_SCALAR);
    static float a[3 * 40 + 2 * GUARD + 2], b[3 * 40 + 2 * GUARD + 2], bias[40];
    for (int isa = 0; isa < MT_ISA_COUNT; isa++) {
        const mt_kernels *k = mt_kernels_get(isa);
        if (!k)
            continue;
        for (int act = 0; act <= MT_ACT_GELU_TANH + 1; act++)
            for (int cols = 1; cols <= 37; cols += 6) {
                int rows = 3, ld = 40, n = rows * ld;
                float *x = guarded(a, n, 7u), *y = guarded(b, n, 7u);
                for (int j = 0; j < cols; j++)
                    bias[j] = 0.1f * (float)(j % 7) - 0.3f;
                k->bias_act(x, rows, ld, cols, act % 2 ? bias : NULL, act);
                ref->bias_act(y, rows, ld, cols, act % 2 ? bias : NULL, act);
                ck_assert_msg(memcmp(x, y, sizeof(float) * (size_t)n) == 0, "%s act %d cols %d", k->name, act, cols);
                check_guards(a, n);
            }
    }
}
END_TEST


/* Attention's gathered rows: q against n keys anywhere in memory (unaligned, in any
 * order, some repeated) and the weighted sum of n value rows, for head sizes with tails,
 * beyond the 64 floats kept in registers, and n across the 16-key groups. */
START_TEST(attention_rows_match_double)
{
    static const int lens[] = {1, 7, 16, 33, 64, 100}, counts[] = {1, 5, 16, 17, 40};
    enum { POOL = 50 * 101 + 1 };
    static float pool[POOL], q[101], out[101 + GUARD], w[40], scores[40 + GUARD];
    unsigned seed = 5u;
    for (int i = 0; i < POOL; i++)
        pool[i] = det_value(&seed, 1e-3f);
    for (int i = 0; i < 101; i++)
        q[i] = det_value(&seed, 2e-3f);
    for (int isa = 0; isa < MT_ISA_COUNT; isa++) {
        const mt_kernels *k = mt_kernels_get(isa);
        if (!k)
            continue;
        for (size_t li = 0; li < sizeof lens / sizeof *lens; li++)
            for (size_t ci = 0; ci < sizeof counts / sizeof *counts; ci++) {
                int len = lens[li], n = counts[ci];
                const float *rows[40];
                for (int i = 0; i < n; i++) {
                    rows[i] = pool + 1 + (size_t)((i * 37) % 49) * 101 + (size_t)(i % 3); /* unaligned, repeats */
                    w[i] = det_value(&seed, 1e-3f);
                }
                for (int i = 0; i < 40 + GUARD; i++)
                    scores[i] = guard_value;
                for (int i = 0; i < 101 + GUARD; i++)
                    out[i] = guard_value;
                k->dots(q, rows, n, len, scores);
                k->weighted_rows(w, rows, n, len, out);
                for (int i = 0; i < n; i++) {
                    double want = 0.0, mag = 0.0;
                    for (int c = 0; c < len; c++) {
                        want += (double)q[c] * rows[i][c];
                        mag += fabs((double)q[c] * rows[i][c]);
                    }
                    ck_assert_msg(fabs(scores[i] - want) <= 1e-6 * mag + 1e-12, "%s dots len %d n %d [%d]: %g vs %g",
                                  k->name, len, n, i, (double)scores[i], want);
                }
                for (int c = 0; c < len; c++) {
                    double want = 0.0, mag = 0.0;
                    for (int i = 0; i < n; i++) {
                        want += (double)w[i] * rows[i][c];
                        mag += fabs((double)w[i] * rows[i][c]);
                    }
                    ck_assert_msg(fabs(out[c] - want) <= 1e-6 * mag + 1e-12, "%s weighted_rows len %d n %d [%d]",
                                  k->name, len, n, c);
                }
                ck_assert_msg(scores[n] == guard_value && out[len] == guard_value, "%s wrote past the end", k->name);
            }
    }
}
END_TEST

/* residual + LayerNorm: every path within float rounding of a double-precision LayerNorm
 * on widths with tails (1 is all mean: the output is beta), rows left untouched outside d. */
START_TEST(add_norm_matches_double)
{
    static float xb[3 * 1001 + 2 * GUARD + 2], db[3 * 1001 + 2 * GUARD + 2], g[1001], be[1001];
    for (int isa = 0; isa < MT_ISA_COUNT; isa++) {
        const mt_kernels *k = mt_kernels_get(isa);
        if (!k)
            continue;
        for (size_t si = 0; si < sizeof kernel_sizes / sizeof *kernel_sizes; si++) {
            int d = kernel_sizes[si], rows = 3, n = rows * d;
            float *x = guarded(xb, n, 31u + (unsigned)d), *delta = guarded(db, n, 32u + (unsigned)d);
            float *orig = malloc(sizeof(float) * (size_t)n);
            memcpy(orig, x, sizeof(float) * (size_t)n);
            for (int j = 0; j < d; j++) {
                g[j] = 0.5f + 0.01f * (float)(j % 13);
                be[j] = 0.02f * (float)(j % 7) - 0.05f;
            }
            k->add_norm(x, delta, rows, d, g, be);
            for (int r = 0; r < rows; r++) {
                double mean = 0.0, var = 0.0;
                for (int j = 0; j < d; j++)
                    mean += (double)(orig[r * d + j] + delta[r * d + j]);
                mean /= d;
                for (int j = 0; j < d; j++) {
                    double c = (double)(orig[r * d + j] + delta[r * d + j]) - mean;
                    var += c * c;
                }
                for (int j = 0; j < d; j++) {
                    double want = ((double)(orig[r * d + j] + delta[r * d + j]) - mean) / sqrt(var / d + 1e-5) * g[j] + be[j];
                    assert_close(x[r * d + j], (float)want, 4e-6f, k->name, d);
                }
            }
            check_guards(xb, n);
            free(orig);
        }
    }
}
END_TEST

/* top-k over a row with masked (-inf) entries and many exact ties: the vector path must
 * return the very same candidates in the same order as the scalar scan, for every k. */
START_TEST(top_k_matches_scalar_with_ties)
{
    const mt_kernels *ref = mt_kernels_get(MT_ISA_SCALAR);
    static float a[1001 + 2 * GUARD + 2];
    for (int isa = 0; isa < MT_ISA_COUNT; isa++) {
        const mt_kernels *k = mt_kernels_get(isa);
        if (!k)
            continue;
        for (size_t si = 0; si < sizeof kernel_sizes / sizeof *kernel_sizes; si++) {
            int n = kernel_sizes[si];
            float *x = guarded(a, n, 11u + (unsigned)n);
            for (int i = 0; i < n; i++) {
                x[i] = (float)(int)(x[i] * 2.0f) * 0.5f; /* few distinct values: ties */
                if (i % 5 == 3)
                    x[i] = -INFINITY;
            }
            for (int kk = 0; kk <= 9; kk++) {
                mt_candidate got[9], want[9];
                int ng = k->top_k(x, n, 0.75f, -2.5f, kk, 4, got);
                int nw = ref->top_k(x, n, 0.75f, -2.5f, kk, 4, want);
                ck_assert_int_eq(ng, nw);
                for (int i = 0; i < nw; i++) {
                    ck_assert_msg(got[i].token == want[i].token && got[i].score == want[i].score && got[i].row == 4,
                                  "%s n=%d k=%d #%d: token %d vs %d", k->name, n, kk, i, got[i].token, want[i].token);
                    ck_assert(x[want[i].token] != -INFINITY);
                }
                if (kk && n >= kk + n / 5 + 1)
                    ck_assert_int_eq(nw, kk);
            }
            check_guards(a, n);
        }
    }
}
END_TEST

/* Few-row products against a double-precision sum, for every path: rows 1..MT_FEW_ROWS,
 * odd k and n (masked tails, the n % 4 outputs), an output stride wider than n, unaligned
 * inputs, and nothing written outside the n columns of each output row. */
START_TEST(gemm_few_rows_matches_double)
{
    static const int ks[] = {1, 7, 16, 17, 100, 256}, ns[] = {1, 3, 4, 5, 17, 64};
    enum { MAXK = 256, MAXN = 64, LDY = MAXN + 3 };
    static float xb[MT_FEW_ROWS * MAXK + 2 * GUARD + 2], wb[MAXN * MAXK + 2 * GUARD + 2],
        yb[MT_FEW_ROWS * LDY + 2 * GUARD + 2];
    for (int isa = 0; isa < MT_ISA_COUNT; isa++) {
        const mt_kernels *kern = mt_kernels_get(isa);
        if (!kern)
            continue;
        for (int m = 1; m <= MT_FEW_ROWS; m++)
            for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++)
                for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
                    int k = ks[ki], n = ns[ni];
                    float *x = guarded(xb, m * k, 21u + (unsigned)(m * k)), *w = guarded(wb, n * k, 22u + (unsigned)k);
                    float *y = guarded(yb, m * LDY, 23u);
                    float *untouched = malloc(sizeof(float) * (size_t)(m * LDY));
                    memcpy(untouched, y, sizeof(float) * (size_t)(m * LDY));
                    kern->gemm_few_rows(x, m, k, w, n, y, LDY);
                    for (int r = 0; r < m; r++)
                        for (int j = 0; j < LDY; j++) {
                            if (j >= n) {
                                ck_assert_msg(y[r * LDY + j] == untouched[r * LDY + j], "%s wrote column %d of %d",
                                              kern->name, j, n);
                                continue;
                            }
                            double want = 0.0, mag = 0.0;
                            for (int i = 0; i < k; i++) {
                                want += (double)x[r * k + i] * (double)w[j * k + i];
                                mag += fabs((double)x[r * k + i] * (double)w[j * k + i]);
                            }
                            ck_assert_msg(fabs(y[r * LDY + j] - want) <= 1e-6 * mag + 1e-6,
                                          "%s m=%d k=%d n=%d [%d][%d]: %.9g vs %.9g", kern->name, m, k, n, r, j,
                                          (double)y[r * LDY + j], want);
                        }
                    free(untouched);
                    check_guards(yb, m * LDY);
                }
    }
}
END_TEST

/* Run-time dispatch: the choice is always a path this CPU runs, and the cap "scalar"
 * (MT_KERNELS=scalar in the programs) forces the fallback (how the other tests exercise
 * it end to end); an unknown name is refused. */
START_TEST(kernel_choice_respects_cpu_and_override)
{
    const mt_kernels *k = mt_kernels_select(NULL);
    ck_assert_ptr_eq(mt_kernels_select("auto"), k);
    ck_assert_ptr_eq(mt_kernels_select(""), k);
    ck_assert_ptr_null(mt_kernels_select("sse2"));
    ck_assert_ptr_nonnull(k);
    int found = 0;
    for (int isa = 0; isa < MT_ISA_COUNT; isa++)
        if (mt_kernels_get(isa) == k) {
            found = 1;
            ck_assert(mt_kernels_cpu_has(isa));
        }
    ck_assert(found);
    ck_assert_int_eq(mt_kernels_cpu_has(MT_ISA_AVX512), __builtin_cpu_supports("avx512f") &&
                                                            __builtin_cpu_supports("avx512bw") &&
                                                            __builtin_cpu_supports("avx512dq") &&
                                                            __builtin_cpu_supports("avx512vl"));
    if (mt_kernels_cpu_has(MT_ISA_AVX512))
        ck_assert_str_eq(k->name, "avx512");
    ck_assert_str_eq(mt_kernels_select("scalar")->name, "scalar");
    k = mt_kernels_select("avx512");
    ck_assert_str_eq(k->name, mt_kernels_cpu_has(MT_ISA_AVX512) ? "avx512"
                              : mt_kernels_cpu_has(MT_ISA_AVX2) ? "avx2" : "scalar");
    /* never above what is asked, even on an AVX-512 CPU */
    ck_assert_str_eq(mt_kernels_select("avx2")->name, mt_kernels_cpu_has(MT_ISA_AVX2) ? "avx2" : "scalar");
    ck_assert_int_eq(mt_kernels_cpu_has(MT_ISA_AVX2), __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
    ck_assert_ptr_null(mt_kernels_get(MT_ISA_COUNT));
}
END_TEST

static Suite *model_suite(void)
{
    Suite *s = suite_create("model-kernels");
    TCase *kern = tcase_create("kernels");
    tcase_add_test(kern, kernels_match_scalar);
    tcase_add_test(kern, gemm_few_rows_matches_double);
    tcase_add_test(kern, add_norm_matches_double);
    tcase_add_test(kern, attention_rows_match_double);
    tcase_add_test(kern, bias_act_matches_scalar);
    tcase_add_test(kern, top_k_matches_scalar_with_ties);
    tcase_add_test(kern, kernel_choice_respects_cpu_and_override);
    suite_add_tcase(s, kern);
    return s;
}

int main(void)
{
    mt_process_setup(NULL, NULL);
    return mt_check_run(srunner_create(model_suite()));
}
