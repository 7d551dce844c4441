/* packed_run.c: the products on packed weights (packed.h): a state's oneDNN context
 * (engine, streams, a cache of primitives by shape), the conversion of x, and the split
 * of a product into row chunks and column blocks over the state's pool. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "packed_impl.h"

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
    mt_pk_one_omp_thread();
    mt_packed_ctx *c = calloc(1, sizeof *c);
    if (!c || dnnl_engine_create(&c->eng, dnnl_cpu, 0) != dnnl_success) {
        free(c);
        mt_strfmt(err, errlen, "cannot create a oneDNN CPU engine");
        return NULL;
    }
    if (ctx_slots(c, slots > 1 ? slots : 1, 0, 0)) {
        mt_packed_ctx_free(c);
        mt_strfmt(err, errlen, "cannot create %d oneDNN streams", slots);
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
        return mt_strfmt(err, errlen, "out of memory"), NULL;
    prim_entry **at = entry_slot(c, t, rows, k, cols);
    if (*at)
        return *at;
    prim_entry *e = calloc(1, sizeof *e);
    if (!e)
        return mt_strfmt(err, errlen, "out of memory"), NULL;
    e->type = t;
    e->rows = rows;
    e->k = k;
    e->cols = cols;
    dnnl_primitive_desc_t pd;
    mt_pk_one_omp_thread();
    if (mt_pk_matmul_pd(c->eng, t, rows, k, cols, md, &pd) != dnnl_success) {
        free(e);
        return mt_strfmt(err, errlen, "oneDNN %s refuses a %s matmul of %d x %d by %d x %d in the packed layout",
                         mt_packed_library_version(), mt_compute_type_name(t), rows, k, k, cols), NULL;
    }
    snprintf(e->impl, sizeof e->impl, "%s", mt_pk_pd_impl(pd));
    if (!mt_pk_fast_impl(t, e->impl) && !c->slow[0])
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
        return mt_strfmt(err, errlen, "oneDNN could not create a %s matmul primitive (%d rows)",
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
    mt_pk_one_omp_thread();
    for (int item = task; item < j->items; item += n_tasks) {
        int chunk = item / p->blocks, blk = item % p->blocks;
        int r0 = chunk * j->chunk_rows, rows = j->m - r0 < j->chunk_rows ? j->m - r0 : j->chunk_rows;
        int c0 = blk * p->nb, cols = (int)n - c0 < p->nb ? (int)n - c0 : p->nb;
        prim_entry *e = j->e[chunk == j->chunks - 1][blk == p->blocks - 1];
        dnnl_memory_t *mem = e->mem + 4 * task;
        void *dst = c->dst[task].ptr;
        if (dnnl_memory_set_data_handle(mem[0], (void *)(j->a + (size_t)r0 * k * mt_pk_src_elt(p->type))) ||
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
                return mt_strfmt(err, errlen, "out of memory for oneDNN memory objects"), -1;
            pad = e->pad_bytes > pad ? e->pad_bytes : pad;
            j.e[lr][tb] = e;
        }
    size_t k = (size_t)p->k;
    int f32 = p->type == MT_COMPUTE_FLOAT32; /* x is multiplied as it is */
    unsigned char *a = f32 ? (unsigned char *)(uintptr_t)x : mt_buf_reserve(&c->act, (size_t)m * k * mt_pk_src_elt(p->type));
    float *xs = mt_buf_reserve(&c->act_scale, sizeof(float) * (size_t)m);
    if (!a || !xs || ctx_slots(c, tasks, sizeof(float) * (size_t)j.chunk_rows * (size_t)p->nb, pad))
        return mt_strfmt(err, errlen, "out of memory for a %s product of %d rows", mt_compute_type_name(p->type),
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
        return mt_strfmt(err, errlen, "oneDNN failed to run a %s product (%d x %d by %d x %d)",
                         mt_compute_type_name(p->type), m, p->k, p->k, p->n), -1;
    return 0;
}

const char *mt_packed_impl(mt_packed_ctx *c, const mt_packed *p, int rows, char *err, size_t errlen)
{
    if (rows < 1 || rows > MT_PACKED_MAX_ROWS)
        return mt_strfmt(err, errlen, "rows %d outside 1..%d", rows, MT_PACKED_MAX_ROWS), NULL;
    prim_entry *e = get_entry(c, p->type, rows, p->k, p->nb, &p->md[0], err, errlen);
    return e ? e->impl : NULL;
}

const char *mt_packed_slow_impl(const mt_packed_ctx *c) { return c->slow[0] ? c->slow : NULL; }
