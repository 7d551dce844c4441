/* compute.c: the compute type of a model, settled at load: the load's options, the
 * type asked for (refused when the CPU cannot run it fast), auto's measurement, and the
 * packing of every Linear for oneDNN (packed.h) with the float copies dropped. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "internal.h"
#include "packed.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Seconds one thread takes for `count[i]` products of rows x k[i] by k[i] x n[i] in
 * `type` (FLOAT32: the OpenBLAS path), on synthetic weights, best of `reps`; < 0 with a
 * message on failure. Used by compute type `auto`. */
static double measure(mt_compute_type type, const mt_kernels *kern, const int *k, const int *n,
                      const double *count, int shapes, int rows, int reps, char *err, size_t errlen)
{
    size_t wmax = 0, xmax = 0, ymax = 0;
    for (int s = 0; s < shapes; s++) {
        wmax = (size_t)k[s] * (size_t)n[s] > wmax ? (size_t)k[s] * (size_t)n[s] : wmax;
        xmax = (size_t)k[s] > xmax ? (size_t)k[s] : xmax;
        ymax = (size_t)n[s] > ymax ? (size_t)n[s] : ymax;
    }
    float *w = malloc(sizeof *w * wmax), *x = malloc(sizeof *x * xmax * (size_t)rows);
    float *y = malloc(sizeof *y * ymax * (size_t)rows), *bias = calloc(ymax, sizeof *bias);
    mt_packed **pk = calloc((size_t)shapes, sizeof *pk);
    /* float32 as the model runs it: OpenBLAS under the scalar kernels or without a oneDNN
     * brgemm kernel for it, else packed (float32_packed) */
    int blas = type == MT_COMPUTE_FLOAT32 &&
               (kern == mt_kernels_get(MT_ISA_SCALAR) || !mt_packed_available(type, NULL, NULL, 0, NULL, 0));
    mt_packed_ctx *c = blas ? NULL : mt_packed_ctx_create(1, err, errlen);
    double total = -1.0;
    if (!w || !x || !y || !bias || !pk || (!blas && !c)) {
        mt_strfmt(err, errlen, "out of memory measuring %s", mt_compute_type_name(type));
        goto done;
    }
    uint32_t seed = 12345u; /* small values of both signs, like trained weights */
    for (size_t i = 0; i < wmax; i++)
        w[i] = (float)((int)((seed = seed * 1664525u + 1013904223u) >> 16) % 2001 - 1000) * 1e-4f;
    for (size_t i = 0; i < xmax * (size_t)rows; i++)
        x[i] = (float)((int)((seed = seed * 1664525u + 1013904223u) >> 16) % 2001 - 1000) * 1e-3f;
    for (int s = 0; s < shapes && !blas; s++)
        if (!(pk[s] = mt_packed_create(type, w, n[s], k[s], err, errlen)))
            goto done;
    double best = INFINITY;
    for (int rep = 0; rep <= reps; rep++) { /* rep 0 warms up (creates the primitives) */
        double t = 0.0;
        for (int s = 0; s < shapes; s++) {
            double t0 = now_s();
            if (blas) {
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, n[s], k[s], 1.0f, x, k[s], w, k[s], 0.0f, y,
                            n[s]);
                kern->bias_act(y, rows, n[s], n[s], bias, MT_ACT_RELU + 1);
            } else if (mt_packed_linear(c, NULL, 1, kern, pk[s], x, rows, bias, y, MT_ACT_RELU + 1, err, errlen)) {
                goto done;
            }
            t += (now_s() - t0) * count[s];
        }
        if (rep && t < best)
            best = t;
    }
    total = best;
done:
    for (int s = 0; pk && s < shapes; s++)
        mt_packed_free(pk[s]);
    mt_packed_ctx_free(c);
    free(pk);
    free(w);
    free(x);
    free(y);
    free(bias);
    return total;
}

mt_compute_type mt_model_compute_type(const mt_model *m) { return m->compute; }

const char *mt_model_compute_detail(const mt_model *m) { return m->compute_detail; }

/* DEFAULT stays DEFAULT: the stored weights decide once read (see mt_model_load_ex). A
 * type the CPU cannot run fast is refused here, before any weight is read. */
int mt_compute_requested(const mt_model *m, mt_compute_type want, mt_compute_type *out, char *err, size_t errlen)
{
    if (want == MT_COMPUTE_DEFAULT) {
        *out = want;
        return 0;
    }
    if ((int)want < MT_COMPUTE_FLOAT32 || (int)want > MT_COMPUTE_AUTO)
        return mt_strfmt(err, errlen, "unknown compute type %d", (int)want), -1;
    char why[200];
    if ((want == MT_COMPUTE_BFLOAT16 || want == MT_COMPUTE_INT8) &&
        !mt_packed_available(want, m->cpu_hide, NULL, 0, why, sizeof why))
        return mt_strfmt(err, errlen, "compute type %s is not available on this CPU: %s (use float32 or auto)",
                         mt_compute_type_name(want), why), -1;
    *out = want;
    return 0;
}

/* The options other than the compute type: the kernel cap, the hidden CPU features and
 * the split threshold, checked and kept in m. */
int mt_compute_options(mt_model *m, const mt_model_options *o, char *err, size_t errlen)
{
    m->kern = mt_kernels_select(o ? o->kernels : NULL);
    if (!m->kern)
        return mt_strfmt(err, errlen, "kernels '%s': expected scalar, avx2, avx512 or auto", o->kernels), -1;
    const char *hide = o && o->cpu_hide ? o->cpu_hide : "";
    if (!mt_packed_cpu_hide_valid(hide) || strlen(hide) >= sizeof m->cpu_hide)
        return mt_strfmt(err, errlen, "cpu_hide '%s': expected a comma-separated list of vnni, bf16 and amx", hide),
               -1;
    memcpy(m->cpu_hide, hide, strlen(hide) + 1);
    m->split_min = o && o->split_min >= 0 ? o->split_min : MT_SPLIT_MIN_DEFAULT;
    return 0;
}

/* AUTO: times one decoder step's products (every layer's, and the output projection's)
 * at 32 rows (8 sentences x beam 4) in each type this CPU offers, one thread, and keeps
 * the fastest. float32 is exact, so another type must beat it by 5% to be chosen; all
 * offered types stay within the quality bounds the tests hold (BLEU within 0.2 / 0.5). */
static int resolve_auto(mt_model *m, char *err, size_t errlen)
{
    const mt_model_info *in = &m->info;
    int d = in->d_model, ffn = in->decoder_ffn_dim, L = in->decoder_layers, v = in->tgt_vocab_size;
    int head = v > 4096 ? 4096 : v; /* the output projection is timed on a slice, scaled up */
    int k[] = {d, d, d, ffn, d}, n[] = {3 * d, d, ffn, d, head};
    double count[] = {L, 3.0 * L, L, L, (double)v / head};
    static const mt_compute_type types[] = {MT_COMPUTE_FLOAT32, MT_COMPUTE_BFLOAT16, MT_COMPUTE_INT8};
    double best = 0.0, t[3] = {-1, -1, -1};
    char *p = m->compute_detail, *end = p + sizeof m->compute_detail;
    p += snprintf(p, (size_t)(end - p), " (auto, per decoder step of 32 rows on 1 thread:");
    m->compute = MT_COMPUTE_FLOAT32;
    for (int i = 0; i < 3; i++) {
        if (i && !mt_packed_available(types[i], m->cpu_hide, NULL, 0, NULL, 0))
            continue;
        t[i] = measure(types[i], m->kern, k, n, count, 5, 32, 3, err, errlen);
        if (t[i] < 0)
            return -1;
        if (p < end)
            p += snprintf(p, (size_t)(end - p), " %s %.2f ms", mt_compute_type_name(types[i]), t[i] * 1e3);
        if (i == 0 || t[i] < best * (m->compute == MT_COMPUTE_FLOAT32 ? 0.95 : 1.0)) {
            best = t[i];
            m->compute = types[i];
        }
    }
    if (p < end)
        snprintf(p, (size_t)(end - p), ")");
    return 0;
}

static int pack_matrix(mt_model *m, mt_linear_w *lin, int n, int k, char *err, size_t errlen)
{
    mt_packed *pk = mt_packed_create(m->compute, lin->w, n, k, err, errlen);
    if (!pk)
        return -1;
    m->packs[m->n_packs++] = pk;
    lin->packed = pk;
    return 0;
}

static void drop_float_copy(const mt_model *m, const float *w, size_t floats);

/* Packs a matrix that nothing else reads and drops its float copy. */
static int pack_one(mt_model *m, mt_linear_w *lin, int n, int k, char *err, size_t errlen)
{
    if (pack_matrix(m, lin, n, k, err, errlen))
        return -1;
    drop_float_copy(m, lin->w, (size_t)n * (size_t)k);
    return 0;
}

/* The float32 copy of a packed matrix is never read again: hand its whole pages back and
 * make them inaccessible, so a stray read faults instead of seeing zeros. */
static void drop_float_copy(const mt_model *m, const float *w, size_t floats)
{
    uintptr_t lo = ((uintptr_t)w + 4095) & ~(uintptr_t)4095, hi = ((uintptr_t)(w + floats)) & ~(uintptr_t)4095;
    if (hi > lo) {
        madvise((void *)lo, hi - lo, MADV_DONTNEED);
        mprotect((void *)lo, hi - lo, PROT_NONE);
    }
    (void)m;
}

/* Every Linear (fused q,k,v and cross k,v included) and the output projection are packed
 * for oneDNN in m->compute's type; one copy serves every state. Each matrix's float copy
 * is dropped as soon as it is packed (not the output projection's when it is an
 * embedding too), so loading never holds both copies of all weights. */
static int pack_model(mt_model *m, char *err, size_t errlen)
{
    const mt_model_info *in = &m->info;
    int d = in->d_model, fe = in->encoder_ffn_dim, fd = in->decoder_ffn_dim;
    m->packs = calloc((size_t)(4 * in->encoder_layers + 6 * in->decoder_layers + 2), sizeof *m->packs);
    if (!m->packs)
        return mt_strfmt(err, errlen, "out of memory"), -1;
    for (int l = 0; l < in->encoder_layers; l++) {
        mt_encoder_layer *L = &m->enc[l];
        if (pack_one(m, &L->qkv, 3 * d, d, err, errlen) || pack_one(m, &L->out, d, d, err, errlen) ||
            pack_one(m, &L->fc1, fe, d, err, errlen) || pack_one(m, &L->fc2, d, fe, err, errlen))
            return -1;
    }
    for (int l = 0; l < in->decoder_layers; l++) {
        mt_decoder_layer *L = &m->dec[l];
        if (pack_one(m, &L->qkv, 3 * d, d, err, errlen) || pack_one(m, &L->out, d, d, err, errlen) ||
            pack_one(m, &L->cross_q, d, d, err, errlen) || pack_one(m, &L->cross_out, d, d, err, errlen) ||
            pack_one(m, &L->fc1, fd, d, err, errlen) || pack_one(m, &L->fc2, d, fd, err, errlen))
            return -1;
    }
    if (pack_one(m, &m->cross_kv, 2 * d * in->decoder_layers, d, err, errlen))
        return -1;
    mt_linear_w head = {.w = m->lm_head};
    int tied = m->lm_head == m->dec_embed || m->lm_head == m->enc_embed;
    if (tied ? pack_matrix(m, &head, in->tgt_vocab_size, d, err, errlen)
             : pack_one(m, &head, in->tgt_vocab_size, d, err, errlen))
        return -1;
    m->lm_head_packed = head.packed;
    return 0;
}

/* float32 runs on weights packed once for oneDNN's brgemm (impl gets its name) when the
 * vector kernels are in use and oneDNN has a brgemm kernel for float32 on this CPU: the
 * same products as OpenBLAS's sgemm, which repacks every weight matrix on every call.
 * MT_KERNELS=scalar keeps the plain path (OpenBLAS, sgemv for few rows). */
static int float32_packed(const mt_model *m, char *impl, size_t impl_len)
{
    return m->kern != mt_kernels_get(MT_ISA_SCALAR) &&
           mt_packed_available(MT_COMPUTE_FLOAT32, m->cpu_hide, impl, impl_len, NULL, 0);
}

/* After the weights are in: AUTO is measured, then the packed types are packed, and
 * compute_detail says what runs the products. */
int mt_compute_setup(mt_model *m, mt_compute_type asked, char *err, size_t errlen)
{
    char note[sizeof m->compute_detail] = "";
    if (asked == MT_COMPUTE_AUTO) {
        if (resolve_auto(m, err, errlen))
            return -1;
        snprintf(note, sizeof note, "%s", m->compute_detail);
    }
    char impl[64];
    if (m->compute == MT_COMPUTE_FLOAT32 && !float32_packed(m, impl, sizeof impl)) {
        mt_strfmt(m->compute_detail, sizeof m->compute_detail, "float32: OpenBLAS %s + %s kernels%s",
                  mt_blas_core_name(), m->kern->name, note);
        return 0;
    }
    if (m->compute != MT_COMPUTE_FLOAT32)
        mt_packed_available(m->compute, m->cpu_hide, impl, sizeof impl, NULL, 0);
    if (pack_model(m, err, errlen))
        return -1;
    size_t bytes = 0;
    for (int i = 0; i < m->n_packs; i++)
        bytes += mt_packed_bytes(m->packs[i]);
    mt_strfmt(m->compute_detail, sizeof m->compute_detail, "%s: oneDNN %s %s, %.1f MiB packed, %s epilogue%s",
              mt_compute_type_name(m->compute), mt_packed_library_version(), impl, (double)bytes / 1048576.0,
              mt_packed_kernels_for(m->kern) == &mt_packed_kernels_avx512 ? "avx512" : "scalar", note);
    return 0;
}
