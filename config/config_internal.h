/* config_internal.h: what the files of config/ share (not a public header): the settings
 * table (config.c) that the file reader (config_file.c), the environment and flag reader
 * (config_flags.c) and the writer (config_write.c) all walk, and the helpers that store a
 * value into an mt_config. */
#ifndef MT_CONFIG_INTERNAL_H
#define MT_CONFIG_INTERNAL_H

#include <stddef.h>

#include "config.h"

#ifndef MT_VERSION
#define MT_VERSION "0.1.0"
#endif

/* K_DEC: a [decoding] option, stored as a double in mt_config.decoding[off] (NAN: unset);
 * its range min..max, its type (cfg_dec_type) and whether min is excluded from
 * decoding_options.h's row. */
typedef enum { K_STR, K_INT, K_LONG, K_FLOAT, K_BOOL, K_LEVEL, K_KEYS, K_DEC } kind_t;

typedef struct {
    const char *section, *key; /* file: [section] key */
    const char *flag;          /* command line: --flag VALUE or --flag=VALUE */
    const char *alias;         /* second flag name, or NULL */
    const char *env;           /* environment variable */
    const char *metavar;
    kind_t kind;
    size_t off;                /* field in mt_config; K_DEC: the option's MT_OPT_* id */
    double min, max;           /* inclusive range for numbers */
    const char *help;
} setting;

/* Every setting, once (config.c). */
extern const setting cfg_settings[];
extern const size_t cfg_n_settings;
/* CFG_MAX_SETTINGS bounds the table (config.c checks it) for per-setting arrays. */
enum { CFG_N_SECTIONS = 7, CFG_MAX_SETTINGS = 128 };
extern const char *const cfg_sections[CFG_N_SECTIONS];

char *cfg_dupn(const char *s, size_t n);
char *cfg_dup(const char *s);
int cfg_push_key(mt_config *cfg, const char *key, size_t len);
int cfg_push_model(mt_config *cfg, mt_config_model *m);
void cfg_free_keys(mt_config *cfg);
void cfg_free_model(mt_config_model *m);
void cfg_free_models(mt_config *cfg);
int cfg_valid_lang(const char *s);
int cfg_parse_bool_text(const char *s, int *out);
int cfg_parse_level_text(const char *s, int *out);
/* A K_DEC setting's option type: MT_OPT_INT, _FLOAT, _U64 or _BOOL. */
int cfg_dec_type(const setting *s);
/* Stores a number into setting s after its range check; `where` names the source. */
int cfg_store_number(mt_config *cfg, const setting *s, double v, int is_integer, const char *where, char *err,
                     size_t errlen);
/* Applies a textual value (flag or environment) to a setting. */
int cfg_apply_text(mt_config *cfg, const setting *s, const char *text, const char *where, char *err,
                   size_t errlen);
/* The [engine] settings' own checks. */
int cfg_validate_engine(const mt_config *cfg, char *err, size_t errlen);
/* The value of NAME in envp ("NAME=value" list), or NULL. */
const char *cfg_env_get(char *const *envp, const char *name);
/* Matches argv[*i] against a flag: 1 and *value when matched, 0 when not, -1 when the
 * value is missing. */
int cfg_match_flag(const char *name, int argc, char *const *argv, int *i, const char **value);

#endif
