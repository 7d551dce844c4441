/* config_write.c: the settings table written out: `mt-server --help` and the effective
 * configuration as a file that reads back (--print-config). */
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
#include "url.h"

/* ------------------------------------------------------------------ help and dump */

static void write_default(FILE *f, const setting *s)
{
    mt_config d;
    mt_config_init(&d);
    const char *base = (const char *)&d;
    switch (s->kind) {
    case K_STR: fprintf(f, "%s", base + s->off); break;
    case K_INT: fprintf(f, "%d", *(const int *)(base + s->off)); break;
    case K_LONG: fprintf(f, "%ld", *(const long *)(base + s->off)); break;
    case K_FLOAT: {
        double v = *(const double *)(base + s->off);
        if (v < 0) fprintf(f, "model");
        else fprintf(f, "%g", v);
        break;
    }
    case K_BOOL: fprintf(f, "%s", *(const int *)(base + s->off) ? "true" : "false"); break;
    case K_LEVEL: fprintf(f, "%s", mt_config_log_level_name(*(const int *)(base + s->off))); break;
    case K_KEYS: fprintf(f, "none"); break;
    case K_DEC: break; /* mt_config_write_help says "unset" */
    }
}

void mt_config_write_help(FILE *f, const char *prog)
{
    fprintf(f,
            "Usage: %s [--config FILE] --model DIR[:SRC:TGT] [--model ...] [options]\n"
            "\n"
            "HTTP translation server: POST /translate (native and LibreTranslate JSON or form),\n"
            "GET /languages, /health, /metrics.\n"
            "\n"
            "Every setting can be given as a flag, an environment variable or a config file\n"
            "key; precedence: flag > environment > file > default.\n"
            "\n"
            "  --config FILE            [MT_CONFIG] config file (TOML subset, see config/examples)\n"
            "  --model DIR[:SRC:TGT]    [MT_MODELS, comma-separated] [[models]] path/source/target;\n"
            "                           repeatable; languages default to tokenizer_config.json\n"
            "  --models-dir DIR         every model installed in DIR (each subdirectory with a\n"
            "                           config.json, as mt-models installs them, or an unpacked\n"
            "                           argos-translate package), with any --model\n",
            prog);
    for (size_t i = 0; i < cfg_n_settings; i++) {
        const setting *s = &cfg_settings[i];
        char flag[64];
        snprintf(flag, sizeof flag, "%s %s", s->flag, s->metavar);
        if (s->kind == K_DEC) /* its help names the defaults; this sets one for every request */
            fprintf(f, "  %-24s [%s] %s.%s: for requests that do not set it: %s (default unset", flag, s->env,
                    s->section, s->key, s->help);
        else
            fprintf(f, "  %-24s [%s] %s.%s: %s (default ", flag, s->env, s->section, s->key, s->help);
        if (s->kind != K_DEC) write_default(f, s);
        fprintf(f, ")\n");
        if (s->alias) fprintf(f, "  %-24s same as %s\n", s->alias, s->flag);
    }
    fprintf(f,
            "  --print-config           print the effective configuration and exit\n"
            "  --version                print the version and exit\n"
            "  -h, --help               this help\n");
}

static void write_toml_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p == '\n') fputs("\\n", f);
        else if (*p == '\t') fputs("\\t", f);
        else if (*p < 0x20 || *p == 0x7f) fprintf(f, "\\u%04X", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

/* 1 for a setting whose value may carry a password (a database URL). */
static int holds_password(const setting *s)
{
    return strcmp(s->key, "shared_state") == 0;
}

void mt_config_write(const mt_config *cfg, FILE *f)
{
    const char *base = (const char *)cfg;
    const char *section = "";
    fprintf(f, "# mt-server %s effective configuration\n", MT_VERSION);
    for (size_t i = 0; i < cfg_n_settings; i++) {
        const setting *s = &cfg_settings[i];
        if (strcmp(section, s->section) != 0) {
            section = s->section;
            fprintf(f, "\n[%s]\n", section);
        }
        /* An unset optional path (web_root) is left out: an empty value reads back as an error. */
        if (s->kind == K_STR && !base[s->off]) continue;
        switch (s->kind) {
        case K_STR:
            fprintf(f, "%s = ", s->key);
            if (holds_password(s)) {
                /* printed configurations get pasted into tickets and logs: the database
                 * password stays out (a libpq password file is the place for it) */
                char shown[sizeof ((mt_config *)0)->shared_state + 16];
                mt_url_redact(base + s->off, shown, sizeof shown);
                write_toml_string(f, shown);
            } else {
                write_toml_string(f, base + s->off);
            }
            break;
        case K_INT: fprintf(f, "%s = %d", s->key, *(const int *)(base + s->off)); break;
        case K_LONG: fprintf(f, "%s = %ld", s->key, *(const long *)(base + s->off)); break;
        case K_FLOAT: {
            double v = *(const double *)(base + s->off);
            if (v < 0) fprintf(f, "# %s: the model's default", s->key);
            else fprintf(f, "%s = %.17g", s->key, v);
            break;
        }
        case K_BOOL:
            fprintf(f, "%s = %s", s->key, *(const int *)(base + s->off) ? "true" : "false");
            break;
        case K_LEVEL:
            fprintf(f, "%s = \"%s\"", s->key, mt_config_log_level_name(*(const int *)(base + s->off)));
            break;
        case K_DEC: {
            double v = cfg->decoding[s->off];
            if (isnan(v)) fprintf(f, "# %s: unset", s->key);
            else if (cfg_dec_type(s) == MT_OPT_BOOL) fprintf(f, "%s = %s", s->key, v != 0 ? "true" : "false");
            else if (cfg_dec_type(s) == MT_OPT_FLOAT) fprintf(f, "%s = %.17g", s->key, v);
            else fprintf(f, "%s = %.0f", s->key, v);
            break;
        }
        case K_KEYS:
            fprintf(f, "%s = [", s->key);
            for (int k = 0; k < cfg->n_api_keys; k++) {
                if (k) fputs(", ", f);
                write_toml_string(f, cfg->api_keys[k]);
            }
            fputc(']', f);
            break;
        }
        fputc('\n', f);
    }
    for (int i = 0; i < cfg->n_models; i++) {
        const mt_config_model *m = &cfg->models[i];
        fprintf(f, "\n[[models]]\npath = ");
        write_toml_string(f, m->path ? m->path : "");
        fputc('\n', f);
        if (m->source) {
            fputs("source = ", f);
            write_toml_string(f, m->source);
            fputc('\n', f);
        }
        if (m->target) {
            fputs("target = ", f);
            write_toml_string(f, m->target);
            fputc('\n', f);
        }
        if (m->name) {
            fputs("name = ", f);
            write_toml_string(f, m->name);
            fputc('\n', f);
        }
        if (m->compute_type) {
            fputs("compute_type = ", f);
            write_toml_string(f, m->compute_type);
            fputc('\n', f);
        }
    }
}
