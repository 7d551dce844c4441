/* format_zip.h: the zip layer of .docx/.odt (libzip): opens an archive held in memory,
 * refuses hostile ones, reads entries, replaces some and writes the result into a new
 * buffer with every other entry's bytes, order and compression kept.
 *
 * Refused at open (MT_FORMAT_TOO_LARGE / MT_FORMAT_INVALID, the entry named): more than
 * opt->max_entries entries, declared sizes summing past opt->max_total_uncompressed,
 * encrypted entries, two entries of one name, names that are absolute, hold a ".."
 * component, a backslash or a NUL. Refused at read: an entry over opt->max_part_bytes
 * (alone or with the entries read before it), one over 1 MiB that unpacks more than
 * opt->max_ratio times its compressed size, one that unpacks to another size than its
 * directory says.
 *
 * Ownership: the input buffer is borrowed for the archive's lifetime (never written nor
 * freed: the rewritten archive goes to a buffer of its own); data given to
 * fmt_zip_replace is taken over. One archive belongs to one thread at a time.
 */
#ifndef MT_FORMAT_ZIP_H
#define MT_FORMAT_ZIP_H

#include <stddef.h>

#include "formats.h"

typedef struct fmt_zip fmt_zip;

/* Opens data[0..len); NULL with the status in *code and a message (prefixed with what)
 * in err. opt is copied. */
fmt_zip *fmt_zip_open(const unsigned char *data, size_t len, const mt_format_options *opt,
                      const char *what, int *code, char *err, size_t errlen);
long fmt_zip_count(const fmt_zip *z);
const char *fmt_zip_name(const fmt_zip *z, long i); /* valid until fmt_zip_free */
/* Entry i unpacked (malloc'd, NUL-terminated, *len bytes): 0 or an mt_format_status. */
int fmt_zip_read(fmt_zip *z, long i, unsigned char **data, size_t *len, char *err,
                 size_t errlen);
/* Replaces entry i by data[0..len) (malloc'd; taken over, also on failure), deflated. */
int fmt_zip_replace(fmt_zip *z, long i, unsigned char *data, size_t len, char *err,
                    size_t errlen);
/* Writes the archive with its replacements into *out (malloc'd, *out_len bytes) and
 * closes it: only fmt_zip_free may follow, whatever the result. */
int fmt_zip_write(fmt_zip *z, unsigned char **out, size_t *out_len, char *err, size_t errlen);
void fmt_zip_free(fmt_zip *z);

#endif
