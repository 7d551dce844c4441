/* probe.h: test-only entry points into the forward pass (not part of the public API;
 * tests/model_probe.c and the model test programs use them to compare with PyTorch).
 * Same thread-safety as model.h: one state, one thread at a time. */
#ifndef MT_PROBE_H
#define MT_PROBE_H

#include <stdint.h>

#include "model.h"

/* Encoder output [src_len, d_model] for one source (ending in eos); out is the caller's. */
int mt_encode_one(mt_state *state, const int32_t *src, int src_len, float *out);
/* The decoder's logits [prefix_len, tgt_vocab] (h . lm_head^T + final_logits_bias, before
 * any masking) for a prefix that starts with the start token; out is the caller's. */
int mt_decoder_logits(mt_state *state, const int32_t *src, int src_len,
                      const int32_t *prefix, int prefix_len, float *out);

#endif
