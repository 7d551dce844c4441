/* ct2_dir.c: the text files of a CTranslate2 model directory: config.json (with
 * CTranslate2's defaults, refusing the options this engine does not implement) and the
 * vocabularies (shared, or source and target; .json or .txt). ct2.c maps model.bin's
 * variables and checks them against what is read here. No state of its own: each call
 * reads into the caller's structs, safe from any thread. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ct2_dir.h"
#include "internal.h"

/* ---- vocabularies ---- */

void mt_ct2_vocab_free(mt_ct2_vocab *v)
{
    for (int i = 0; i < v->n; i++)
        free(v->tok[i]);
    free(v->tok);
    v->tok = NULL;
    v->n = 0;
}

int mt_ct2_vocab_find(const mt_ct2_vocab *v, const char *s)
{
    for (int i = 0; i < v->n; i++)
        if (!strcmp(v->tok[i], s))
            return i;
    return -1;
}

/* NAME.json (a list of strings) or NAME.txt (one token a line), as CTranslate2 reads them.
 * 1 when neither exists. */
static int vocab_load(const char *dir, const char *name, mt_ct2_vocab *v, char *err, size_t errlen)
{
    char path[4096];
    memset(v, 0, sizeof *v);
    mt_strfmt(path, sizeof path, "%s/%s.json", dir, name);
    if (access(path, F_OK) == 0) {
        mt_strfmt(v->path, sizeof v->path, "%s.json", name);
        json_error_t je;
        json_t *j = json_load_file(path, 0, &je);
        if (!j)
            return mt_error(MT_ERR_INVALID, err, errlen, "%s: invalid JSON: %s at line %d", v->path, je.text,
                            je.line), -1;
        if (!json_is_array(j) || json_array_size(j) == 0 || json_array_size(j) > (1u << 24)) {
            json_decref(j);
            return mt_error(MT_ERR_INVALID, err, errlen, "%s: must be a non-empty list of tokens", v->path), -1;
        }
        v->tok = calloc(json_array_size(j), sizeof *v->tok);
        if (!v->tok) {
            json_decref(j);
            return mt_error(MT_ERR_NOMEM, err, errlen, "%s: out of memory", v->path), -1;
        }
        size_t i;
        json_t *t;
        json_array_foreach(j, i, t) {
            if (!json_is_string(t) || !(v->tok[i] = strdup(json_string_value(t)))) {
                v->n = (int)i;
                json_decref(j);
                mt_ct2_vocab_free(v);
                return mt_error(MT_ERR_INVALID, err, errlen, "%s: entry %zu is not a string", path, i), -1;
            }
        }
        v->n = (int)json_array_size(j);
        json_decref(j);
        return 0;
    }
    mt_strfmt(path, sizeof path, "%s/%s.txt", dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return errno == ENOENT ? 1 : (mt_error(MT_ERR_INVALID, err, errlen, "%s: %s", path, strerror(errno)), -1);
    mt_strfmt(v->path, sizeof v->path, "%s.txt", name);
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    int vcap = 0;
    while ((got = getline(&line, &cap, f)) >= 0) {
        if (got > 0 && line[got - 1] == '\n')
            line[--got] = 0;
        if (v->n == vcap) {
            vcap = vcap ? vcap * 2 : 1024;
            char **nt = vcap <= (1 << 24) ? realloc(v->tok, sizeof *nt * (size_t)vcap) : NULL;
            if (!nt)
                break;
            v->tok = nt;
        }
        if (!(v->tok[v->n] = strdup(line)))
            break;
        v->n++;
    }
    int bad = ferror(f) || got >= 0;
    free(line);
    fclose(f);
    if (bad || v->n == 0) {
        mt_ct2_vocab_free(v);
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: %s", path, v->n ? "cannot be read" : "is empty"), -1;
    }
    return 0;
}

/* The source and target vocabularies: shared_vocabulary, or source_/target_vocabulary. */
int mt_ct2_vocabs_load(const char *dir, mt_ct2_vocab *src, mt_ct2_vocab *tgt, int *shared, char *err, size_t errlen)
{
    int rc = vocab_load(dir, "shared_vocabulary", src, err, errlen);
    if (rc < 0)
        return -1;
    if (rc == 0) {
        *shared = 1;
        return 0;
    }
    *shared = 0;
    if ((rc = vocab_load(dir, "source_vocabulary", src, err, errlen)) != 0)
        return rc < 0 ? -1 : mt_error(MT_ERR_INVALID, err, errlen, "%s has no shared_vocabulary.json (or .txt) "
                                      "nor source_vocabulary.json (or .txt)", dir), -1;
    if ((rc = vocab_load(dir, "target_vocabulary", tgt, err, errlen)) != 0) {
        mt_ct2_vocab_free(src);
        return rc < 0 ? -1 : mt_error(MT_ERR_INVALID, err, errlen, "%s has source_vocabulary but no "
                                      "target_vocabulary.json (or .txt)", dir), -1;
    }
    return 0;
}

/* ---- config.json ---- */

static int config_string(json_t *cfg, const char *key, const char *def, char *out, size_t cap, char *err,
                         size_t errlen)
{
    json_t *v = cfg ? json_object_get(cfg, key) : NULL;
    if (!v) {
        snprintf(out, cap, "%s", def);
        return 0;
    }
    if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) >= cap)
        return mt_error(MT_ERR_INVALID, err, errlen, "config.json: \"%s\" must be a token (a short string)", key), -1;
    snprintf(out, cap, "%s", json_string_value(v));
    return 0;
}

/* config.json (optional: CTranslate2 before 3.0 wrote none) with CTranslate2's defaults. */
int mt_ct2_config_load(const char *dir, mt_ct2_config *c, char *err, size_t errlen)
{
    char path[4096];
    json_t *cfg = NULL;
    mt_strfmt(path, sizeof path, "%s/config.json", dir);
    if (access(path, F_OK) == 0) {
        json_error_t je;
        cfg = json_load_file(path, 0, &je);
        if (!cfg || !json_is_object(cfg)) {
            json_decref(cfg);
            return mt_error(MT_ERR_INVALID, err, errlen, "config.json: %s", cfg ? "not a JSON object" : je.text), -1;
        }
    }
    int rc = -1;
    json_t *start = cfg ? json_object_get(cfg, "decoder_start_token") : NULL;
    c->has_start = !start || !json_is_null(start);
    if (config_string(cfg, "eos_token", "</s>", c->eos, sizeof c->eos, err, errlen) ||
        (c->has_start && config_string(cfg, "decoder_start_token", "<s>", c->start, sizeof c->start, err, errlen)))
        goto done;
    c->add_source_eos = cfg && json_is_true(json_object_get(cfg, "add_source_eos"));
    c->add_source_bos = cfg && json_is_true(json_object_get(cfg, "add_source_bos"));
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
