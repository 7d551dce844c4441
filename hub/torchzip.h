/* torchzip.h: reads the state dict of a pytorch_model.bin written by torch.save without
 * PyTorch: torch's zip format (ARCHIVE/data.pkl plus one ARCHIVE/data/KEY entry per
 * storage) and its legacy format (before torch 1.6, which many 2020 OPUS-MT uploads use:
 * pickles in a row, then each storage's element count and data). data.pkl is read by a
 * restricted unpickler (unpickle.c) that, as torch.load(weights_only=True)
 * does, knows only the opcodes and globals of tensor storage rebuilds
 * (collections.OrderedDict, torch._utils._rebuild_tensor_v2 / _rebuild_parameter,
 * torch.*Storage) and refuses every other global by name before anything is called:
 * nothing in the file is ever executed. Internal to hub/.
 *
 * Thread-safety: an mh_torch belongs to one thread at a time. */
#ifndef MH_TORCHZIP_H
#define MH_TORCHZIP_H

#include <stddef.h>
#include <stdint.h>

enum { MH_F32, MH_F16, MH_BF16, MH_F64, MH_I64, MH_I32, MH_I16, MH_I8, MH_U8, MH_BOOL, MH_NDTYPES };

typedef struct {
    const char *name;   /* state dict key (borrowed from the mh_torch) */
    int dtype;          /* MH_* */
    int ndim;
    int64_t shape[8];
    int64_t stride[8];  /* in elements */
    int64_t offset;     /* first element, in elements into the storage */
    int storage;        /* index of the storage the tensor views */
} mh_torch_tensor;

typedef struct mh_torch mh_torch;

/* Opens a torch.save file (zip or legacy) and reads its state dict (no tensor data yet). */
mh_torch *mh_torch_open(const char *path, char *err, size_t errlen);
/* The same on an in-memory file (borrowed; must outlive the result): the fuzzer's entry. */
mh_torch *mh_torch_parse(const void *bytes, size_t len, char *err, size_t errlen);
void mh_torch_close(mh_torch *t);

int mh_torch_count(const mh_torch *t);
const mh_torch_tensor *mh_torch_at(const mh_torch *t, int i);
/* Copies tensor i's elements, row-major and contiguous, into dst (numel * element size
 * bytes). 0, or -1 with a message (a storage entry missing or too short). */
int mh_torch_read(mh_torch *t, int i, void *dst, char *err, size_t errlen);

/* Unpickles a data.pkl alone and checks it is a flat state dict of tensors; 0 or -1 with
 * a message. For the fuzzer and tests: the same code mh_torch_open runs. */
int mh_unpickle_check(const void *bytes, size_t len, char *err, size_t errlen);

size_t mh_dtype_size(int dtype);
/* "F32", "F16", "BF16", "F64", "I64", ...: safetensors' names. */
const char *mh_dtype_name(int dtype);

#endif
