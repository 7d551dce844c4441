/* spm_shim.h: the project's only door into the SentencePiece C++ library.
 *
 * An opaque handle over sentencepiece::SentencePieceProcessor with a C API; no C++
 * exception crosses it. Thread-safety: a loaded mt_spm is read-only; encode/decode
 * may be called from any number of threads at once.
 */
#ifndef MT_SPM_SHIM_H
#define MT_SPM_SHIM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mt_spm mt_spm;

/* Called once per piece, in order; piece is NOT NUL-terminated and is borrowed for
 * the call only. Return 0 to go on, non-zero to stop the encoding. */
typedef int (*mt_spm_piece_fn)(void *ctx, const char *piece, size_t len);

/* Loads a SentencePiece model file; NULL with a message in err on failure. */
mt_spm *mt_spm_load(const char *path, char *err, size_t errlen);
void mt_spm_free(mt_spm *spm);

/* Encodes text (len bytes, valid UTF-8) to pieces, calling fn for each. Returns 0, or
 * -1 with a message in err (the callback's non-zero return also gives -1, err empty). */
int mt_spm_encode(const mt_spm *spm, const char *text, size_t len, mt_spm_piece_fn fn,
                  void *ctx, char *err, size_t errlen);

/* Decodes n pieces (NUL-terminated strings) to text (SentencePiece DecodePieces).
 * Returns a malloc'd NUL-terminated string (caller frees) and its length in *outlen,
 * or NULL with a message in err. */
char *mt_spm_decode(const mt_spm *spm, const char *const *pieces, size_t n,
                    size_t *outlen, char *err, size_t errlen);

/* The score (for a unigram model, the log-probability SentencePiece learnt) of piece[0, len)
 * into *score: 0, or -1 when the model has no such piece. */
int mt_spm_piece_score(const mt_spm *spm, const char *piece, size_t len, float *score);
/* 1 when the model spells unknown characters as byte pieces ("<0xE2>"), else 0. */
int mt_spm_byte_fallback(const mt_spm *spm);

#ifdef __cplusplus
}
#endif

#endif
