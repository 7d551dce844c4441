/* ct2_file.h: a validating reader of CTranslate2's model.bin (internal to model/).
 *
 * Layout (little-endian, as CTranslate2's ModelSpec._serialize writes it and
 * models::Model::load reads it): uint32 binary version (1..6); from version 2 a string
 * spec name and a uint32 spec revision; uint32 variable count, then per variable a
 * string name, uint8 rank, rank x uint32 dimensions, then from version 4 a uint8 type id
 * (float32, int8, int16, int32, float16, bfloat16) and a uint32 byte count, before 4 a
 * uint8 item size (4 float32, 2 int16, 1 int8) and a uint32 element count, then the bytes;
 * from version 3 a uint32 alias count and pairs of strings (alias, variable name). A
 * string is a uint16 length counting a final NUL, then that many bytes.
 *
 * An alias also names the variable's "_scale" (and "_zero") companions, as in
 * CTranslate2. Thread-safety: a parsed file is read-only; the buffer it was parsed from is
 * borrowed and must outlive it. */
#ifndef MT_CT2_FILE_H
#define MT_CT2_FILE_H

#include <stddef.h>
#include <stdint.h>

enum { MT_CT2_F32, MT_CT2_I8, MT_CT2_I16, MT_CT2_I32, MT_CT2_F16, MT_CT2_BF16, MT_CT2_NTYPES };

typedef struct {
    const char *name;   /* owned by the file object */
    int dtype;          /* MT_CT2_* */
    int rank;           /* 0 (a scalar) .. 4 */
    int64_t shape[4];
    int64_t numel;      /* product of the shape (1 for a scalar) */
    const void *data;   /* borrowed: inside the parsed buffer, possibly unaligned */
} mt_ct2_var;

typedef struct mt_ct2_file mt_ct2_file;

/* Parses and validates model.bin's bytes (borrowed). NULL with a message naming the
 * byte offset and the field (truncated file, unknown version or type, a byte count that
 * does not match the shape, a duplicate name, an alias of nothing). */
mt_ct2_file *mt_ct2_parse(const void *bytes, size_t len, char *err, size_t errlen);
void mt_ct2_free(mt_ct2_file *f);

unsigned mt_ct2_version(const mt_ct2_file *f);
const char *mt_ct2_spec(const mt_ct2_file *f);      /* "" before version 2 */
unsigned mt_ct2_revision(const mt_ct2_file *f);
int mt_ct2_count(const mt_ct2_file *f);             /* variables, aliases excluded */
const mt_ct2_var *mt_ct2_at(const mt_ct2_file *f, int i);
/* The variable of name, or of the alias name; NULL when neither. */
const mt_ct2_var *mt_ct2_find(const mt_ct2_file *f, const char *name);
/* Index of v among mt_ct2_at's. */
int mt_ct2_index(const mt_ct2_file *f, const mt_ct2_var *v);

const char *mt_ct2_type_name(int dtype);
size_t mt_ct2_type_size(int dtype);
/* A scalar's value as a double (any type); 0 and a message when v is not one element. */
int mt_ct2_scalar(const mt_ct2_var *v, double *out, char *err, size_t errlen);
/* Copies v's elements into dst as float32 (no scale applied; int32 too). */
void mt_ct2_to_f32(const mt_ct2_var *v, float *dst);

#endif
