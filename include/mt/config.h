/* config.h: mt-server settings: defaults, the config file, environment variables and
 * command-line flags, merged with the precedence flag > environment > file > default.
 *
 * The config file is a strict subset of TOML (see config/examples/): [tables] and
 * [[models]] arrays of tables, `key = value` with basic/literal strings, integers,
 * floats, booleans and arrays of strings; `#` comments. Unknown keys, duplicate keys,
 * wrong types and out-of-range values are errors naming the key and FILE:LINE:COLUMN.
 * Relative model paths in a file are resolved against the file's directory.
 *
 * Every setting has one entry in a table (config.c) that gives its file key, its flag
 * and its environment variable; `mt-server --help` prints that table.
 *
 * Thread-safety: an mt_config is plain data; fill it in one thread, then read it from
 * any number of threads. Errors: calls return an mt_status (status.h): MT_OK, or
 * MT_ERR_INVALID (MT_ERR_NOMEM when out of memory) with a message in err[errlen].
 */
#ifndef MT_CONFIG_H
#define MT_CONFIG_H

#include <stddef.h>
#include <stdio.h>

#include "decoding_options.h"

enum { MT_LOG_ERROR = 0, MT_LOG_WARN = 1, MT_LOG_INFO = 2, MT_LOG_DEBUG = 3 };

/* One model to serve. source/target NULL: read from the model's tokenizer_config.json. */
typedef struct {
    char *path;   /* model directory */
    char *source; /* source language code, or NULL */
    char *target; /* target language code, or NULL */
    char *name;   /* name reported in responses, or NULL for the directory basename */
    char *compute_type; /* float32 | bfloat16 | int8 | auto | default, or NULL: decoding.compute_type */
} mt_config_model;

typedef struct {
    /* [server] */
    char host[256];         /* listen address (default 127.0.0.1; Docker uses 0.0.0.0) */
    int port;               /* listen port (default 8080; 0 = any free port) */
    int http_threads;       /* threads serving HTTP connections (parsing, encoding) */
    int max_connections;    /* concurrent connections accepted */
    int max_connections_per_ip; /* concurrent connections from one address (0: no limit) */
    double receive_timeout; /* seconds to receive a whole request (header and body) */
    char trusted_proxies[256]; /* CIDRs whose X-Forwarded-For / Forwarded are believed */
    char public_url[256];   /* base of download links (empty: relative links) */
    double idle_timeout;    /* seconds an idle keep-alive connection is kept */
    double request_timeout; /* seconds a translation may take from arrival; 0 = none */
    double file_timeout;    /* seconds a file job may take from when it starts; 0 = none */
    double drain_timeout;   /* seconds to finish in-flight requests on SIGTERM/SIGINT */
    char **api_keys;        /* accepted API keys; none = no key needed */
    int n_api_keys;
    char web_root[256];     /* the web page's directory (/, /spec); empty: the source web/ */
    char metrics_key[256];  /* also accepted for GET /metrics (empty: none) */
    int metrics_public;     /* 1: GET /metrics needs no key even when API keys are set */
    char suggestions_db[256]; /* SQLite file of POST /suggest; empty: suggestions disabled (403) */
    char glossary_db[256];  /* SQLite file of the DeepL glossaries; empty: suggestions_db, else
                             * in memory (shared_state, when set, keeps them instead) */
    char shared_state[256]; /* PostgreSQL URL of the state replicas share (suggestions, API keys,
                             * rate counters); empty: in process and suggestions_db */
    char spool_dir[256];    /* translated files of /translate_file; empty: a private dir under $TMPDIR */
    long max_file_bytes;    /* largest file /translate_file accepts; beyond: 413 */
    double file_ttl;        /* seconds a translated file stays downloadable */
    int max_file_jobs;      /* files in the spool at once (running and finished); beyond: 503 */
    int max_file_jobs_per_client; /* of them, held by one client (key or address); 0: no limit */
    int file_reader_cpu_seconds; /* CPU time of the process reading one file (RLIMIT_CPU) */
    int file_reader_memory_mb;   /* address space it may add, in MiB (RLIMIT_AS) */
    int suggest_limit;      /* POST /suggest per minute per client; 0: no limit (429 beyond) */
    int glossary_max_entries; /* entries of one glossary; beyond: 413 */
    long glossary_max_bytes;  /* bytes of one glossary's entries; beyond: 413 */
    int glossaries_per_key;   /* glossaries one API key may hold; beyond: 456 */
    int file_workers;       /* with shared_state: threads claiming file jobs from the shared queue */
    double job_lease_seconds; /* with shared_state: a claimed file job's lease (renewed while worked) */
    int job_max_attempts;   /* with shared_state: claims of one file job before it fails */
    /* [workers] */
    int workers;            /* translation worker threads (one model state each) */
    int threads_per_worker; /* BLAS threads used by each worker */
    int queue_capacity;     /* translate requests admitted at once; beyond: 503 */
    int sentence_cache_mb;  /* sentence cache budget in MiB (0: off) */
    /* [batch] */
    int batch_max_sentences; /* sentences per batch */
    int batch_max_tokens;    /* padded source tokens per batch (sentences x longest) */
    int batch_max_wait_ms;   /* how long a batch waits for more sentences */
    /* [limits] */
    long max_body_bytes;    /* request body size; beyond: 413 */
    int max_texts;          /* texts per request; beyond: 413 */
    int max_text_chars;     /* characters (code points) per text; beyond: 413 */
    int max_beam_size;      /* largest beam_size a request may ask for */
    int req_limit;          /* requests per minute per client; 0: no limit (429 beyond) */
    long char_limit_per_minute; /* characters per minute per client; 0: no limit */
    /* [decoding]: the defaults of the rows of decoding_options.h marked CFG, by MT_OPT_*
     * id; NAN: not set (a request's value, else the model's, else the option's own) */
    double decoding[MT_OPT_COUNT];
    char compute_type[256]; /* float32 | bfloat16 | int8 | auto | default (model.h: mt_compute_type) */
    /* [engine]: the model library's test and measurement knobs, passed to it as they are
     * (model.h: mt_model_options; the library reads no environment variable itself) */
    char kernels[256];      /* at most this kernel path: auto (default) | scalar | avx2 | avx512 */
    char cpu_hide[256];     /* CPU features taken as absent: comma-separated vnni, bf16, amx */
    int split_min;          /* sentences per thread from which a batch is split by sentence; 0: never */
    /* [log] */
    int log_level;          /* MT_LOG_* */
    int access_log;         /* 1: one line per request */
    /* [[models]] */
    mt_config_model *models;
    int n_models;

    /* set by mt_config_resolve() */
    char *config_path;      /* file that was loaded, or NULL */
    int show_help, show_version, print_config;
} mt_config;

/* Fills cfg with the defaults (no models). */
void mt_config_init(mt_config *cfg);
/* Frees every string and list in cfg and re-initialises it to the defaults. */
void mt_config_free(mt_config *cfg);

/* Applies a config file over cfg (settings it names replace cfg's; [[models]] and
 * api_keys replace the lists). */
int mt_config_load_file(mt_config *cfg, const char *path, char *err, size_t errlen);
/* The same for text already in memory; `name` is used in messages and `base_dir`
 * (may be NULL) resolves relative model paths. */
int mt_config_load_string(mt_config *cfg, const char *text, size_t len, const char *name,
                          const char *base_dir, char *err, size_t errlen);
/* Applies MT_* variables from envp (NULL-terminated "NAME=value" list); empty = unset. */
int mt_config_apply_env(mt_config *cfg, char *const *envp, char *err, size_t errlen);
/* Applies command-line flags (argv[1..argc-1]); --config is accepted and skipped. */
int mt_config_apply_args(mt_config *cfg, int argc, char *const *argv, char *err, size_t errlen);
/* Cross-field checks for serving: at least one model, sane batch limits. */
int mt_config_validate(const mt_config *cfg, char *err, size_t errlen);

/* Everything in order: defaults, the file from --config or MT_CONFIG (if any), the
 * environment, the flags, then validation (skipped for --help/--version). */
int mt_config_resolve(mt_config *cfg, int argc, char *const *argv, char *const *envp,
                      char *err, size_t errlen);

/* 1 when name is a compute type the settings accept (float32, bfloat16, int8, auto, default). */
int mt_config_compute_type_valid(const char *name);
/* 1 when name is a kernel path engine.kernels accepts (auto, scalar, avx2, avx512). */
int mt_config_kernels_valid(const char *name);
/* 1 when list is empty or a comma-separated list of vnni, bf16 and amx (engine.cpu_hide). */
int mt_config_cpu_hide_valid(const char *list);

/* For programs that take no config file (mt-translate, the tools): applies only the model
 * library's variables from envp, MT_COMPUTE_TYPE and the [engine] ones (MT_KERNELS,
 * MT_CPU_HIDE, MT_SPLIT_MIN), with the same names and checks as mt_config_apply_env. */
int mt_config_apply_engine_env(mt_config *cfg, char *const *envp, char *err, size_t errlen);

/* Parses a model spec "DIR" or "DIR:SRC:TGT" (as --model and MT_MODELS take). */
int mt_config_parse_model_spec(const char *spec, mt_config_model *out, char *err, size_t errlen);

/* Writes the flags / environment / file keys with their defaults (for --help). */
void mt_config_write_help(FILE *f, const char *prog);
/* Writes cfg as a config file that mt_config_load_file() reads back (--print-config). */
void mt_config_write(const mt_config *cfg, FILE *f);

const char *mt_config_log_level_name(int level);

#endif
