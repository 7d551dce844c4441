/* packed_impl.h: what packed.c (availability, packing) and packed_run.c (per-state
 * primitives and products) share; private to those two files. */
#ifndef MT_PACKED_IMPL_H
#define MT_PACKED_IMPL_H

#include <oneapi/dnnl/dnnl.h>

#include "packed.h"

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

/* Every call into oneDNN from one of our threads runs it single-threaded. */
void mt_pk_one_omp_thread(void);
/* Bytes of one element of x as the product reads it (int8: u8, bfloat16: 2, float32: 4). */
size_t mt_pk_src_elt(mt_compute_type t);
/* A matmul primitive descriptor for rows x k by k x n; wei NULL lets oneDNN choose the
 * weights' layout. */
dnnl_status_t mt_pk_matmul_pd(dnnl_engine_t eng, mt_compute_type t, int rows, int k, int n,
                              const dnnl_memory_desc_t *wei, dnnl_primitive_desc_t *pd);
/* oneDNN's name for pd's implementation ("?" if it will not say). */
const char *mt_pk_pd_impl(const_dnnl_primitive_desc_t pd);
/* 1 for a kernel worth using: brgemm (with VNNI or AMX for int8). */
int mt_pk_fast_impl(mt_compute_type t, const char *impl);

#endif
