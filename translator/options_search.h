/* options_search.h: the decoding options table applied to the engine's search options
 * (model.h's mt_search_options), for the service's own files: resolving a request,
 * comparing batches, keying the sentence cache. Front ends use options.h only.
 *
 * Thread-safety: pure functions. */
#ifndef MT_TRANSLATOR_OPTIONS_SEARCH_H
#define MT_TRANSLATOR_OPTIONS_SEARCH_H

#include <stddef.h>

#include "model.h"
#include "options.h"

/* The value of option id in o, as a double (a u64 seed up to 2^53 exactly). */
double mt_option_get(const mt_search_options *o, int id);
/* Writes the options set in d into o (the others keep their values). */
void mt_decoding_apply(const mt_decoding *d, mt_search_options *o);

/* 1 when a and b agree on every batch_key option (and the fields no table row covers
 * that shape a batch: extra banned ids, unk_id). */
int mt_options_same_batch(const mt_search_options *a, const mt_search_options *b);
/* The cache_key options of o as bytes: out must hold mt_options_key_size() bytes. */
size_t mt_options_key_size(void);
void mt_options_key(const mt_search_options *o, unsigned char *out);

#endif
