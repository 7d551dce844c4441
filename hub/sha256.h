/* sha256.h: SHA-256 (FIPS 180-4), for checking downloaded files against the hub's LFS
 * digests. Internal to hub/. Thread-safety: a context belongs to one thread. */
#ifndef MH_SHA256_H
#define MH_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t h[8];
    uint64_t len;       /* bytes fed so far */
    unsigned char buf[64];
    size_t fill;
} mh_sha256;

void mh_sha256_init(mh_sha256 *c);
void mh_sha256_update(mh_sha256 *c, const void *data, size_t n);
/* Writes the digest as 64 lowercase hex digits and a NUL into hex[65]. */
void mh_sha256_hex(mh_sha256 *c, char hex[65]);
/* The digest of a whole file into hex[65]; 0, or -1 with errno set. */
int mh_sha256_file(const char *path, char hex[65]);

#endif
