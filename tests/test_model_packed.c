/* test_model_packed.c: bfloat16 / int8 / packed float32 products through oneDNN
 * (packed.c, packed_run.c) against double references, their kernels against the scalar
 * ones, a packed model against its plain twin, auto's choice, and (under
 * ONEDNN_MAX_CPU_ISA) the refusal of oneDNN's slow fallbacks. */
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
#include "../model/packed_impl.h"
#include "../model/pool.h"
#include "../model/probe.h"
#include "../model/safetensors.h"
#include "model.h"
#include "model_fixtures.h"
#include "tiny_model.h"

/* ---- bfloat16 / int8 through oneDNN (packed.c) ---- */

/* 1 when `type` must be offered here: the CPU reports what it needs (and oneDNN is not
 * held below it). Then a refusal is a failure, not a skip. */
static int cpu_should_offer(mt_compute_type type)
{
    unsigned a, b, c, d;
    int vnni = 0, bf16 = 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        vnni = (c >> 11) & 1;
        if (__get_cpuid_count(7, 1, &a, &b, &c, &d))
            bf16 = (a >> 5) & 1;
    }
    /* AVX-512 VNNI / BF16 need AVX-512 itself (valgrind, for one, hides it) */
    return getenv("ONEDNN_MAX_CPU_ISA") == NULL &&
           __builtin_cpu_supports("avx512f") && (type == MT_COMPUTE_INT8 ? vnni : bf16);
}

/* The types this machine offers; a type its CPU should offer but oneDNN does not is a
 * failure (a silent fallback to gemm:jit or ref). */
static int offered_types(mt_compute_type *out)
{
    static const mt_compute_type all[] = {MT_COMPUTE_BFLOAT16, MT_COMPUTE_INT8};
    int n = 0;
    for (int i = 0; i < 2; i++) {
        char impl[64], why[256];
        int ok = mt_packed_available(all[i], NULL, impl, sizeof impl, why, sizeof why);
        ck_assert_msg(ok || !cpu_should_offer(all[i]), "%s refused on a CPU that has it: %s",
                      mt_compute_type_name(all[i]), why);
        if (ok)
            out[n++] = all[i];
        else
            fprintf(stderr, "packed tests: %s not offered here (%s)\n", mt_compute_type_name(all[i]), why);
    }
    return n;
}

static void assert_fast_impl(mt_compute_type type, const char *impl)
{
    ck_assert_msg(impl && !strncmp(impl, "brg", 3), "%s runs on '%s', not brgemm", mt_compute_type_name(type),
                  impl ? impl : "(null)");
    if (type == MT_COMPUTE_INT8)
        ck_assert_msg(strstr(impl, "vnni") || strstr(impl, "amx"), "int8 runs on '%s' (no VNNI: pairs saturate)",
                      impl);
}

/* act(x . w^T + b) against a double-precision reference on odd shapes: 1 row, 130 and
 * 257 rows (across the 128-row chunks), column blocks with a short tail, K = 7, 9, 33,
 * with and without bias + relu (and bias + gelu), 1 and 3 threads, scalar and AVX-512
 * epilogues. The bounds are what rounding the inputs can move the result by, plus float
 * accumulation: bfloat16 (8 significant bits) rounds each factor by at most 2^-8
 * relative, so |error| <= 2^-7 (1.01) sum |x_i w_i|; int8 rounds x_i by at most ax / 254 and w_i by aw / 254 (ax, aw: the
 * row's largest magnitudes), so |error| <= ax/254 sum |w_i| + aw/254 sum |x_i| + k ax aw
 * / 254^2. Every primitive used must be brgemm. */
START_TEST(packed_products_match_double_reference)
{
    mt_compute_type types[3];
    int n_types = offered_types(types);
    /* float32 packed (what float32 runs on with the AVX-512 kernels): float accumulation
     * only; oneDNN 2.6 has a float32 brgemm wherever AVX-512 is */
    char f32_why[256];
    if (mt_packed_available(MT_COMPUTE_FLOAT32, NULL, NULL, 0, f32_why, sizeof f32_why))
        types[n_types++] = MT_COMPUTE_FLOAT32;
    else
        ck_assert_msg(!__builtin_cpu_supports("avx512f") || getenv("ONEDNN_MAX_CPU_ISA"),
                      "float32 not packed on an AVX-512 CPU: %s", f32_why);
    if (!n_types)
        return;
    static const int rows_list[] = {1, 4, 130, 257}, k_list[] = {7, 9, 33}, n_list[] = {70, 300, 1100};
    char err[512];
    mt_pool *pools[2] = {mt_pool_create(0), mt_pool_create(2)};
    const int pool_threads[2] = {1, 3};
    ck_assert(pools[0] && pools[1]);
    for (int ti = 0; ti < n_types; ti++) {
        mt_compute_type t = types[ti];
        for (size_t ki = 0; ki < sizeof k_list / sizeof *k_list; ki++)
            for (size_t ni = 0; ni < sizeof n_list / sizeof *n_list; ni++) {
                int k = k_list[ki], n = n_list[ni];
                unsigned seed = 99u + (unsigned)(k * 1000 + n);
                float *w = malloc(sizeof *w * (size_t)n * (size_t)k), *b = malloc(sizeof *b * (size_t)n);
                for (int i = 0; i < n * k; i++)
                    w[i] = det_value(&seed, 1e-3f) * (1.0f + (float)(i / k % 5)); /* rows of different scales */
                for (int i = 0; i < n; i++)
                    b[i] = det_value(&seed, 2e-4f);
                mt_packed *p = mt_packed_create(t, w, n, k, err, sizeof err);
                ck_assert_msg(p != NULL, "%s %dx%d: %s", mt_compute_type_name(t), n, k, err);
                ck_assert(mt_packed_block_cols(p) % 64 == 0 || mt_packed_block_cols(p) == n);
                mt_packed_ctx *c = mt_packed_ctx_create(pool_threads[1], err, sizeof err);
                ck_assert_ptr_nonnull(c);
                for (size_t ri = 0; ri < sizeof rows_list / sizeof *rows_list; ri++) {
                    int m = rows_list[ri];
                    float *x = malloc(sizeof *x * (size_t)m * (size_t)k), *y = malloc(sizeof *y * (size_t)m * (size_t)n);
                    for (int i = 0; i < m * k; i++)
                        x[i] = det_value(&seed, 1e-3f) * (float)(1 + i / k % 3);
                    if (m > 1)
                        memset(x + (size_t)k, 0, sizeof *x * (size_t)k); /* an all-zero row */
                    for (int isa = 0; isa < MT_ISA_COUNT; isa++)
                        for (int pi = 0; pi < 2; pi++)
                            for (int act = 0; act < 3; act++) {
                                const mt_kernels *kern = mt_kernels_get(isa);
                                if (!kern)
                                    continue;
                                int a = act == 0 ? 0 : act == 1 ? MT_ACT_RELU + 1 : MT_ACT_GELU + 1;
                                const float *bias = act ? b : NULL;
                                for (int i = 0; i < m * n; i++)
                                    y[i] = NAN;
                                int bad = 0;
                                char msg[300] = "";
                                ck_assert_msg(!mt_packed_linear(c, pools[pi], pool_threads[pi], kern, p, x, m, bias, y, a, err, sizeof err),
                                              "%s", err);
                                for (int r = 0; r < m; r++)
                                    for (int j = 0; j < n; j++) {
                                        double sum = 0.0, mag = 0.0, ax = 0.0, aw = 0.0, sx = 0.0, sw = 0.0;
                                        for (int q = 0; q < k; q++) {
                                            double xv = x[(size_t)r * k + q], wv = w[(size_t)j * k + q];
                                            sum += xv * wv;
                                            mag += fabs(xv * wv);
                                            ax = fmax(ax, fabs(xv));
                                            aw = fmax(aw, fabs(wv));
                                            sx += fabs(xv);
                                            sw += fabs(wv);
                                        }
                                        double bound = t == MT_COMPUTE_INT8
                                                           ? 1.01 * (ax / 254 * sw + aw / 254 * sx + k * ax * aw / 254 / 254)
                                                       : t == MT_COMPUTE_BFLOAT16 ? 1.01 * mag / 128
                                                                                  : 0.0;
                                        bound += 1e-6 * (mag + 1.0);
                                        sum += bias ? bias[j] : 0.0;
                                        if (a)
                                            sum = mt_activation((float)sum, a);
                                        double got = y[(size_t)r * n + j];
                                        /* one assertion per product: Check reports each one */
                                        if (!(fabs(got - sum) <= bound) && !bad) {
                                            bad = 1;
                                            snprintf(msg, sizeof msg, "%s %s threads %d act %d: %dx%d by %dx%d at "
                                                     "(%d,%d): %g vs %g (bound %g)", mt_compute_type_name(t),
                                                     kern->name, pool_threads[pi], a, m, k, k, n, r, j,
                                                     got, sum, bound);
                                        }
                                    }
                                ck_assert_msg(!bad, "%s", msg);
                            }
                    free(x);
                    free(y);
                }
                static const int impl_rows[] = {1, 4, 7, 64, 128};
                for (size_t i = 0; i < sizeof impl_rows / sizeof *impl_rows; i++)
                    assert_fast_impl(t, mt_packed_impl(c, p, impl_rows[i], err, sizeof err));
                /* and every primitive the products above used (fused bias / relu included) */
                ck_assert_msg(mt_packed_slow_impl(c) == NULL, "%s %dx%d used '%s'", mt_compute_type_name(t), n, k,
                              mt_packed_slow_impl(c));
                mt_packed_ctx_free(c);
                mt_packed_free(p);
                free(w);
                free(b);
            }
    }
    mt_pool_free(pools[0]);
    mt_pool_free(pools[1]);
}
END_TEST

/* The THP mode of this kernel ("always", "madvise" or "never"), or "" when it does not say. */
static void thp_mode(char *mode, size_t len)
{
    mode[0] = '\0';
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    char line[128];
    if (f && fgets(line, sizeof line, f)) {
        char *a = strchr(line, '['), *b = a ? strchr(a, ']') : NULL;
        if (a && b)
            snprintf(mode, len, "%.*s", (int)(b - a - 1), a + 1);
    }
    if (f)
        fclose(f);
}

/* /proc/self/smaps' THPeligible for the mapping holding addr: 1, 0, or -1 when the
 * kernel does not report it. */
static int thp_eligible(const void *addr)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    int in = 0, eligible = -1;
    uintptr_t a = (uintptr_t)addr;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            if (in)
                break;
            in = a >= lo && a < hi;
        } else if (in && !strncmp(line, "THPeligible:", 12)) {
            eligible = atoi(line + 12);
        }
    }
    if (f)
        fclose(f);
    return eligible;
}

/* Packed weights of 2 MiB or more (a decoder step streams them all from memory) start on
 * a 2 MiB boundary with transparent huge pages asked for (packed.c, map_weights), in
 * every type offered, and still multiply right: a 1100 x 2000 matrix (a short tail
 * block) at 4 rows, 1 and 3 threads, against the double reference. */
START_TEST(big_packed_weights_ask_for_huge_pages)
{
    mt_compute_type types[3];
    int n_types = offered_types(types);
    if (mt_packed_available(MT_COMPUTE_FLOAT32, NULL, NULL, 0, NULL, 0))
        types[n_types++] = MT_COMPUTE_FLOAT32;
    if (!n_types) {
        fprintf(stderr, "huge pages test: no packed type offered here\n");
        return;
    }
    char mode[32], err[512];
    thp_mode(mode, sizeof mode);
    enum { N = 1100, K = 2000, M = 4 };
    unsigned seed = 7u;
    float *w = malloc(sizeof *w * N * K), *x = malloc(sizeof *x * M * K), *y = malloc(sizeof *y * M * N);
    ck_assert(w && x && y);
    for (int i = 0; i < N * K; i++)
        w[i] = det_value(&seed, 1e-3f);
    for (int i = 0; i < M * K; i++)
        x[i] = det_value(&seed, 1e-3f);
    mt_pool *pool = mt_pool_create(2);
    ck_assert_ptr_nonnull(pool);
    for (int ti = 0; ti < n_types; ti++) {
        mt_compute_type t = types[ti];
        mt_packed *p = mt_packed_create(t, w, N, K, err, sizeof err);
        ck_assert_msg(p != NULL, "%s: %s", mt_compute_type_name(t), err);
        ck_assert_uint_ge(mt_packed_bytes(p), 2u << 20);
        ck_assert_msg((uintptr_t)p->data % (2u << 20) == 0, "%s: packed weights at %p, not on a 2 MiB boundary",
                      mt_compute_type_name(t), (void *)p->data);
        int eligible = thp_eligible(p->data);
        if (strcmp(mode, "never") && *mode && eligible >= 0)
            ck_assert_msg(eligible == 1, "%s: packed weights not eligible for huge pages (THP mode %s)",
                          mt_compute_type_name(t), mode);
        else
            fprintf(stderr, "huge pages test: THP mode '%s', THPeligible %d: advice not checked\n", mode, eligible);
        mt_packed_ctx *c = mt_packed_ctx_create(3, err, sizeof err);
        ck_assert_ptr_nonnull(c);
        for (int threads = 1; threads <= 3; threads += 2) {
            ck_assert_msg(!mt_packed_linear(c, pool, threads, mt_kernels_select(NULL), p, x, M, NULL, y, 0, err,
                                            sizeof err), "%s", err);
            for (int r = 0; r < M; r++)
                for (int j = 0; j < N; j++) {
                    double sum = 0.0, mag = 0.0;
                    for (int q = 0; q < K; q++) {
                        sum += (double)x[r * K + q] * w[(size_t)j * K + q];
                        mag += fabs((double)x[r * K + q] * w[(size_t)j * K + q]);
                    }
                    /* int8 / bfloat16: a loose bound (the exact ones are checked above on odd
                     * shapes); this test is about where the weights live */
                    double bound = t == MT_COMPUTE_FLOAT32 ? 1e-5 * (mag + 1e-6) : 0.05 * mag + 1e-6;
                    double got = y[r * N + j];
                    if (!(fabs(got - sum) <= bound))
                        ck_abort_msg("%s threads %d at (%d,%d): %g vs %g", mt_compute_type_name(t), threads, r, j,
                                     got, sum);
                }
        }
        mt_packed_ctx_free(c);
        mt_packed_free(p);
    }
    mt_pool_free(pool);
    free(w);
    free(x);
    free(y);
}
END_TEST

/* The AVX-512 conversion and epilogue give exactly the scalar results (same operations,
 * nearest-even rounding in both), on lengths with tails, ties, NaN and infinities. */
START_TEST(packed_kernels_match_scalar)
{
    const mt_packed_kernels *ref = &mt_packed_kernels_scalar, *v = mt_packed_kernels_for(mt_kernels_get(MT_ISA_AVX512));
    if (!mt_kernels_get(MT_ISA_AVX512))
        return; /* nothing to compare with */
    ck_assert_ptr_eq(v, &mt_packed_kernels_avx512);
    enum { N = 203 };
    static float x[N];
    static uint16_t h1[N + 8], h2[N + 8];
    static uint8_t q1[N + 8], q2[N + 8];
    unsigned seed = 5u;
    for (int len = 1; len <= N; len += 17) {
        for (int i = 0; i < len; i++)
            x[i] = det_value(&seed, 0.01f);
        x[0] = 1.0f + 1.0f / 256.0f;                   /* a bfloat16 tie: to even (1.0) */
        if (len > 3) {
            x[1] = 1.0f + 3.0f / 256.0f;               /* a tie rounding up */
            x[2] = NAN;
            x[3] = -INFINITY;
        }
        memset(h1, 0xAB, sizeof h1);
        memset(h2, 0xAB, sizeof h2);
        ref->to_bf16(x, h1, (size_t)len);
        v->to_bf16(x, h2, (size_t)len);
        ck_assert_msg(!memcmp(h1, h2, sizeof h1), "to_bf16 differs at length %d", len);
        ck_assert_int_eq(h1[0], 0x3f80);
        if (len > 3) {
            ck_assert_int_eq(h1[1], 0x3f82);
            ck_assert((h1[2] & 0x7f80) == 0x7f80 && (h1[2] & 0x7f) != 0);
            ck_assert_int_eq(h1[3], 0xff80);
            x[2] = 0.5f;
            x[3] = -0.75f;
        }
        ck_assert_int_eq(h1[len], 0xABAB);
        memset(q1, 0xCD, sizeof q1);
        memset(q2, 0xCD, sizeof q2);
        float s1 = ref->quant_u8(x, len, q1), s2 = v->quant_u8(x, len, q2);
        ck_assert(s1 == s2);
        ck_assert_msg(!memcmp(q1, q2, sizeof q1), "quant_u8 differs at length %d", len);
        ck_assert_int_eq(q1[len], 0xCD);
        for (int i = 0; i < len; i++) {
            ck_assert(q1[i] >= 1 && q1[i] <= 255);
            ck_assert(fabsf(((float)q1[i] - 128.0f) * s1 - x[i]) <= 0.5f * s1 * 1.0001f);
        }
    }
    float zero[5] = {0};
    ck_assert(ref->quant_u8(zero, 5, q1) == v->quant_u8(zero, 5, q2));
    ck_assert(q1[0] == 128 && q2[4] == 128);
    /* epilogues on a block narrower than the output's rows, with a tail */
    enum { R = 3, C = 37, LD = 40 };
    static int32_t acc[R * C];
    static float facc[R * C], y1[R * LD], y2[R * LD], ws[C], xs[R], b[C];
    static int32_t colsum[C];
    for (int i = 0; i < R * C; i++) {
        acc[i] = (int32_t)(det_value(&seed, 1.0f) * 300.0f);
        facc[i] = det_value(&seed, 0.01f);
    }
    for (int j = 0; j < C; j++) {
        ws[j] = 0.001f * (float)(j + 1);
        colsum[j] = (int32_t)det_value(&seed, 1.0f);
        b[j] = det_value(&seed, 0.001f);
    }
    for (int r = 0; r < R; r++)
        xs[r] = 0.01f * (float)(r + 1);
    for (int variant = 0; variant < 4; variant++) {
        const float *bias = variant & 1 ? b : NULL;
        int relu = variant >> 1;
        for (int i = 0; i < R * LD; i++)
            y1[i] = y2[i] = -7.0f;
        ref->epi_s32(acc, C, y1, LD, R, C, xs, ws, colsum, bias, relu);
        v->epi_s32(acc, C, y2, LD, R, C, xs, ws, colsum, bias, relu);
        ck_assert_msg(!memcmp(y1, y2, sizeof y1), "epi_s32 differs (variant %d)", variant);
        ck_assert(y1[C] == -7.0f); /* past the block's columns: untouched */
        ref->epi_f32(facc, C, y1, LD, R, C, bias, relu);
        v->epi_f32(facc, C, y2, LD, R, C, bias, relu);
        ck_assert_msg(!memcmp(y1, y2, sizeof y1), "epi_f32 differs (variant %d)", variant);
    }
}
END_TEST

/* Encoder output and the first decoder step's logits of a model loaded as bfloat16 /
 * int8 against the same model's float32 twin (the exact path). */
START_TEST(packed_model_matches_plain_twin)
{
    mt_compute_type types[2];
    int n_types = offered_types(types);
    tiny_model_spec s = tiny_model_default();
    s.d = 64;
    s.ffn = 130;
    s.vocab = 300;
    s.pad = 299;
    const char *dir = write_model("twin", &s);
    char err[512];
    mt_model_options o;
    mt_model_options_default(&o);
    o.compute_type = MT_COMPUTE_FLOAT32;
    mt_model *plain = mt_model_load_ex(dir, &o, err, sizeof err);
    ck_assert_msg(plain != NULL, "%s", err);
    for (int ti = 0; ti < n_types; ti++) {
        o.compute_type = types[ti];
        mt_model *pk = mt_model_load_ex(dir, &o, err, sizeof err);
        ck_assert_msg(pk != NULL, "%s", err);
        ck_assert_int_eq(mt_model_compute_type(pk), types[ti]);
        ASSERT_CONTAINS(mt_model_compute_detail(pk), "oneDNN");
        for (int threads = 1; threads <= 2; threads++) {
            mt_state *a = mt_state_create(plain, threads, err, sizeof err), *b = mt_state_create(pk, threads, err, sizeof err);
            ck_assert(a && b);
            const int32_t *src[6];
            for (int i = 0; i < 6; i++)
                src[i] = sources[i];
            float *ea, *eb;
            ck_assert_int_eq(mt_encode_batch(a, 6, src, source_lens, &ea), MT_OK);
            ck_assert_int_eq(mt_encode_batch(b, 6, src, source_lens, &eb), MT_OK);
            int total = 0;
            for (int i = 0; i < 6; i++)
                total += source_lens[i];
            /* relative RMS differences: a tiny random model amplifies rounding more than a
             * trained one (test_bundled_models.py holds the BLEU bounds on real models) */
            double tol = types[ti] == MT_COMPUTE_INT8 ? 0.2 : 0.1;
            double se = 0, sa = 0, mx = 0;
            for (int i = 0; i < total * s.d; i++) {
                se += (ea[i] - eb[i]) * (double)(ea[i] - eb[i]);
                sa += ea[i] * (double)ea[i];
                mx = fmax(mx, fabs(ea[i] - eb[i]));
            }
            ck_assert_msg(sqrt(se / sa) <= tol, "%s encoder output: relative RMS difference %g (max %g)",
                          mt_compute_type_name(types[ti]), sqrt(se / sa), mx);
            /* one decoder step from the start token over those sources */
            float *kva = malloc(sizeof(float) * (size_t)total * 2 * (size_t)s.layers * (size_t)s.d);
            float *kvb = malloc(sizeof(float) * (size_t)total * 2 * (size_t)s.layers * (size_t)s.d);
            mt_cross_kv(a, ea, total, kva);
            mt_cross_kv(b, eb, total, kvb);
            int32_t toks[6];
            int row_sent[6], hist[6], off[6], at = 0, max_len = 0;
            for (int i = 0; i < 6; i++) {
                toks[i] = s.pad; /* decoder_start defaults to pad */
                row_sent[i] = i;
                hist[i] = i;
                off[i] = at;
                at += source_lens[i];
                max_len = source_lens[i] > max_len ? source_lens[i] : max_len;
            }
            mt_decoder_input in = {.rows = 6, .step = 0, .tokens = toks, .row_sent = row_sent, .hist = hist,
                                   .hist_stride = 1, .slot_base = 0, .src_off = off, .src_len = source_lens,
                                   .max_src_len = max_len, .attn_layer = -1};
            float *la, *lb;
            in.cross_kv = kva;
            ck_assert_int_eq(mt_decoder_step(a, &in, &la), MT_OK);
            in.cross_kv = kvb;
            ck_assert_int_eq(mt_decoder_step(b, &in, &lb), MT_OK);
            double scale = 0.0;
            for (int i = 0; i < 6 * s.vocab; i++)
                scale = fmax(scale, fabs(la[i]));
            se = sa = mx = 0;
            for (int i = 0; i < 6 * s.vocab; i++) {
                se += (la[i] - lb[i]) * (double)(la[i] - lb[i]);
                sa += la[i] * (double)la[i];
                mx = fmax(mx, fabs(la[i] - lb[i]));
            }
            ck_assert_msg(sqrt(se / sa) <= tol && mx <= tol * scale, "%s logits: relative RMS difference %g, max %g "
                          "(max |logit| %g)", mt_compute_type_name(types[ti]), sqrt(se / sa), mx, scale);
            free(kva);
            free(kvb);
            /* and a whole search runs */
            mt_search_options so;
            mt_search_options_default(pk, &so);
            mt_result res[6];
            ck_assert_int_eq(mt_translate_ids(b, &so, 6, src, source_lens, res), MT_OK);
            for (int i = 0; i < 6; i++)
                ck_assert_int_eq(res[i].status, MT_OK);
            mt_state_free(a);
            mt_state_free(b);
        }
        mt_model_free(pk);
    }
    mt_model_free(plain);
}
END_TEST

/* auto never picks a type the CPU lacks: with VNNI, BF16 and AMX hidden it is float32;
 * with VNNI hidden it is not int8; explicit types the CPU lacks are refused by name. */
START_TEST(auto_never_picks_a_type_the_cpu_lacks)
{
    tiny_model_spec s = tiny_model_default();
    const char *dir = write_model("auto", &s);
    char err[512];
    mt_model_options o;
    mt_model_options_default(&o);
    static const char *const hide[] = {"vnni,bf16,amx", "vnni,amx", "bf16,amx"};
    for (int h = 0; h < 3; h++) {
        o.cpu_hide = hide[h];
        o.compute_type = MT_COMPUTE_AUTO;
        mt_model *m = mt_model_load_ex(dir, &o, err, sizeof err);
        ck_assert_msg(m != NULL, "%s", err);
        mt_compute_type got = mt_model_compute_type(m);
        ck_assert_msg(mt_packed_available(got, hide[h], NULL, 0, NULL, 0) || got == MT_COMPUTE_FLOAT32, "auto chose %s",
                      mt_compute_type_name(got));
        if (h == 0)
            ck_assert_int_eq(got, MT_COMPUTE_FLOAT32);
        if (h == 1)
            ck_assert_int_ne(got, MT_COMPUTE_INT8);
        if (h == 2)
            ck_assert_int_ne(got, MT_COMPUTE_BFLOAT16);
        mt_model_free(m);
        for (int t = MT_COMPUTE_BFLOAT16; t <= MT_COMPUTE_INT8; t++) {
            int lacks = t == MT_COMPUTE_INT8 ? h < 2 : h != 1;
            if (!lacks)
                continue;
            o.compute_type = (mt_compute_type)t;
            ck_assert_ptr_null(mt_model_load_ex(dir, &o, err, sizeof err));
            ASSERT_CONTAINS(err, "not available on this CPU");
        }
    }
}
END_TEST

/* A state of a model with packed weights has its oneDNN engine and streams from the
 * start: the hot product never creates them (and a state that cannot have them is
 * refused at creation, not at its first product). A plain float32 model's state has none. */
START_TEST(packed_context_is_made_with_the_state)
{
    tiny_model_spec s = tiny_model_default();
    const char *dir = write_model("ctx", &s);
    char err[512];
    mt_compute_type types[4];
    int n_types = offered_types(types);
    if (mt_packed_available(MT_COMPUTE_FLOAT32, NULL, NULL, 0, NULL, 0))
        types[n_types++] = MT_COMPUTE_FLOAT32;
    for (int ti = 0; ti < n_types; ti++) {
        mt_model_options o;
        mt_model_options_default(&o);
        o.compute_type = types[ti];
        mt_model *m = mt_model_load_ex(dir, &o, err, sizeof err);
        ck_assert_msg(m != NULL, "%s", err);
        for (int threads = 1; threads <= 3; threads += 2) {
            mt_state *st = mt_state_create(m, threads, err, sizeof err);
            ck_assert_msg(st != NULL, "%s", err);
            ck_assert_msg(m->n_packs == 0 || st->packed != NULL, "%s, %d threads: no oneDNN context before "
                          "the first product", mt_compute_type_name(types[ti]), threads);
            mt_state_free(st);
        }
        mt_model_free(m);
    }
    mt_model_options o;
    mt_model_options_default(&o);
    o.compute_type = MT_COMPUTE_FLOAT32;
    o.kernels = "scalar"; /* OpenBLAS: nothing packed, no context */
    mt_model *m = mt_model_load_ex(dir, &o, err, sizeof err);
    ck_assert_msg(m != NULL, "%s", err);
    mt_state *st = mt_state_create(m, 2, err, sizeof err);
    ck_assert_ptr_nonnull(st);
    ck_assert_int_eq(m->n_packs, 0);
    ck_assert_ptr_null(st->packed);
    mt_state_free(st);
    mt_model_free(m);
}
END_TEST

/* Run with ONEDNN_MAX_CPU_ISA=AVX512_CORE (meson test model-onednn-avx512-core): oneDNN
 * then has only gemm:jit for bfloat16 and int8 (whose u8 x s8 pairs saturate without
 * VNNI), so both are refused even though the CPU reports the features, and auto keeps
 * float32. */
START_TEST(onednn_fallback_is_refused)
{
    ck_assert_ptr_nonnull(getenv("ONEDNN_MAX_CPU_ISA"));
    for (int t = MT_COMPUTE_BFLOAT16; t <= MT_COMPUTE_INT8; t++) {
        char impl[64], why[256];
        ck_assert_int_eq(mt_packed_available((mt_compute_type)t, NULL, impl, sizeof impl, why, sizeof why), 0);
        fprintf(stderr, "%s with ONEDNN_MAX_CPU_ISA=%s: %s\n", mt_compute_type_name((mt_compute_type)t),
                getenv("ONEDNN_MAX_CPU_ISA"), why);
    }
    tiny_model_spec s = tiny_model_default();
    const char *dir = write_model("isa", &s);
    char err[512];
    mt_model_options o;
    mt_model_options_default(&o);
    o.compute_type = MT_COMPUTE_AUTO;
    mt_model *m = mt_model_load_ex(dir, &o, err, sizeof err);
    ck_assert_msg(m != NULL, "%s", err);
    ck_assert_int_eq(mt_model_compute_type(m), MT_COMPUTE_FLOAT32);
    mt_model_free(m);
    o.compute_type = MT_COMPUTE_INT8;
    ck_assert_ptr_null(mt_model_load_ex(dir, &o, err, sizeof err));
    ASSERT_CONTAINS(err, "not available on this CPU");
}
END_TEST

static Suite *model_suite(void)
{
    Suite *s = suite_create("model-packed");
    TCase *pk = tcase_create("packed");
    tcase_add_checked_fixture(pk, make_root, remove_root);
    tcase_set_timeout(pk, 600);
    tcase_add_test(pk, packed_products_match_double_reference);
    tcase_add_test(pk, packed_kernels_match_scalar);
    tcase_add_test(pk, big_packed_weights_ask_for_huge_pages);
    tcase_add_test(pk, packed_model_matches_plain_twin);
    tcase_add_test(pk, auto_never_picks_a_type_the_cpu_lacks);
    tcase_add_test(pk, packed_context_is_made_with_the_state);
    suite_add_tcase(s, pk);

    /* only under a limited oneDNN (see onednn_fallback_is_refused) */
    if (getenv("ONEDNN_MAX_CPU_ISA")) {
        TCase *isa = tcase_create("onednn_isa");
        tcase_add_checked_fixture(isa, make_root, remove_root);
        tcase_add_test(isa, onednn_fallback_is_refused);
        suite_add_tcase(s, isa);
    }
    return s;
}

int main(void)
{
    mt_process_setup(NULL, NULL);
    return mt_check_run(srunner_create(model_suite()));
}
