/* ct2_dir.c: a CTranslate2 model directory's config.json as this engine takes it: the
 * tokens and vocabularies are read by ct2_layout.c (shared with the tokenizer and `mt-models
 * install`); here the options this engine does not implement are refused by name. ct2.c
 * maps model.bin's variables and checks them against what is read here. No state of its
 * own: each call reads into the caller's structs, safe from any thread. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>

#include "ct2_dir.h"
#include "internal.h"

/* config.json (optional: CTranslate2 before 3.0 wrote none): its tokens with CTranslate2's
 * defaults (ct2_layout.c, shared with the tokenizer and `mt-models install`), then the
 * options this engine does not implement, refused by name. */
int mt_ct2_config_load(const char *dir, mt_ct2_tokens *c, char *err, size_t errlen)
{
    if (mt_ct2_tokens_load(dir, c, err, errlen))
        return -1;
    char path[4096];
    json_t *cfg = NULL;
    mt_strfmt(path, sizeof path, "%s/config.json", dir);
    if (c->has_config && !(cfg = json_load_file(path, 0, NULL)))
        return mt_error(MT_ERR_INVALID, err, errlen, "config.json: cannot be read again"), -1;
    int rc = -1;
    json_t *eps = cfg ? json_object_get(cfg, "layer_norm_epsilon") : NULL;
    if (eps && !json_is_null(eps) && (!json_is_number(eps) || fabs(json_number_value(eps) - 1e-5) > 1e-12)) {
        mt_error(MT_ERR_INVALID, err, errlen, "config.json: layer_norm_epsilon %g is not supported (this engine's "
                 "layer norms use 1e-5)", json_number_value(eps));
        goto done;
    }
    if (cfg && json_is_true(json_object_get(cfg, "multi_query_attention"))) {
        mt_error(MT_ERR_INVALID, err, errlen, "config.json: multi_query_attention is not supported");
        goto done;
    }
    json_t *q = cfg ? json_object_get(cfg, "quantization_type") : NULL;
    if (q && !json_is_null(q) && !(json_is_integer(q) && json_integer_value(q) == 0)) {
        mt_error(MT_ERR_INVALID, err, errlen, "config.json: quantization_type %lld (AWQ) is not supported",
                 (long long)json_integer_value(q));
        goto done;
    }
    if (!c->has_start) {
        mt_error(MT_ERR_INVALID, err, errlen, "config.json: decoder_start_token is null (the caller would give "
                 "it as a target prefix): not supported");
        goto done;
    }
    if (c->add_source_bos) {
        mt_error(MT_ERR_INVALID, err, errlen, "config.json: add_source_bos true is not supported (the source gets "
                 "no start token here)");
        goto done;
    }
    rc = 0;
done:
    json_decref(cfg);
    return rc;
}
