/* unpickle.h: the weights-only unpickler under torchzip.c: runs one pickle of a
 * torch.save file and hands back its flat state dict (storages and named tensor views) or,
 * for the legacy format's header, the small values around it. Only the opcodes and
 * globals of tensor storage rebuilds are known (torchzip.h lists them); anything else is
 * refused by name, and nothing in the file is ever executed. Internal to hub/.
 *
 * Errors: -1 with "data.pkl: ..." in err. Thread-safety: no shared state. */
#ifndef MH_UNPICKLE_H
#define MH_UNPICKLE_H

#include <stddef.h>
#include <stdint.h>

#include "torchzip.h"

typedef struct {
    char *key;          /* the storage's name in the file (ARCHIVE/data/KEY) */
    int dtype;          /* MH_* */
    int64_t numel;
} mh_storage;

/* A state dict: what a torch.save file's main pickle describes (no tensor data). */
typedef struct {
    mh_storage *st;
    size_t nst;
    mh_torch_tensor *t; /* count tensors, named by names[] (owned here) */
    char **names;
    int count;
} mh_state_dict;

/* Runs the pickle in bytes[0..len) and checks it is a flat dict of named tensors; on
 * success fills sd (when not NULL; free with mh_state_dict_free) and *used (when not
 * NULL) with the bytes the pickle took. 0 or -1 with a message. */
int mh_unpickle(const void *bytes, size_t len, mh_state_dict *sd, size_t *used, char *err, size_t errlen);
void mh_state_dict_free(mh_state_dict *sd);

/* The legacy format's header pickles (torchzip.c, open_legacy). */
enum { MH_LEGACY_INT, MH_LEGACY_SYS_INFO, MH_LEGACY_KEYS };
/* Runs one: MH_LEGACY_INT an int (into *ival); MH_LEGACY_SYS_INFO a dict whose
 * little_endian must not be false; MH_LEGACY_KEYS the list of sd's storage keys, after
 * which each storage's element count and data follow: data_off[k] (all (size_t)-1 on
 * entry) is set to where storage k's data starts, as base + its offset in b. *used: the
 * bytes taken (for the keys, the data too). 0 or -1 with a message. */
int mh_unpickle_legacy(const unsigned char *b, size_t len, size_t base, int what, const mh_state_dict *sd,
                       size_t *data_off, int64_t *ival, size_t *used, char *err, size_t errlen);

#endif
