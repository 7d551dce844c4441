/* ct2_dir.h: a CTranslate2 model directory's config.json as this engine takes it (internal to
 * model/; ct2.c's loader uses it). The vocabularies and tokens come from ct2_layout.h.
 * Errors: -1 with a message in err. Thread-safety: no shared state. */
#ifndef MT_CT2_DIR_H
#define MT_CT2_DIR_H

#include <stddef.h>

#include "ct2_layout.h"

/* dir/config.json (optional: CTranslate2 before 3.0 wrote none) into c, refusing the
 * options this engine does not implement (add_source_bos, a null decoder_start_token,
 * another layer_norm_epsilon, multi-query attention, AWQ). */
int mt_ct2_config_load(const char *dir, mt_ct2_tokens *c, char *err, size_t errlen);

#endif
