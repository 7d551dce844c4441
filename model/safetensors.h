/* safetensors.h: a validating reader of the safetensors format (internal to model/).
 * Layout: 8-byte little-endian header length N, N bytes of JSON
 * {"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}},
 * then the data section that the offsets index. */
#ifndef MT_SAFETENSORS_H
#define MT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

/* I8 holds weights quantized per row by our converter (tools/safetensors_io.py
 * quantize_int8), each with a float "<name>_scale" vector beside it. */
enum { MT_DTYPE_F32, MT_DTYPE_F16, MT_DTYPE_BF16, MT_DTYPE_I8 };

typedef struct {
    const char *name;   /* borrowed from the file object */
    int dtype;          /* MT_DTYPE_* */
    int ndim;
    int64_t shape[8];
    int64_t numel;
    const void *data;   /* borrowed: inside the mapping, possibly unaligned */
} mt_tensor_view;

typedef struct mt_safetensors mt_safetensors;

/* Maps path read-only and validates every tensor entry. */
mt_safetensors *mt_safetensors_open(const char *path, char *err, size_t errlen);
/* Validates an in-memory file (borrowed, must outlive the result); used by the fuzzer. */
mt_safetensors *mt_safetensors_parse(const void *bytes, size_t len, char *err, size_t errlen);
void mt_safetensors_close(mt_safetensors *st);

int mt_safetensors_count(const mt_safetensors *st);
const mt_tensor_view *mt_safetensors_at(const mt_safetensors *st, int i);
const mt_tensor_view *mt_safetensors_find(const mt_safetensors *st, const char *name);

/* Hands the whole pages of t's bytes in a file opened with mt_safetensors_open back to
 * the page cache (they stop counting in this process's resident memory; reading t again
 * still works): a loader calls it once a tensor is copied, so loading peaks at one copy
 * of the weights, not two. Nothing for parsed memory. */
void mt_safetensors_release(const mt_safetensors *st, const mt_tensor_view *t);
/* Bytes per element of a dtype. */
size_t mt_dtype_size(int dtype);
/* Copies t's elements into dst as float32 (F16/BF16/I8 widened; no scale applied). */
void mt_tensor_to_f32(const mt_tensor_view *t, float *dst);

#endif
