/* config_file.c: applies a config file (TOML subset, parsed by toml.c) over an mt_config:
 * [sections] of the settings table and [[models]]; every error names FILE:LINE:COLUMN. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config_internal.h"
#include "status.h"
#include "toml.h"

/* ------------------------------------------------------------------ applying a file */

typedef struct {
    mt_config *cfg;
    mt_toml_reader *r;
    const char *base_dir;
    char section[64];
    int in_models;           /* current table is a [[models]] entry */
    int models_replaced;     /* the file's first [[models]] cleared cfg's list */
    int model_line, model_col;
    mt_config_model model;   /* entry being read */
    unsigned char seen_sections[CFG_N_SECTIONS];
    unsigned char seen_keys[CFG_MAX_SETTINGS];
    unsigned char seen_model_keys[5];
} file_ctx;

static const char *const MODEL_KEYS[] = {"path", "source", "target", "name", "compute_type"};

static int finish_model(file_ctx *fc)
{
    if (!fc->in_models) return 0;
    fc->in_models = 0;
    mt_toml_reader *r = fc->r;
    mt_config_model *m = &fc->model;
    if (!m->path)
        return mt_toml_fail(r, fc->model_line, fc->model_col, "[[models]] entry has no 'path'");
    if (!m->source != !m->target)
        return mt_toml_fail(r, fc->model_line, fc->model_col,
                     "[[models]] entry must give both 'source' and 'target', or neither");
    if (fc->base_dir && *fc->base_dir && m->path[0] != '/') {
        size_t n = strlen(fc->base_dir) + strlen(m->path) + 2;
        char *p = malloc(n);
        if (!p) return mt_toml_fail(r, fc->model_line, fc->model_col, "out of memory");
        snprintf(p, n, "%s/%s", fc->base_dir, m->path);
        free(m->path);
        m->path = p;
    }
    if (cfg_push_model(fc->cfg, m)) return mt_toml_fail(r, fc->model_line, fc->model_col, "out of memory");
    return 0;
}

static int apply_model_key(file_ctx *fc, const char *key, int kl, int kc, mt_toml_value *v)
{
    mt_toml_reader *r = fc->r;
    int idx = -1;
    for (int i = 0; i < 5; i++)
        if (strcmp(key, MODEL_KEYS[i]) == 0) idx = i;
    if (idx < 0)
        return mt_toml_fail(r, kl, kc, "unknown key '%s' in [[models]] (known: path, source, target, name, "
                     "compute_type)", key);
    if (fc->seen_model_keys[idx]) return mt_toml_fail(r, kl, kc, "duplicate key 'models.%s'", key);
    fc->seen_model_keys[idx] = 1;
    if (v->type != MT_TOML_STR)
        return mt_toml_fail(r, v->line, v->col, "models.%s must be a string, not %s", key,
                     mt_toml_type_name(v->type));
    if (v->slen == 0 || strlen(v->s) != v->slen)
        return mt_toml_fail(r, v->line, v->col, "models.%s must not be empty", key);
    if ((idx == 1 || idx == 2) && !cfg_valid_lang(v->s))
        return mt_toml_fail(r, v->line, v->col,
                     "models.%s: '%s' is not a language code (letters, digits, '-', '_')", key,
                     v->s);
    if (idx == 4 && !mt_config_compute_type_valid(v->s))
        return mt_toml_fail(r, v->line, v->col,
                     "models.compute_type: '%s' is not float32, bfloat16, int8, auto or default", v->s);
    char **field = idx == 0 ? &fc->model.path
                 : idx == 1 ? &fc->model.source
                 : idx == 2 ? &fc->model.target
                 : idx == 3 ? &fc->model.name
                            : &fc->model.compute_type;
    free(*field);
    *field = v->s;
    v->s = NULL;
    return 0;
}

/* "unknown key" naming the keys of the current table. */
static int unknown_key(file_ctx *fc, const char *key, int kl, int kc)
{
    char known[512];
    size_t n = 0;
    known[0] = '\0';
    for (size_t i = 0; i < cfg_n_settings; i++)
        if (strcmp(cfg_settings[i].section, fc->section) == 0 && n < sizeof known) {
            int w = snprintf(known + n, sizeof known - n, "%s%s", n ? ", " : "", cfg_settings[i].key);
            if (w > 0) n += (size_t)w;
        }
    return mt_toml_fail(fc->r, kl, kc, "unknown key '%s' in [%s] (known: %s)", key, fc->section, known);
}

/* Stores a file value into setting s (named `where` in messages). */
static int store_value(file_ctx *fc, const setting *s, const char *where, mt_toml_value *v)
{
    mt_toml_reader *r = fc->r;
    char *base = (char *)fc->cfg;
    char msg[256];
    switch (s->kind) {
    case K_STR:
        if (v->type != MT_TOML_STR)
            return mt_toml_fail(r, v->line, v->col, "%s must be a string, not %s", where, mt_toml_type_name(v->type));
        if (v->slen == 0 || strlen(v->s) != v->slen)
            return mt_toml_fail(r, v->line, v->col, "%s must not be empty", where);
        if (v->slen >= 256) return mt_toml_fail(r, v->line, v->col, "%s is too long", where);
        memcpy(base + s->off, v->s, v->slen + 1);
        return 0;
    case K_DEC:
        if (cfg_dec_type(s) == MT_OPT_BOOL) {
            if (v->type != MT_TOML_BOOL)
                return mt_toml_fail(r, v->line, v->col, "%s must be a boolean (true or false), not %s", where,
                                    mt_toml_type_name(v->type));
            fc->cfg->decoding[s->off] = v->b;
            return 0;
        }
        /* fall through */
    case K_INT:
    case K_LONG:
    case K_FLOAT: {
        int is_float = s->kind == K_FLOAT || (s->kind == K_DEC && cfg_dec_type(s) == MT_OPT_FLOAT);
        double d;
        int is_int;
        if (v->type == MT_TOML_INT) {
            d = (double)v->i;
            is_int = 1;
        } else if (v->type == MT_TOML_FLOAT) {
            d = v->f;
            is_int = 0;
        } else {
            return mt_toml_fail(r, v->line, v->col, "%s must be %s, not %s", where,
                         is_float ? "a number" : "an integer", mt_toml_type_name(v->type));
        }
        if (!is_float && !is_int)
            return mt_toml_fail(r, v->line, v->col, "%s must be an integer, not a float", where);
        if (cfg_store_number(fc->cfg, s, d, is_int, where, msg, sizeof msg))
            return mt_toml_fail(r, v->line, v->col, "%s", msg);
        return 0;
    }
    case K_BOOL:
        if (v->type != MT_TOML_BOOL)
            return mt_toml_fail(r, v->line, v->col, "%s must be a boolean (true or false), not %s", where,
                         mt_toml_type_name(v->type));
        *(int *)(base + s->off) = v->b;
        return 0;
    case K_LEVEL: {
        int l;
        if (v->type != MT_TOML_STR)
            return mt_toml_fail(r, v->line, v->col, "%s must be a string, not %s", where, mt_toml_type_name(v->type));
        if (cfg_parse_level_text(v->s, &l))
            return mt_toml_fail(r, v->line, v->col, "%s: '%s' is not a log level (error, warn, info, debug)",
                         where, v->s);
        *(int *)(base + s->off) = l;
        return 0;
    }
    case K_KEYS:
        if (v->type != MT_TOML_ARRAY)
            return mt_toml_fail(r, v->line, v->col, "%s must be an array of strings, not %s", where,
                         mt_toml_type_name(v->type));
        cfg_free_keys(fc->cfg);
        for (int i = 0; i < v->n_items; i++) {
            if (v->item_lens[i] == 0 || strlen(v->items[i]) != v->item_lens[i])
                return mt_toml_fail(r, v->line, v->col, "%s: keys must not be empty", where);
            if (cfg_push_key(fc->cfg, v->items[i], v->item_lens[i]))
                return mt_toml_fail(r, v->line, v->col, "out of memory");
        }
        return 0;
    }
    return mt_toml_fail(r, v->line, v->col, "internal error");
}

static int apply_file_key(file_ctx *fc, const char *key, int kl, int kc, mt_toml_value *v)
{
    mt_toml_reader *r = fc->r;
    if (fc->in_models) return apply_model_key(fc, key, kl, kc, v);
    if (!fc->section[0])
        return mt_toml_fail(r, kl, kc, "key '%s' outside a table: put it under [server], [workers], "
                     "[batch], [limits], [decoding] or [log]", key);
    const setting *s = NULL;
    size_t si = 0;
    for (size_t i = 0; i < cfg_n_settings; i++)
        if (strcmp(cfg_settings[i].section, fc->section) == 0 && strcmp(cfg_settings[i].key, key) == 0) {
            s = &cfg_settings[i];
            si = i;
        }
    if (!s) return unknown_key(fc, key, kl, kc);
    if (fc->seen_keys[si]) return mt_toml_fail(r, kl, kc, "duplicate key '%s.%s'", s->section, key);
    fc->seen_keys[si] = 1;

    char where[128];
    snprintf(where, sizeof where, "%s.%s", s->section, s->key);
    return store_value(fc, s, where, v);
}

/* A table header: [section], or a [[models]] entry. */
static int apply_table(file_ctx *fc, const mt_toml_item *it)
{
    mt_toml_reader *r = fc->r;
    int line = it->line, col = it->col, array = it->array;
    const char *name = it->name;
    if (finish_model(fc)) return -1;
    if (strcmp(name, "models") == 0) {
        if (!array) return mt_toml_fail(r, line, col, "models are an array of tables: write [[models]]");
        if (!fc->models_replaced) {
            cfg_free_models(fc->cfg);
            fc->models_replaced = 1;
        }
        fc->in_models = 1;
        fc->model_line = line;
        fc->model_col = col;
        memset(fc->seen_model_keys, 0, sizeof fc->seen_model_keys);
        fc->section[0] = '\0';
        return 0;
    }
    size_t si = CFG_N_SECTIONS;
    for (size_t i = 0; i < CFG_N_SECTIONS; i++)
        if (strcmp(cfg_sections[i], name) == 0) si = i;
    if (si == CFG_N_SECTIONS)
        return mt_toml_fail(r, line, col, "unknown table [%s] (known: server, workers, batch, limits, "
                            "decoding, log, [[models]])", name);
    if (array) return mt_toml_fail(r, line, col, "[%s] is a table, not an array of tables", name);
    if (fc->seen_sections[si]) return mt_toml_fail(r, line, col, "duplicate table [%s]", name);
    fc->seen_sections[si] = 1;
    snprintf(fc->section, sizeof fc->section, "%s", name);
    return 0;
}

int mt_config_load_string(mt_config *cfg, const char *text, size_t len, const char *name,
                          const char *base_dir, char *err, size_t errlen)
{
    mt_toml_reader r;
    mt_toml_init(&r, text, len, name, err, errlen);
    file_ctx fc;
    memset(&fc, 0, sizeof fc);
    fc.cfg = cfg;
    fc.r = &r;
    fc.base_dir = base_dir;
    int rc = 0;
    mt_toml_item it;
    int ev;
    while ((ev = mt_toml_next(&r, &it)) > 0) {
        if (ev == MT_TOML_TABLE) {
            rc = apply_table(&fc, &it);
        } else {
            rc = apply_file_key(&fc, it.name, it.line, it.col, &it.value);
            mt_toml_value_clear(&it.value);
        }
        if (rc) break;
    }
    if (ev < 0) rc = -1;
    if (!rc) rc = finish_model(&fc);
    cfg_free_model(&fc.model);
    return rc ? -1 : 0;
}

int mt_config_load_file(mt_config *cfg, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) return mt_error(MT_ERR_INVALID, err, errlen, "%s: cannot open config file: %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fclose(f);
            return mt_error(MT_ERR_INVALID, err, errlen, "%s: out of memory", path);
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
        if (n == cap) {
            if (cap >= (16u << 20)) {
                free(buf);
                fclose(f);
                return mt_error(MT_ERR_INVALID, err, errlen, "%s: config file larger than 16 MiB", path);
            }
            cap *= 2;
            char *nb = realloc(buf, cap);
            if (!nb) free(buf);
            buf = nb;
        }
    }
    int rerr = ferror(f);
    fclose(f);
    if (rerr) {
        free(buf);
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: read error", path);
    }
    char *dir = cfg_dup(path);
    if (!dir) {
        free(buf);
        return mt_error(MT_ERR_NOMEM, err, errlen, "out of memory");
    }
    char *slash = strrchr(dir, '/');
    if (slash) {
        if (slash == dir) slash[1] = '\0';
        else *slash = '\0';
    } else {
        dir[0] = '\0';
    }
    int rc = mt_config_load_string(cfg, buf, n, path, dir, err, errlen);
    free(dir);
    free(buf);
    return rc;
}
