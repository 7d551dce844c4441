/* config_flags.c: the environment (MT_*) and command-line flags applied over an
 * mt_config, and mt_config_resolve, which puts defaults, file, environment and flags in
 * that order. */
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

#include <unistd.h>

#include "config_internal.h"
#include "models_dir.h"
#include "status.h"

/* ------------------------------------------------------------------ environment */

const char *cfg_env_get(char *const *envp, const char *name)
{
    if (!envp) return NULL;
    size_t n = strlen(name);
    for (char *const *e = envp; *e; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
    return NULL;
}

/* Calls fn for each comma-separated item (spaces around items trimmed, empty skipped). */
static int for_each_item(const char *list, int (*fn)(void *, const char *, size_t), void *user)
{
    const char *p = list;
    while (*p) {
        const char *q = strchr(p, ',');
        const char *e = q ? q : p + strlen(p);
        const char *a = p, *b = e;
        while (a < b && isspace((unsigned char)*a)) a++;
        while (b > a && isspace((unsigned char)b[-1])) b--;
        if (b > a && fn(user, a, (size_t)(b - a))) return -1;
        if (!q) break;
        p = q + 1;
    }
    return 0;
}

static int key_item(void *user, const char *s, size_t n) { return cfg_push_key(user, s, n); }

typedef struct {
    mt_config *cfg;
    char *err;
    size_t errlen;
    const char *where;
} model_item_ctx;

static int model_item(void *user, const char *s, size_t n)
{
    model_item_ctx *c = user;
    char *spec = cfg_dupn(s, n);
    if (!spec) return mt_error(MT_ERR_NOMEM, c->err, c->errlen, "out of memory");
    mt_config_model m;
    char e[256];
    int rc = mt_config_parse_model_spec(spec, &m, e, sizeof e);
    free(spec);
    if (rc) return mt_error(MT_ERR_INVALID, c->err, c->errlen, "%s: %s", c->where, e);
    if (cfg_push_model(c->cfg, &m)) {
        cfg_free_model(&m);
        return mt_error(MT_ERR_NOMEM, c->err, c->errlen, "out of memory");
    }
    return 0;
}

/* --models-dir DIR: every model there (models_dir.h: installed ones and unpacked
 * argos-translate packages), in name order; their languages come from their own files. */
static int add_models_dir(mt_config *cfg, const char *dir, char *err, size_t errlen)
{
    mt_models_entry *list;
    int n, rc = 0;
    char e[512];
    if (mt_models_dir_list(dir, &list, &n, e, sizeof e))
        return mt_error(MT_ERR_INVALID, err, errlen, "--models-dir %s", e);
    if (n == 0) rc = mt_error(MT_ERR_INVALID, err, errlen, "--models-dir %s: no model there (a directory "
                              "with config.json, as mt-models install puts them there, or an unpacked "
                              "argos-translate package)", dir);
    model_item_ctx c = {cfg, err, errlen, "--models-dir"};
    for (int i = 0; i < n && !rc; i++) {
        if (strchr(list[i].path, ':')) /* a ':' would read as DIR:SRC:TGT */
            rc = mt_error(MT_ERR_INVALID, err, errlen, "--models-dir: %s has a ':' in its path; give it with --model",
                          list[i].path);
        else if (model_item(&c, list[i].path, strlen(list[i].path)))
            rc = -1;
    }
    mt_models_dir_free(list, n);
    return rc;
}

int mt_config_apply_env(mt_config *cfg, char *const *envp, char *err, size_t errlen)
{
    char where[96];
    for (size_t i = 0; i < cfg_n_settings; i++) {
        const setting *s = &cfg_settings[i];
        const char *v = cfg_env_get(envp, s->env);
        if (!v || !*v) continue;
        snprintf(where, sizeof where, "environment variable %s", s->env);
        if (s->kind == K_KEYS) {
            cfg_free_keys(cfg);
            if (for_each_item(v, key_item, cfg)) return mt_error(MT_ERR_NOMEM, err, errlen, "out of memory");
            continue;
        }
        if (cfg_apply_text(cfg, s, v, where, err, errlen)) return -1;
    }
    const char *models = cfg_env_get(envp, "MT_MODELS");
    if (models && *models) {
        cfg_free_models(cfg);
        model_item_ctx c = {cfg, err, errlen, "environment variable MT_MODELS"};
        if (for_each_item(models, model_item, &c)) return -1;
    }
    return 0;
}

int mt_config_apply_engine_env(mt_config *cfg, char *const *envp, char *err, size_t errlen)
{
    char where[96];
    for (size_t i = 0; i < cfg_n_settings; i++) {
        const setting *s = &cfg_settings[i];
        const char *v = cfg_env_get(envp, s->env);
        if (!v || !*v || (strcmp(s->section, "engine") && strcmp(s->key, "compute_type"))) continue;
        snprintf(where, sizeof where, "environment variable %s", s->env);
        if (cfg_apply_text(cfg, s, v, where, err, errlen)) return -1;
    }
    if (!mt_config_compute_type_valid(cfg->compute_type))
        return mt_error(MT_ERR_INVALID, err, errlen, "MT_COMPUTE_TYPE: '%s' is not float32, bfloat16, int8, auto or default",
                        cfg->compute_type);
    return cfg_validate_engine(cfg, err, errlen);
}

/* ------------------------------------------------------------------ flags */

/* Matches argv[*i] against a flag name: "--name VALUE" or "--name=VALUE". Returns 1 and
 * sets *value when matched, 0 when not this flag, -1 when the value is missing. */
int cfg_match_flag(const char *name, int argc, char *const *argv, int *i, const char **value)
{
    if (!name) return 0;
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0) return 0;
    if (a[n] == '=') {
        *value = a + n + 1;
        return 1;
    }
    if (a[n] != '\0') return 0;
    if (*i + 1 >= argc) return -1;
    *value = argv[++*i];
    return 1;
}

int mt_config_apply_args(mt_config *cfg, int argc, char *const *argv, char *err, size_t errlen)
{
    int models_given = 0, keys_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = NULL;
        int m;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) { cfg->show_help = 1; continue; }
        if (strcmp(a, "--version") == 0) { cfg->show_version = 1; continue; }
        if (strcmp(a, "--print-config") == 0) { cfg->print_config = 1; continue; }
        if ((m = cfg_match_flag("--config", argc, argv, &i, &v))) {
            if (m < 0) return mt_error(MT_ERR_INVALID, err, errlen, "--config needs a value");
            continue; /* loaded by mt_config_resolve */
        }
        if ((m = cfg_match_flag("--model", argc, argv, &i, &v))) {
            if (m < 0) return mt_error(MT_ERR_INVALID, err, errlen, "--model needs a value (DIR or DIR:SRC:TGT)");
            if (!models_given++) cfg_free_models(cfg);
            model_item_ctx c = {cfg, err, errlen, "--model"};
            if (model_item(&c, v, strlen(v))) return -1;
            continue;
        }
        if ((m = cfg_match_flag("--models-dir", argc, argv, &i, &v))) {
            if (m < 0) return mt_error(MT_ERR_INVALID, err, errlen, "--models-dir needs a value (DIR)");
            if (!models_given++) cfg_free_models(cfg);
            if (add_models_dir(cfg, v, err, errlen)) return -1;
            continue;
        }
        if (strcmp(a, "--no-access-log") == 0) { cfg->access_log = 0; continue; }
        const setting *hit = NULL;
        for (size_t k = 0; k < cfg_n_settings && !hit; k++) {
            const setting *s = &cfg_settings[k];
            const char *names[2] = {s->flag, s->alias};
            for (int j = 0; j < 2 && !hit; j++) {
                if (!names[j]) continue;
                int is_bool = s->kind == K_BOOL || (s->kind == K_DEC && cfg_dec_type(s) == MT_OPT_BOOL);
                if (is_bool && strcmp(a, names[j]) == 0) {
                    hit = s;
                    /* "--flag true|false" as the help shows, or a bare "--flag" meaning true */
                    if (i + 1 < argc && (!strcmp(argv[i + 1], "true") || !strcmp(argv[i + 1], "false"))) {
                        v = argv[++i];
                    } else {
                        if (s->kind == K_DEC) cfg->decoding[s->off] = 1;
                        else *(int *)((char *)cfg + s->off) = 1;
                        v = NULL;
                    }
                    break;
                }
                m = cfg_match_flag(names[j], argc, argv, &i, &v);
                if (m < 0) return mt_error(MT_ERR_INVALID, err, errlen, "%s needs a value (%s)", names[j], s->metavar);
                if (m > 0) hit = s;
            }
        }
        if (!hit) {
            if (a[0] == '-') return mt_error(MT_ERR_INVALID, err, errlen, "unknown option '%s' (see --help)", a);
            return mt_error(MT_ERR_INVALID, err, errlen, "unexpected argument '%s' (see --help)", a);
        }
        if (!v) continue;
        char where[64];
        snprintf(where, sizeof where, "%s", hit->flag);
        if (hit->kind == K_KEYS) {
            if (!*v) return mt_error(MT_ERR_INVALID, err, errlen, "%s: empty value", hit->flag);
            if (!keys_given++) cfg_free_keys(cfg);
            if (cfg_push_key(cfg, v, strlen(v))) return mt_error(MT_ERR_NOMEM, err, errlen, "out of memory");
            continue;
        }
        if (cfg_apply_text(cfg, hit, v, where, err, errlen)) return -1;
    }
    return 0;
}

int mt_config_resolve(mt_config *cfg, int argc, char *const *argv, char *const *envp,
                      char *err, size_t errlen)
{
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        int m = cfg_match_flag("--config", argc, argv, &i, &v);
        if (m < 0) return mt_error(MT_ERR_INVALID, err, errlen, "--config needs a value");
        if (m > 0) path = v;
    }
    if (!path) {
        path = cfg_env_get(envp, "MT_CONFIG");
        if (path && !*path) path = NULL;
    }
    /* --help and --version win over any error in the other settings. */
    int help = 0, version = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) help = 1;
        if (strcmp(argv[i], "--version") == 0) version = 1;
    }
    if (help || version) {
        cfg->show_help = help;
        cfg->show_version = version;
        return 0;
    }
    if (path) {
        if (mt_config_load_file(cfg, path, err, errlen)) return -1;
        free(cfg->config_path);
        if (!(cfg->config_path = cfg_dup(path))) return mt_error(MT_ERR_NOMEM, err, errlen, "out of memory");
    }
    if (mt_config_apply_env(cfg, envp, err, errlen)) return -1;
    if (mt_config_apply_args(cfg, argc, argv, err, errlen)) return -1;
    return mt_config_validate(cfg, err, errlen);
}
