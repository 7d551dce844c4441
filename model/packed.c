/* packed.c: weights packed once for oneDNN's matmul, and the products that use them
 * (see packed.h for the design and the two traps it avoids). */
#include "packed.h"

#include <cblas.h>
#include <cpuid.h>
#include <errno.h>
#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "internal.h"

enum { PAGE = 4096, ALIGN = 64 };

struct mt_packed {
    mt_compute_type type;
    int n, k, nb, blocks;            /* column blocks of nb, the last one n - (blocks-1) nb */
    dnnl_memory_desc_t md[2];        /* packed layout of a full block [0] and of the tail [1] */
    size_t stride;                   /* bytes from one full block to the next */
    unsigned char *data;             /* block j at data + j * stride */
    const float *scale;              /* int8: per output row, w ~ scale * q */
    const int32_t *colsum;           /* int8: per output row, sum of q over k */
    void *map;
    size_t map_bytes;
};

/* Every call into oneDNN from one of our threads runs it single-threaded: each thread's
 * OpenMP "nthreads" setting is its own, so this touches no other thread. */
static void one_omp_thread(void)
{
    if (omp_get_max_threads() != 1)
        omp_set_num_threads(1);
}

static size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

/* ---- what the CPU offers ---- */

typedef struct {
    int vnni, bf16, amx_int8, amx_bf16;
} cpu_features;

static int hidden(const char *h, const char *what)
{
    size_t n = strlen(what);
    for (const char *p = h; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && !strncmp(p, what, n))
            return 1;
        p = end ? end + 1 : p + len;
    }
    return 0;
}

static cpu_features cpu_get(const char *hide)
{
    cpu_features f = {0};
    unsigned a, b, c, d;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        f.vnni = (c >> 11) & 1;          /* AVX512_VNNI */
        f.amx_bf16 = (d >> 22) & 1;
        f.amx_int8 = (d >> 25) & 1 && (d >> 24) & 1; /* AMX-TILE and AMX-INT8 */
        f.amx_bf16 &= (d >> 24) & 1;
        if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) {
            f.vnni |= (a >> 4) & 1;      /* AVX-VNNI */
            f.bf16 = (a >> 5) & 1;       /* AVX512_BF16 */
        }
    }
    if (hidden(hide, "vnni"))
        f.vnni = 0;
    if (hidden(hide, "bf16"))
        f.bf16 = 0;
    if (hidden(hide, "amx"))
        f.amx_int8 = f.amx_bf16 = 0;
    return f;
}

static dnnl_data_type_t weight_type(mt_compute_type t)
{
    return t == MT_COMPUTE_INT8 ? dnnl_s8 : t == MT_COMPUTE_BFLOAT16 ? dnnl_bf16 : dnnl_f32;
}
static dnnl_data_type_t src_type(mt_compute_type t)
{
    return t == MT_COMPUTE_INT8 ? dnnl_u8 : t == MT_COMPUTE_BFLOAT16 ? dnnl_bf16 : dnnl_f32;
}
static dnnl_data_type_t dst_type(mt_compute_type t) { return t == MT_COMPUTE_INT8 ? dnnl_s32 : dnnl_f32; }
static size_t src_elt(mt_compute_type t) { return t == MT_COMPUTE_INT8 ? 1 : t == MT_COMPUTE_BFLOAT16 ? 2 : 4; }
static int packable(mt_compute_type t)
{
    return t == MT_COMPUTE_FLOAT32 || t == MT_COMPUTE_BFLOAT16 || t == MT_COMPUTE_INT8;
}

/* A matmul primitive descriptor for rows x k by k x n; wei NULL lets oneDNN choose the
 * weights' layout (format any). */
static dnnl_status_t matmul_pd(dnnl_engine_t eng, mt_compute_type t, int rows, int k, int n,
                               const dnnl_memory_desc_t *wei, dnnl_primitive_desc_t *pd)
{
    dnnl_memory_desc_t src_md, wei_md, dst_md;
    dnnl_dims_t sd = {rows, k}, wd = {k, n}, dd = {rows, n};
    dnnl_status_t s = dnnl_memory_desc_init_by_tag(&src_md, 2, sd, src_type(t), dnnl_ab);
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_tag(&dst_md, 2, dd, dst_type(t), dnnl_ab);
    if (s == dnnl_success && !wei)
        s = dnnl_memory_desc_init_by_tag(&wei_md, 2, wd, weight_type(t), dnnl_format_tag_any);
    dnnl_matmul_desc_t desc;
    if (s == dnnl_success)
        s = dnnl_matmul_desc_init(&desc, &src_md, wei ? wei : &wei_md, NULL, &dst_md);
    dnnl_primitive_attr_t attr = NULL;
    if (s == dnnl_success)
        s = dnnl_primitive_attr_create(&attr);
    if (s == dnnl_success)
        s = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (s == dnnl_success)
        s = dnnl_primitive_desc_create(pd, &desc, attr, eng, NULL);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return s;
}

static const char *pd_impl(const_dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl)
        return "?";
    return impl;
}

/* A kernel worth using: brgemm (with VNNI or AMX for int8). gemm:jit and ref are slower
 * than our float32 path. */
static int fast_impl(mt_compute_type t, const char *impl)
{
    if (strncmp(impl, "brg", 3))
        return 0;
    return t != MT_COMPUTE_INT8 || strstr(impl, "vnni") || strstr(impl, "amx");
}

int mt_packed_cpu_hide_valid(const char *hide)
{
    for (const char *p = hide; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (!((len == 4 && !strncmp(p, "vnni", 4)) || (len == 4 && !strncmp(p, "bf16", 4)) ||
              (len == 3 && !strncmp(p, "amx", 3))))
            return 0;
        p = end ? end + 1 : p + len;
    }
    return 1;
}

int mt_packed_available(mt_compute_type type, const char *cpu_hide, char *impl, size_t impl_len, char *why,
                        size_t whylen)
{
    char tmp[1];
    if (!why) {
        why = tmp;
        whylen = sizeof tmp;
    }
    if (impl && impl_len)
        impl[0] = 0;
    if (!packable(type))
        return mt_format(why, whylen, "not a oneDNN compute type"), 0;
    cpu_features f = cpu_get(cpu_hide);
    if (type == MT_COMPUTE_INT8 && !f.vnni && !f.amx_int8)
        return mt_format(why, whylen, "this CPU has no VNNI (AVX-512 VNNI, AVX-VNNI or AMX-INT8)"), 0;
    if (type == MT_COMPUTE_BFLOAT16 && !f.bf16 && !f.amx_bf16)
        return mt_format(why, whylen, "this CPU has no bfloat16 instructions (AVX-512 BF16 or AMX-BF16)"), 0;
    one_omp_thread();
    dnnl_engine_t eng;
    if (dnnl_engine_create(&eng, dnnl_cpu, 0) != dnnl_success)
        return mt_format(why, whylen, "oneDNN has no CPU engine"), 0;
    dnnl_primitive_desc_t pd;
    int ok = 0;
    if (matmul_pd(eng, type, 32, 512, 512, NULL, &pd) == dnnl_success) {
        const char *name = pd_impl(pd);
        if (impl)
            mt_format(impl, impl_len, "%s", name);
        ok = fast_impl(type, name);
        if (!ok)
            mt_format(why, whylen, "oneDNN %s offers only '%s' for it", mt_packed_library_version(), name);
        dnnl_primitive_desc_destroy(pd);
    } else {
        mt_format(why, whylen, "oneDNN %s has no matmul for it", mt_packed_library_version());
    }
    dnnl_engine_destroy(eng);
    return ok;
}

#define MT_STR2(x) #x
#define MT_STR(x) MT_STR2(x)

/* The version this was built against (Debian pins the library to it); a constant, so
 * no thread ever writes it. */
const char *mt_packed_library_version(void)
{
    return MT_STR(DNNL_VERSION_MAJOR) "." MT_STR(DNNL_VERSION_MINOR) "." MT_STR(DNNL_VERSION_PATCH);
}

/* ---- packing ---- */

/* Block width: a multiple of 64 (the brgemm kernels' column block) that gives two blocks
 * for middle-sized matrices (two threads share a d x d product) and at most 1024 columns
 * (a block's packed weights and output stay within L2). */
static int block_cols(int n)
{
    if (n <= 256)
        return n;
    int half = (int)round_up((size_t)(n + 1) / 2, 64);
    return half < 1024 ? half : 1024;
}

static void quantize_rows(const float *w, int rows, int k, int8_t *q, float *scale, int32_t *colsum)
{
    for (int r = 0; r < rows; r++) {
        const float *wr = w + (size_t)r * (size_t)k;
        float amax = 0.0f;
        for (int i = 0; i < k; i++)
            amax = fmaxf(amax, fabsf(wr[i]));
        float s = amax > 0.0f ? amax / 127.0f : 1.0f, inv = 1.0f / s;
        int32_t sum = 0;
        for (int i = 0; i < k; i++) {
            long v = lrintf(wr[i] * inv);
            v = v > 127 ? 127 : v < -127 ? -127 : v;
            q[(size_t)r * (size_t)k + (size_t)i] = (int8_t)v;
            sum += (int32_t)v;
        }
        scale[r] = s;
        colsum[r] = sum;
    }
}

/* Reorders one block held plainly as (cols, k) row-major (= k x cols, tag ba) into the
 * packed layout md at dst. */
static int reorder_block(dnnl_engine_t eng, mt_compute_type t, const void *plain, int k, int cols,
                         const dnnl_memory_desc_t *md, void *dst)
{
    dnnl_memory_desc_t src_md;
    dnnl_dims_t dims = {k, cols};
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    dnnl_memory_t sm = NULL, dm = NULL;
    dnnl_stream_t stream = NULL;
    int ok = dnnl_memory_desc_init_by_tag(&src_md, 2, dims, weight_type(t), dnnl_ba) == dnnl_success &&
             dnnl_reorder_primitive_desc_create(&pd, &src_md, eng, md, eng, NULL) == dnnl_success &&
             dnnl_primitive_create(&prim, pd) == dnnl_success &&
             dnnl_memory_create(&sm, &src_md, eng, (void *)plain) == dnnl_success &&
             dnnl_memory_create(&dm, md, eng, dst) == dnnl_success &&
             dnnl_stream_create(&stream, eng, dnnl_stream_default_flags) == dnnl_success;
    if (ok) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, sm}, {DNNL_ARG_TO, dm}};
        ok = dnnl_primitive_execute(prim, stream, 2, args) == dnnl_success && dnnl_stream_wait(stream) == dnnl_success;
    }
    if (stream)
        dnnl_stream_destroy(stream);
    if (sm)
        dnnl_memory_destroy(sm);
    if (dm)
        dnnl_memory_destroy(dm);
    if (prim)
        dnnl_primitive_destroy(prim);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    return ok ? 0 : -1;
}

/* The layout brgemm asks for, for blocks `cols` wide (the same for every row count up to
 * MT_PACKED_MAX_ROWS, so one packed copy serves them all). */
static int query_layout(dnnl_engine_t eng, mt_compute_type t, int k, int cols, dnnl_memory_desc_t *md)
{
    dnnl_primitive_desc_t pd;
    if (matmul_pd(eng, t, MT_PACKED_MAX_ROWS, k, cols, NULL, &pd) != dnnl_success)
        return -1;
    *md = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_primitive_desc_destroy(pd);
    return 0;
}

/* Converts each column block to bfloat16, or quantizes it (filling its rows' scales and
 * column sums), then reorders it into its packed layout. */
static int pack_blocks(mt_packed *p, dnnl_engine_t eng, const float *w, float *scale, int32_t *colsum, char *err,
                       size_t errlen)
{
    size_t k = (size_t)p->k, nb = (size_t)p->nb;
    void *plain = p->type == MT_COMPUTE_FLOAT32 ? NULL : malloc(nb * k * 2); /* float32: reordered as is */
    if (!plain && p->type != MT_COMPUTE_FLOAT32)
        return mt_format(err, errlen, "out of memory packing a %d x %d matrix", p->n, p->k), -1;
    int rc = 0;
    for (int j = 0; j < p->blocks && !rc; j++) {
        int cols = j == p->blocks - 1 ? p->n - j * p->nb : p->nb;
        const float *wb = w + (size_t)j * nb * k;
        if (p->type == MT_COMPUTE_BFLOAT16)
            mt_packed_kernels_scalar.to_bf16(wb, plain, (size_t)cols * k);
        else if (p->type == MT_COMPUTE_INT8)
            quantize_rows(wb, cols, p->k, plain, scale + (size_t)j * nb, colsum + (size_t)j * nb);
        const dnnl_memory_desc_t *md = &p->md[j == p->blocks - 1 && cols != p->nb];
        if (reorder_block(eng, p->type, plain ? plain : wb, p->k, cols, md, p->data + (size_t)j * p->stride))
            rc = (mt_format(err, errlen, "oneDNN could not reorder block %d of a %d x %d matrix", j, p->n, p->k), -1);
    }
    free(plain);
    return rc;
}

mt_packed *mt_packed_create(mt_compute_type type, const float *w, int n, int k, char *err, size_t errlen)
{
    if (!packable(type) || n < 1 || k < 1) {
        mt_format(err, errlen, "cannot pack a %d x %d matrix as %s", n, k, mt_compute_type_name(type));
        return NULL;
    }
    one_omp_thread();
    mt_packed *p = calloc(1, sizeof *p);
    dnnl_engine_t eng = NULL;
    if (!p || dnnl_engine_create(&eng, dnnl_cpu, 0) != dnnl_success) {
        free(p);
        mt_format(err, errlen, "out of memory (or no oneDNN CPU engine) packing a %d x %d matrix", n, k);
        return NULL;
    }
    p->type = type;
    p->n = n;
    p->k = k;
    p->nb = block_cols(n);
    p->blocks = (n + p->nb - 1) / p->nb;
    int tail = n - (p->blocks - 1) * p->nb;
    int rc = query_layout(eng, type, k, p->nb, &p->md[0]);
    if (!rc)
        rc = query_layout(eng, type, k, tail, &p->md[1]);
    size_t weights = 0;
    if (rc) {
        mt_format(err, errlen, "oneDNN %s has no %s matmul for a %d x %d matrix", mt_packed_library_version(),
                  mt_compute_type_name(type), n, k);
    } else {
        p->stride = round_up(dnnl_memory_desc_get_size(&p->md[0]), ALIGN);
        weights = p->stride * (size_t)(p->blocks - 1) + round_up(dnnl_memory_desc_get_size(&p->md[1]), ALIGN);
        size_t extra = type == MT_COMPUTE_INT8 ? 2 * round_up(sizeof(float) * (size_t)n, ALIGN) : 0;
        p->map_bytes = round_up(weights + extra, PAGE);
        p->map = mmap(NULL, p->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p->map == MAP_FAILED) {
            p->map = NULL;
            rc = (mt_format(err, errlen, "cannot allocate %zu bytes for packed weights: %s", p->map_bytes,
                            strerror(errno)), -1);
        }
    }
    float *scale = NULL;
    int32_t *colsum = NULL;
    if (!rc) {
        p->data = p->map;
        if (type == MT_COMPUTE_INT8) {
            scale = (float *)(p->data + weights);
            colsum = (int32_t *)(p->data + weights + round_up(sizeof(float) * (size_t)n, ALIGN));
            p->scale = scale;
            p->colsum = colsum;
        }
    }
    if (!rc)
        rc = pack_blocks(p, eng, w, scale, colsum, err, errlen);
    dnnl_engine_destroy(eng);
    /* read-only from here: a stray write faults instead of corrupting what others read */
    if (!rc && mprotect(p->map, p->map_bytes, PROT_READ) != 0)
        rc = (mt_format(err, errlen, "mprotect: %s", strerror(errno)), -1);
    if (rc) {
        mt_packed_free(p);
        return NULL;
    }
    return p;
}

void mt_packed_free(mt_packed *p)
{
    if (!p)
        return;
    if (p->map)
        munmap(p->map, p->map_bytes);
    free(p);
}

size_t mt_packed_bytes(const mt_packed *p) { return p ? p->map_bytes : 0; }
int mt_packed_block_cols(const mt_packed *p) { return p->nb; }

/* ---- per-state primitives ---- */

typedef struct {
    mt_compute_type type;
    int rows, k, cols;               /* the key */
    const dnnl_memory_desc_t *wmd_key; /* layout asked for (compared by value) */
    dnnl_memory_desc_t src_md, wei_md, dst_md, pad_md;
    size_t pad_bytes;
    dnnl_primitive_t prim;
    char impl[64];
    int slots;                       /* memory objects per slot: src, wei, dst, scratchpad */
    dnnl_memory_t *mem;
} prim_entry;

struct mt_packed_ctx {
    dnnl_engine_t eng;
    prim_entry **tab;                /* open addressing, cap a power of two */
    int cap, used;
    int slots;
    dnnl_stream_t *streams;          /* per slot */
    mt_buf *dst, *pad;               /* per slot: block output, scratchpad */
    mt_buf act, act_scale;           /* the converted activations, row scales (int8) */
    char slow[64];                   /* the first primitive created that is not brgemm, or "" */
};

static int ctx_slots(mt_packed_ctx *c, int slots, size_t dst_bytes, size_t pad_bytes);

mt_packed_ctx *mt_packed_ctx_create(int slots, char *err, size_t errlen)
{
    one_omp_thread();
    mt_packed_ctx *c = calloc(1, sizeof *c);
    if (!c || dnnl_engine_create(&c->eng, dnnl_cpu, 0) != dnnl_success) {
        free(c);
        mt_format(err, errlen, "cannot create a oneDNN CPU engine");
        return NULL;
    }
    if (ctx_slots(c, slots > 1 ? slots : 1, 0, 0)) {
        mt_packed_ctx_free(c);
        mt_format(err, errlen, "cannot create %d oneDNN streams", slots);
        return NULL;
    }
    return c;
}

static void entry_free(prim_entry *e)
{
    if (!e)
        return;
    for (int i = 0; i < 4 * e->slots; i++)
        if (e->mem[i])
            dnnl_memory_destroy(e->mem[i]);
    free(e->mem);
    if (e->prim)
        dnnl_primitive_destroy(e->prim);
    free(e);
}

void mt_packed_ctx_free(mt_packed_ctx *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->cap; i++)
        entry_free(c->tab[i]);
    free(c->tab);
    for (int s = 0; s < c->slots; s++) {
        if (c->streams[s])
            dnnl_stream_destroy(c->streams[s]);
        mt_buf_release(&c->dst[s]);
        mt_buf_release(&c->pad[s]);
    }
    free(c->streams);
    free(c->dst);
    free(c->pad);
    mt_buf_release(&c->act);
    mt_buf_release(&c->act_scale);
    dnnl_engine_destroy(c->eng);
    free(c);
}

static unsigned entry_hash(mt_compute_type t, int rows, int k, int cols)
{
    unsigned h = (unsigned)t * 2654435761u;
    h = (h ^ (unsigned)rows) * 2246822519u;
    h = (h ^ (unsigned)k) * 3266489917u;
    h = (h ^ (unsigned)cols) * 668265263u;
    return h ^ (h >> 15);
}

static prim_entry **entry_slot(mt_packed_ctx *c, mt_compute_type t, int rows, int k, int cols)
{
    unsigned mask = (unsigned)c->cap - 1;
    for (unsigned i = entry_hash(t, rows, k, cols) & mask;; i = (i + 1) & mask) {
        prim_entry *e = c->tab[i];
        if (!e || (e->type == t && e->rows == rows && e->k == k && e->cols == cols))
            return &c->tab[i];
    }
}

static int ctx_grow_table(mt_packed_ctx *c)
{
    if (c->used * 2 < c->cap)
        return 0;
    int old_cap = c->cap;
    prim_entry **old = c->tab;
    c->cap = c->cap ? 2 * c->cap : 64;
    c->tab = calloc((size_t)c->cap, sizeof *c->tab);
    if (!c->tab) {
        c->tab = old;
        c->cap = old_cap;
        return -1;
    }
    for (int i = 0; i < old_cap; i++)
        if (old[i])
            *entry_slot(c, old[i]->type, old[i]->rows, old[i]->k, old[i]->cols) = old[i];
    free(old);
    return 0;
}

/* The primitive for rows x k by the packed layout md (cols wide); created on first use.
 * The primitive is asked for exactly the packed layout, so a kernel that wanted another
 * one would show as a different (slow) impl, which the tests check. */
static prim_entry *get_entry(mt_packed_ctx *c, mt_compute_type t, int rows, int k, int cols,
                             const dnnl_memory_desc_t *md, char *err, size_t errlen)
{
    if (ctx_grow_table(c))
        return mt_format(err, errlen, "out of memory"), NULL;
    prim_entry **at = entry_slot(c, t, rows, k, cols);
    if (*at)
        return *at;
    prim_entry *e = calloc(1, sizeof *e);
    if (!e)
        return mt_format(err, errlen, "out of memory"), NULL;
    e->type = t;
    e->rows = rows;
    e->k = k;
    e->cols = cols;
    dnnl_primitive_desc_t pd;
    one_omp_thread();
    if (matmul_pd(c->eng, t, rows, k, cols, md, &pd) != dnnl_success) {
        free(e);
        return mt_format(err, errlen, "oneDNN %s refuses a %s matmul of %d x %d by %d x %d in the packed layout",
                         mt_packed_library_version(), mt_compute_type_name(t), rows, k, k, cols), NULL;
    }
    snprintf(e->impl, sizeof e->impl, "%s", pd_impl(pd));
    if (!fast_impl(t, e->impl) && !c->slow[0])
        snprintf(c->slow, sizeof c->slow, "%s", e->impl);
    e->src_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    e->wei_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    e->dst_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    e->pad_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    e->pad_bytes = dnnl_memory_desc_get_size(&e->pad_md);
    dnnl_status_t s = dnnl_primitive_create(&e->prim, pd);
    dnnl_primitive_desc_destroy(pd);
    if (s != dnnl_success) {
        free(e);
        return mt_format(err, errlen, "oneDNN could not create a %s matmul primitive (%d rows)",
                         mt_compute_type_name(t), rows), NULL;
    }
    *at = e;
    c->used++;
    return e;
}

/* Per-slot streams and buffers for `slots` concurrent tasks, dst_bytes and pad_bytes
 * each; the driver calls this before a run. */
static int ctx_slots(mt_packed_ctx *c, int slots, size_t dst_bytes, size_t pad_bytes)
{
    if (slots > c->slots) {
        dnnl_stream_t *st = realloc(c->streams, sizeof *st * (size_t)slots);
        if (st)
            c->streams = st;
        mt_buf *d = realloc(c->dst, sizeof *d * (size_t)slots);
        if (d)
            c->dst = d;
        mt_buf *p = realloc(c->pad, sizeof *p * (size_t)slots);
        if (p)
            c->pad = p;
        if (!st || !d || !p)
            return -1;
        for (int s = c->slots; s < slots; s++) {
            c->dst[s] = (mt_buf){0};
            c->pad[s] = (mt_buf){0};
            if (dnnl_stream_create(&c->streams[s], c->eng, dnnl_stream_default_flags) != dnnl_success) {
                c->slots = s;
                return -1;
            }
        }
        c->slots = slots;
    }
    for (int s = 0; s < slots; s++)
        if (!mt_buf_reserve(&c->dst[s], dst_bytes ? dst_bytes : 64) ||
            !mt_buf_reserve(&c->pad[s], pad_bytes ? pad_bytes : 64))
            return -1;
    return 0;
}

/* Memory objects of entry e for slot s (created once, their handles set per call). */
static int entry_slots(mt_packed_ctx *c, prim_entry *e, int slots)
{
    if (slots <= e->slots)
        return 0;
    dnnl_memory_t *mem = realloc(e->mem, sizeof *mem * 4 * (size_t)slots);
    if (!mem)
        return -1;
    e->mem = mem;
    for (int s = e->slots; s < slots; s++) {
        const dnnl_memory_desc_t *mds[4] = {&e->src_md, &e->wei_md, &e->dst_md, &e->pad_md};
        for (int i = 0; i < 4; i++)
            if (dnnl_memory_create(&mem[4 * s + i], mds[i], c->eng, DNNL_MEMORY_NONE) != dnnl_success) {
                for (int j = 0; j < i; j++)
                    dnnl_memory_destroy(mem[4 * s + j]);
                e->slots = s;
                return -1;
            }
    }
    e->slots = slots;
    return 0;
}

/* ---- a product ---- */

typedef struct {
    mt_packed_ctx *c;
    const mt_packed *p;
    const mt_packed_kernels *pk;
    const mt_kernels *kern;
    const float *x, *b;
    float *y;
    int m, act;
    int chunk_rows, chunks, items;
    prim_entry *e[2][2];            /* [last row chunk][tail block] */
    const unsigned char *a;         /* converted x */
    const float *xs;                /* int8: row scales */
    int failed;                     /* any task's execute failed (written by tasks) */
} product_job;

static void convert_rows(const product_job *j, int lo, int hi, unsigned char *a, float *xs)
{
    size_t k = (size_t)j->p->k;
    if (j->p->type == MT_COMPUTE_FLOAT32) /* never called: float32 multiplies x itself */
        return;
    if (j->p->type == MT_COMPUTE_BFLOAT16) {
        j->pk->to_bf16(j->x + (size_t)lo * k, (uint16_t *)a + (size_t)lo * k, (size_t)(hi - lo) * k);
        return;
    }
    for (int r = lo; r < hi; r++)
        xs[r] = j->pk->quant_u8(j->x + (size_t)r * k, (int)k, a + (size_t)r * k);
}

typedef struct {
    const product_job *j;
    unsigned char *a;
    float *xs;
} convert_job;

static void convert_task(void *ctx, int task, int n_tasks)
{
    const convert_job *cj = ctx;
    int m = cj->j->m, per = (m + n_tasks - 1) / n_tasks, lo = task * per, hi = lo + per < m ? lo + per : m;
    if (lo < hi)
        convert_rows(cj->j, lo, hi, cj->a, cj->xs);
}

static void product_task(void *ctx, int task, int n_tasks)
{
    product_job *j = ctx;
    const mt_packed *p = j->p;
    mt_packed_ctx *c = j->c;
    size_t k = (size_t)p->k, n = (size_t)p->n;
    one_omp_thread();
    for (int item = task; item < j->items; item += n_tasks) {
        int chunk = item / p->blocks, blk = item % p->blocks;
        int r0 = chunk * j->chunk_rows, rows = j->m - r0 < j->chunk_rows ? j->m - r0 : j->chunk_rows;
        int c0 = blk * p->nb, cols = (int)n - c0 < p->nb ? (int)n - c0 : p->nb;
        prim_entry *e = j->e[chunk == j->chunks - 1][blk == p->blocks - 1];
        dnnl_memory_t *mem = e->mem + 4 * task;
        void *dst = c->dst[task].ptr;
        if (dnnl_memory_set_data_handle(mem[0], (void *)(j->a + (size_t)r0 * k * src_elt(p->type))) ||
            dnnl_memory_set_data_handle(mem[1], (void *)(p->data + (size_t)blk * p->stride)) ||
            dnnl_memory_set_data_handle(mem[2], dst) || dnnl_memory_set_data_handle(mem[3], c->pad[task].ptr)) {
            j->failed = 1;
            continue;
        }
        dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, mem[0]}, {DNNL_ARG_WEIGHTS, mem[1]}, {DNNL_ARG_DST, mem[2]},
                                   {DNNL_ARG_SCRATCHPAD, mem[3]}};
        if (dnnl_primitive_execute(e->prim, c->streams[task], 4, args) != dnnl_success) {
            j->failed = 1;
            continue;
        }
        float *y = j->y + (size_t)r0 * n + (size_t)c0;
        const float *b = j->b ? j->b + c0 : NULL;
        int relu = j->act == MT_ACT_RELU + 1;
        if (p->type == MT_COMPUTE_INT8)
            j->pk->epi_s32(dst, cols, y, (int)n, rows, cols, j->xs + r0, p->scale + c0, p->colsum + c0, b, relu);
        else
            j->pk->epi_f32(dst, cols, y, (int)n, rows, cols, b, relu);
        if (j->act && !relu)
            j->kern->bias_act(y, rows, (int)n, cols, NULL, j->act);
    }
}

/* Row chunks of at most MT_PACKED_MAX_ROWS, as equal as possible (two sizes at most:
 * chunk_rows, and a smaller last one). When the column blocks alone are fewer than the
 * threads, rows are cut further so every thread gets work, down to 16-row chunks (below
 * that a call costs more than it computes). */
static void plan_rows(int m, int blocks, int threads, int *chunk_rows, int *chunks)
{
    *chunks = (m + MT_PACKED_MAX_ROWS - 1) / MT_PACKED_MAX_ROWS;
    int want = (threads + blocks - 1) / blocks;
    if (*chunks < want) {
        int most = m / 16 > 1 ? m / 16 : 1;
        *chunks = want < most ? want : most > *chunks ? most : *chunks;
    }
    *chunk_rows = (m + *chunks - 1) / *chunks;
    *chunks = (m + *chunk_rows - 1) / *chunk_rows;
}

int mt_packed_linear(mt_packed_ctx *c, mt_pool *pool, int threads, const mt_kernels *kern, const mt_packed *p,
                     const float *x, int m, const float *b, float *y, int act, char *err, size_t errlen)
{
    if (m < 1)
        return 0;
    product_job j = {.c = c, .p = p, .pk = mt_packed_kernels_for(kern), .kern = kern, .x = x, .b = b, .y = y,
                     .m = m, .act = act};
    if (!pool || threads < 1)
        threads = 1;
    plan_rows(m, p->blocks, threads, &j.chunk_rows, &j.chunks);
    j.items = j.chunks * p->blocks;
    int tasks = threads < j.items ? threads : j.items;
    int last_rows = m - (j.chunks - 1) * j.chunk_rows, tail = p->n - (p->blocks - 1) * p->nb;
    size_t pad = 0;
    for (int lr = 0; lr < 2; lr++)
        for (int tb = 0; tb < 2; tb++) {
            prim_entry *e = get_entry(c, p->type, lr ? last_rows : j.chunk_rows, p->k, tb ? tail : p->nb,
                                      &p->md[tb && tail != p->nb], err, errlen);
            if (!e)
                return -1;
            if (entry_slots(c, e, tasks))
                return mt_format(err, errlen, "out of memory for oneDNN memory objects"), -1;
            pad = e->pad_bytes > pad ? e->pad_bytes : pad;
            j.e[lr][tb] = e;
        }
    size_t k = (size_t)p->k;
    int f32 = p->type == MT_COMPUTE_FLOAT32; /* x is multiplied as it is */
    unsigned char *a = f32 ? (unsigned char *)(uintptr_t)x : mt_buf_reserve(&c->act, (size_t)m * k * src_elt(p->type));
    float *xs = mt_buf_reserve(&c->act_scale, sizeof(float) * (size_t)m);
    if (!a || !xs || ctx_slots(c, tasks, sizeof(float) * (size_t)j.chunk_rows * (size_t)p->nb, pad))
        return mt_format(err, errlen, "out of memory for a %s product of %d rows", mt_compute_type_name(p->type),
                         m), -1;
    j.a = a;
    j.xs = xs;
    /* converting x is m k element operations against m k n multiply-adds: split it only
     * when it is big enough to be worth a second hand-over to the pool */
    convert_job cj = {.j = &j, .a = a, .xs = xs};
    if (f32)
        ;
    else if (pool && threads > 1 && (size_t)m * k >= 32768)
        mt_pool_run(pool, convert_task, &cj, threads < m ? threads : m);
    else
        convert_rows(&j, 0, m, a, xs);
    if (pool && tasks > 1)
        mt_pool_run(pool, product_task, &j, tasks);
    else
        product_task(&j, 0, 1);
    if (j.failed)
        return mt_format(err, errlen, "oneDNN failed to run a %s product (%d x %d by %d x %d)",
                         mt_compute_type_name(p->type), m, p->k, p->k, p->n), -1;
    return 0;
}

const char *mt_packed_impl(mt_packed_ctx *c, const mt_packed *p, int rows, char *err, size_t errlen)
{
    if (rows < 1 || rows > MT_PACKED_MAX_ROWS)
        return mt_format(err, errlen, "rows %d outside 1..%d", rows, MT_PACKED_MAX_ROWS), NULL;
    prim_entry *e = get_entry(c, p->type, rows, p->k, p->nb, &p->md[0], err, errlen);
    return e ? e->impl : NULL;
}

const char *mt_packed_slow_impl(const mt_packed_ctx *c) { return c->slow[0] ? c->slow : NULL; }

/* ---- measuring, for compute type auto ---- */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

double mt_packed_measure(mt_compute_type type, const mt_kernels *kern, const int *k, const int *n,
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
     * brgemm kernel for it, else packed (model.c, float32_packed) */
    int blas = type == MT_COMPUTE_FLOAT32 &&
               (kern == mt_kernels_get(MT_ISA_SCALAR) || !mt_packed_available(type, NULL, NULL, 0, NULL, 0));
    mt_packed_ctx *c = blas ? NULL : mt_packed_ctx_create(1, err, errlen);
    double total = -1.0;
    if (!w || !x || !y || !bias || !pk || (!blas && !c)) {
        mt_format(err, errlen, "out of memory measuring %s", mt_compute_type_name(type));
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
