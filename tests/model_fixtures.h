/* model_fixtures.h: what the model test programs (test_model_*.c) share: a scratch
 * directory per test, tiny model directories written into it (tiny_model.h), the source
 * sentences the search tests translate and a deterministic value generator. */
#ifndef MT_TEST_MODEL_FIXTURES_H
#define MT_TEST_MODEL_FIXTURES_H

#include <stdint.h>
#include <string.h>

#include "tiny_model.h"

/* A checked fixture: a fresh directory under /tmp for the test's models, removed after. */
void make_root(void);
void remove_root(void);
/* Writes a model from spec into a fresh directory and returns its path (static buffer). */
const char *write_model(const char *name, const tiny_model_spec *spec);

/* Six source sentences as ids, each ending in eos (0), one of them eos alone, and their
 * lengths: what the search and packed tests translate. */
extern const int32_t sources[6][8];
extern const int source_lens[6];

/* A deterministic value, a multiple of scale in [-1000, 1000] x scale, from *state (an LCG). */
float det_value(unsigned *state, float scale);

#define ASSERT_CONTAINS(hay, needle) ck_assert_msg(strstr((hay), (needle)) != NULL, "'%s' not in '%s'", (needle), (hay))

#endif
