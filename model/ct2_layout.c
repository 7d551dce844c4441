/* ct2_layout.c: where a CTranslate2 model directory or an argos-translate package keeps its
 * files, and their vocabularies and config.json tokens (see ct2_layout.h). Only reads. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ct2_layout.h"
#include "status.h"

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

static int read_json_list(const char *path, mt_ct2_vocab *v, char *err, size_t errlen)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (!j)
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: invalid JSON: %s at line %d", path, je.text, je.line);
    if (!json_is_array(j) || json_array_size(j) == 0 || json_array_size(j) > (1u << 24)) {
        json_decref(j);
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: must be a non-empty list of tokens", path);
    }
    v->tok = calloc(json_array_size(j), sizeof *v->tok);
    if (!v->tok) {
        json_decref(j);
        return mt_error(MT_ERR_NOMEM, err, errlen, "%s: out of memory", path);
    }
    size_t i;
    json_t *t;
    json_array_foreach(j, i, t) {
        if (!json_is_string(t) || !(v->tok[i] = strdup(json_string_value(t)))) {
            v->n = (int)i;
            json_decref(j);
            mt_ct2_vocab_free(v);
            return mt_error(MT_ERR_INVALID, err, errlen, "%s: entry %zu is not a string", path, i);
        }
    }
    v->n = (int)json_array_size(j);
    json_decref(j);
    return 0;
}

static int read_lines(FILE *f, const char *path, mt_ct2_vocab *v, char *err, size_t errlen)
{
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
    int bad = ferror(f) || got >= 0, empty = v->n == 0;
    free(line);
    if (bad || empty) {
        mt_ct2_vocab_free(v);
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: %s", path, bad ? "cannot be read" : "is empty");
    }
    return 0;
}

int mt_ct2_vocab_read(const char *dir, const char *name, mt_ct2_vocab *v, char *err, size_t errlen)
{
    char path[MT_CT2_PATH + 64];
    memset(v, 0, sizeof *v);
    mt_strfmt(path, sizeof path, "%s/%s.json", dir, name);
    if (access(path, F_OK) == 0) {
        mt_strfmt(v->name, sizeof v->name, "%s.json", name);
        return read_json_list(path, v, err, errlen) ? -1 : 0;
    }
    mt_strfmt(path, sizeof path, "%s/%s.txt", dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return errno == ENOENT ? 1 : (mt_error(MT_ERR_INVALID, err, errlen, "%s: %s", path, strerror(errno)), -1);
    mt_strfmt(v->name, sizeof v->name, "%s.txt", name);
    int rc = read_lines(f, path, v, err, errlen);
    fclose(f);
    return rc ? -1 : 0;
}

int mt_ct2_vocabs_load(const char *dir, mt_ct2_vocab *src, mt_ct2_vocab *tgt, int *shared, char *err, size_t errlen)
{
    memset(tgt, 0, sizeof *tgt);
    int rc = mt_ct2_vocab_read(dir, "shared_vocabulary", src, err, errlen);
    if (rc < 0)
        return -1;
    if (rc == 0) {
        *shared = 1;
        return 0;
    }
    *shared = 0;
    if ((rc = mt_ct2_vocab_read(dir, "source_vocabulary", src, err, errlen)) != 0)
        return rc < 0 ? -1 : mt_error(MT_ERR_INVALID, err, errlen, "%s has no shared_vocabulary.json (or .txt) "
                                      "nor source_vocabulary.json (or .txt)", dir), -1;
    if ((rc = mt_ct2_vocab_read(dir, "target_vocabulary", tgt, err, errlen)) != 0) {
        mt_ct2_vocab_free(src);
        return rc < 0 ? -1 : mt_error(MT_ERR_INVALID, err, errlen, "%s has source_vocabulary but no "
                                      "target_vocabulary.json (or .txt)", dir), -1;
    }
    return 0;
}

/* ---- config.json ---- */

static int config_string(json_t *cfg, const char *key, const char *def, char *out, size_t cap, const char *path,
                         char *err, size_t errlen)
{
    json_t *v = cfg ? json_object_get(cfg, key) : NULL;
    if (!v) {
        snprintf(out, cap, "%s", def);
        return 0;
    }
    if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) >= cap)
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: \"%s\" must be a token (a short string)", path, key);
    snprintf(out, cap, "%s", json_string_value(v));
    return 0;
}

int mt_ct2_tokens_load(const char *dir, mt_ct2_tokens *t, char *err, size_t errlen)
{
    char path[MT_CT2_PATH + 16];
    json_t *cfg = NULL;
    memset(t, 0, sizeof *t);
    mt_strfmt(path, sizeof path, "%s/config.json", dir);
    if (access(path, F_OK) == 0) {
        json_error_t je;
        cfg = json_load_file(path, 0, &je);
        if (!cfg || !json_is_object(cfg)) {
            json_decref(cfg);
            return mt_error(MT_ERR_INVALID, err, errlen, "%s: %s", path, cfg ? "not a JSON object" : je.text);
        }
        t->has_config = 1;
    }
    json_t *start = cfg ? json_object_get(cfg, "decoder_start_token") : NULL;
    t->has_start = !start || !json_is_null(start);
    int rc = config_string(cfg, "eos_token", "</s>", t->eos, sizeof t->eos, path, err, errlen) ||
             config_string(cfg, "unk_token", "<unk>", t->unk, sizeof t->unk, path, err, errlen) ||
             (t->has_start && config_string(cfg, "decoder_start_token", "<s>", t->start, sizeof t->start, path,
                                            err, errlen)) ? -1 : 0;
    t->add_source_eos = cfg && json_is_true(json_object_get(cfg, "add_source_eos"));
    t->add_source_bos = cfg && json_is_true(json_object_get(cfg, "add_source_bos"));
    json_decref(cfg);
    return rc;
}

/* ---- layouts ---- */

static int exists(char *buf, size_t cap, const char *dir, const char *name)
{
    struct stat sb;
    return stat(mt_strfmt(buf, cap, "%s/%s", dir, name), &sb) == 0 && S_ISREG(sb.st_mode);
}

int mt_ct2_layout_probe(const char *dir)
{
    char p[MT_CT2_PATH + 32];
    return exists(p, sizeof p, dir, "model.bin") || exists(p, sizeof p, dir, "metadata.json");
}

/* A language code of metadata.json: letters, digits, '-' and '_', 1 to 15 of them. */
static int lang_code(json_t *meta, const char *key, char out[16])
{
    const char *s = json_string_value(json_object_get(meta, key));
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 15 ||
        strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != n)
        return -1;
    memcpy(out, s, n + 1);
    return 0;
}

static int read_metadata(const char *path, mt_ct2_layout *l, char *err, size_t errlen)
{
    json_error_t je;
    json_t *meta = json_load_file(path, 0, &je);
    if (!meta)
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: %s", path, je.text);
    int rc = 0;
    if (lang_code(meta, "from_code", l->from) || lang_code(meta, "to_code", l->to))
        rc = mt_error(MT_ERR_INVALID, err, errlen, "%s: from_code and to_code must be language codes (letters, "
                      "digits, '-', '_')", path);
    json_decref(meta);
    return rc;
}

/* The SentencePiece model(s): the model directory's own source.spm (+ target.spm), else
 * the package's one sentencepiece.model for both sides (argos-translate's layout). */
static int find_spm(const char *dir, mt_ct2_layout *l, char *err, size_t errlen)
{
    char p[MT_CT2_PATH + 32];
    if (exists(p, sizeof p, l->model_dir, "source.spm")) {
        mt_strfmt(l->source_spm, sizeof l->source_spm, "%s", p);
    } else if (exists(p, sizeof p, dir, "sentencepiece.model") ||
               exists(p, sizeof p, l->model_dir, "sentencepiece.model")) {
        mt_strfmt(l->source_spm, sizeof l->source_spm, "%s", p);
    } else {
        mt_strfmt(p, sizeof p, "%s/sentencepiece.model", dir);
        if (l->kind == MT_CT2_ARGOS_PACKAGE || l->from[0]) /* a package, or one flattened (hub/argos.c) */
            return mt_error(MT_ERR_INVALID, err, errlen, "%s: missing: the package has no SentencePiece model (nor "
                            "model/source.spm)", p);
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: missing: a CTranslate2 directory needs its SentencePiece "
                        "model beside model.bin (sentencepiece.model, or source.spm and target.spm)", p);
    }
    if (exists(p, sizeof p, l->model_dir, "target.spm"))
        mt_strfmt(l->target_spm, sizeof l->target_spm, "%s", p);
    else
        memcpy(l->target_spm, l->source_spm, sizeof l->target_spm);
    return 0;
}

int mt_ct2_layout_find(const char *dir, mt_ct2_layout *l, char *err, size_t errlen)
{
    char p[MT_CT2_PATH + 32];
    memset(l, 0, sizeof *l);
    if (strlen(dir) >= MT_CT2_PATH - 32)
        return mt_error(MT_ERR_INVALID, err, errlen, "%.64s...: path too long", dir);
    int meta = exists(p, sizeof p, dir, "metadata.json");
    if (meta && exists(p, sizeof p, dir, "model/model.bin")) {
        l->kind = MT_CT2_ARGOS_PACKAGE;
        mt_strfmt(l->model_dir, sizeof l->model_dir, "%s/model", dir);
    } else if (exists(p, sizeof p, dir, "model.bin")) {
        l->kind = MT_CT2_DIRECTORY;
        mt_strfmt(l->model_dir, sizeof l->model_dir, "%s", dir);
    } else {
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: %s", dir, meta ? "the package has no model/model.bin (a "
                        "CTranslate2 model)" : "no model.bin (not a CTranslate2 model directory)");
    }
    if (meta && read_metadata(mt_strfmt(p, sizeof p, "%s/metadata.json", dir), l, err, errlen))
        return -1;
    return find_spm(dir, l, err, errlen);
}
