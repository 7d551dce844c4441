/* decode_opts.h: decoding controls applied to one hypothesis's next-token distribution
 * (sampling, repetition penalty, no-repeat n-grams, min length, target prefix).
 * Internal to model/. Pure functions of their arguments: callable from any thread. */
#ifndef MT_DECODE_OPTS_H
#define MT_DECODE_OPTS_H

#include "model.h"

/* 0 when opts leave the search as it was (the fast path skips every call below). */
int mt_decode_opts_active(const mt_search_options *opts);

/* 1 when the step picks by sampling rather than by score. */
int mt_decode_opts_sampling(const mt_search_options *opts);

/* Validates the controls for n sentences; 0 or MT_ERR_INVALID with a message naming
 * the field and its allowed range in err. */
int mt_decode_opts_check(const mt_model_info *info, const mt_search_options *opts, int n,
                         char *err, size_t errlen);

/* Before log-softmax: repetition penalty over gen[0..t), then the sampling temperature. */
void mt_decode_opts_logits(const mt_search_options *opts, const int *gen, int t, float *logits, int vocab);

/* After log-softmax and the pad/bad-id masks, for sentence `sent` at step t (gen[0..t) its
 * generated tokens, limit its step limit): prefix forcing, min length, no-repeat n-grams. */
void mt_decode_opts_logprobs(const mt_search_options *opts, const mt_model_info *info, int sent,
                             const int *gen, int t, int limit, float *lp, int vocab);

/* Draws the step-t token of sentence `sent` from lp (top-k, then top-p);
 * scratch holds vocab floats. -1 when every entry is -inf. */
int mt_decode_opts_sample(const mt_search_options *opts, int sent, int t, const float *lp, int vocab,
                          float *scratch);

/* The uniform [0, 1) number drawn for (seed, sentence index, step): splitmix64 mixing,
 * so that tools/mtref draws the same. */
double mt_decode_opts_uniform(uint64_t seed, uint64_t index, int step);

/* The decoder layer whose cross-attention gives alignments (alignment_layer resolved). */
int mt_decode_opts_layer(const mt_model_info *info, const mt_search_options *opts);

/* 1 when the search must compute alignments (returned, or used by replace_unknowns). */
int mt_decode_opts_aligns(const mt_search_options *opts);

/* Index of the largest of x[0..n) (the first on ties). */
int mt_decode_opts_argmax(const float *x, int n);

#endif
