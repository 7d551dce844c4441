/* config.c: the settings table and where settings come from: defaults, a config file
 * (read by toml.c), the environment and flags; then validation. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "error.h"
#include "toml.h"

#ifndef MT_VERSION
#define MT_VERSION "0.1.0"
#endif

/* ------------------------------------------------------------------ settings table */

typedef enum { K_STR, K_INT, K_LONG, K_FLOAT, K_BOOL, K_LEVEL, K_KEYS } kind_t;

typedef struct {
    const char *section, *key; /* file: [section] key */
    const char *flag;          /* command line: --flag VALUE or --flag=VALUE */
    const char *alias;         /* second flag name, or NULL */
    const char *env;           /* environment variable */
    const char *metavar;
    kind_t kind;
    size_t off;                /* field in mt_config */
    double min, max;           /* inclusive range for numbers */
    const char *help;
} setting;

#define OFF(f) offsetof(mt_config, f)

static const setting SETTINGS[] = {
    {"server", "host", "--host", NULL, "MT_HOST", "ADDR", K_STR, OFF(host), 0, 0,
     "listen address (0.0.0.0 for all interfaces)"},
    {"server", "port", "--port", NULL, "MT_PORT", "N", K_INT, OFF(port), 0, 65535,
     "listen port (0: any free port, printed at start)"},
    {"server", "http_threads", "--http-threads", NULL, "MT_HTTP_THREADS", "N", K_INT,
     OFF(http_threads), 1, 256, "threads serving HTTP (parsing, tokenizing, responses)"},
    {"server", "max_connections", "--max-connections", NULL, "MT_MAX_CONNECTIONS", "N", K_INT,
     OFF(max_connections), 1, 1000000, "concurrent client connections; beyond: 503 and closed"},
    {"server", "max_connections_per_ip", "--max-connections-per-ip", NULL, "MT_MAX_CONNECTIONS_PER_IP", "N",
     K_INT, OFF(max_connections_per_ip), 0, 1000000,
     "concurrent connections from one client address; beyond: 503 and closed (0: no limit; behind a proxy, set trusted_proxies)"},
    {"server", "trusted_proxies", "--trusted-proxies", NULL, "MT_TRUSTED_PROXIES", "CIDRS", K_STR,
     OFF(trusted_proxies), 0, 0,
     "comma-separated addresses or CIDRs of proxies whose X-Forwarded-For / Forwarded name the client (for the per-address limit, rate limits and the access log); ignored from anyone else"},
    {"server", "public_url", "--public-url", NULL, "MT_PUBLIC_URL", "URL", K_STR, OFF(public_url), 0, 0,
     "the server's address as clients reach it (https://mt.example.org), for the download links of /translate_file (unset: links relative to the server)"},
    {"server", "receive_timeout", "--receive-timeout", NULL, "MT_RECEIVE_TIMEOUT", "SEC", K_FLOAT,
     OFF(receive_timeout), 0, 86400,
     "seconds a client has to send a whole request, header and body, from connecting or from the previous answer; then 408 and closed (0: no limit)"},
    {"server", "idle_timeout", "--idle-timeout", NULL, "MT_IDLE_TIMEOUT", "SEC", K_FLOAT,
     OFF(idle_timeout), 0, 86400, "seconds an idle connection is kept open (0: forever)"},
    {"server", "request_timeout", "--request-timeout", NULL, "MT_REQUEST_TIMEOUT", "SEC",
     K_FLOAT, OFF(request_timeout), 0, 86400,
     "seconds a translation may take from arrival, else 504 (0: no limit)"},
    {"server", "drain_timeout", "--drain-timeout", NULL, "MT_DRAIN_TIMEOUT", "SEC", K_FLOAT,
     OFF(drain_timeout), 0, 86400, "seconds to finish in-flight requests on SIGTERM/SIGINT"},
    {"server", "api_keys", "--api-key", NULL, "MT_API_KEYS", "KEY", K_KEYS, OFF(api_keys), 0, 0,
     "accepted API key (flag repeatable, env comma-separated); none: open access"},
    {"server", "metrics_key", "--metrics-key", NULL, "MT_METRICS_KEY", "KEY", K_STR, OFF(metrics_key), 0, 0,
     "a key that opens GET /metrics only (for a scraper), beside the API keys"},
    {"server", "metrics_public", "--metrics-public", NULL, "MT_METRICS_PUBLIC", "BOOL", K_BOOL,
     OFF(metrics_public), 0, 0, "GET /metrics needs no key even when API keys are set"},
    {"server", "web_root", "--web-root", NULL, "MT_WEB_ROOT", "DIR", K_STR, OFF(web_root), 0, 0,
     "directory of the web page served at / and of openapi.json for /spec (default: web/)"},
    {"server", "suggestions_db", "--suggestions-db", NULL, "MT_SUGGESTIONS_DB", "FILE", K_STR,
     OFF(suggestions_db), 0, 0, "SQLite file POST /suggest stores suggestions in (unset: /suggest answers 403)"},
    {"server", "spool_dir", "--spool-dir", NULL, "MT_SPOOL_DIR", "DIR", K_STR, OFF(spool_dir), 0, 0,
     "directory of the translated files of /translate_file (unset: a private directory in $TMPDIR)"},
    {"workers", "count", "--workers", NULL, "MT_WORKERS", "N", K_INT, OFF(workers), 0, 1024,
     "translation worker threads (0: one per CPU / threads_per_worker)"},
    {"workers", "threads_per_worker", "--threads-per-worker", "--threads",
     "MT_THREADS_PER_WORKER", "N", K_INT, OFF(threads_per_worker), 1, 256,
     "compute threads of each worker (a batch is split by sentence, one sentence by product)"},
    {"workers", "queue_capacity", "--queue-capacity", NULL, "MT_QUEUE_CAPACITY", "N", K_INT,
     OFF(queue_capacity), 1, 1000000, "translate requests admitted at once; beyond: 503"},
    {"workers", "sentence_cache_mb", "--sentence-cache-mb", NULL, "MT_SENTENCE_CACHE_MB", "MB",
     K_INT, OFF(sentence_cache_mb), 0, 1048576,
     "sentence cache: finished sentences kept by model, options and source ids, LRU (0: off)"},
    {"batch", "max_sentences", "--batch-max-sentences", NULL, "MT_BATCH_MAX_SENTENCES", "N",
     K_INT, OFF(batch_max_sentences), 1, 4096, "sentences per batch"},
    {"batch", "max_tokens", "--batch-max-tokens", NULL, "MT_BATCH_MAX_TOKENS", "N", K_INT,
     OFF(batch_max_tokens), 1, 16777216, "padded source tokens per batch (sentences x longest)"},
    {"batch", "max_wait_ms", "--batch-max-wait-ms", NULL, "MT_BATCH_MAX_WAIT_MS", "MS", K_INT,
     OFF(batch_max_wait_ms), 0, 10000,
     "milliseconds a batch waits for sentences of requests still arriving"},
    {"limits", "max_body_bytes", "--max-body-bytes", NULL, "MT_MAX_BODY_BYTES", "N", K_LONG,
     OFF(max_body_bytes), 1, 1073741824.0, "request body size; beyond: 413"},
    {"limits", "max_texts", "--max-texts", NULL, "MT_MAX_TEXTS", "N", K_INT, OFF(max_texts), 1,
     1000000, "texts per request; beyond: 413"},
    {"limits", "max_text_chars", "--max-text-chars", NULL, "MT_MAX_TEXT_CHARS", "N", K_INT,
     OFF(max_text_chars), 1, 100000000, "characters per text; beyond: 413"},
    {"limits", "max_beam_size", "--max-beam-size", NULL, "MT_MAX_BEAM_SIZE", "N", K_INT,
     OFF(max_beam_size), 1, 256, "largest beam_size (and n_best) a request may ask for"},
    {"limits", "requests_per_minute", "--req-limit", NULL, "MT_REQ_LIMIT", "N", K_INT,
     OFF(req_limit), 0, 100000000, "translate requests per minute per client (0: no limit); beyond: 429"},
    {"limits", "chars_per_minute", "--char-limit-per-minute", NULL, "MT_CHAR_LIMIT_PER_MINUTE", "N",
     K_LONG, OFF(char_limit_per_minute), 0, 1e12,
     "characters translated per minute per client (0: no limit); beyond: 429"},
    {"limits", "max_file_bytes", "--max-file-bytes", NULL, "MT_MAX_FILE_BYTES", "N", K_LONG,
     OFF(max_file_bytes), 0, 1073741824.0, "largest file /translate_file accepts (0: file translation off); beyond: 413"},
    {"limits", "file_ttl", "--file-ttl", NULL, "MT_FILE_TTL", "SEC", K_FLOAT, OFF(file_ttl), 1, 31536000,
     "seconds a translated file stays downloadable"},
    {"limits", "suggestions_per_minute", "--suggest-limit", NULL, "MT_SUGGEST_LIMIT", "N", K_INT,
     OFF(suggest_limit), 0, 100000000, "POST /suggest requests per minute per client (0: no limit); beyond: 429"},
    {"limits", "max_file_jobs_per_client", "--max-file-jobs-per-client", NULL, "MT_MAX_FILE_JOBS_PER_CLIENT", "N",
     K_INT, OFF(max_file_jobs_per_client), 0, 100000,
     "translated files one client (API key, else address) may hold at once (0: no limit below max_file_jobs); beyond: 429"},
    {"limits", "max_file_jobs", "--max-file-jobs", NULL, "MT_MAX_FILE_JOBS", "N", K_INT,
     OFF(max_file_jobs), 1, 100000, "translated files kept at once (running and finished); beyond: 503"},
    {"decoding", "beam_size", "--beam", "--beam-size", "MT_BEAM_SIZE", "N", K_INT,
     OFF(beam_size), 0, 256, "default beam size (0: the model's num_beams, else 4)"},
    {"decoding", "length_penalty", "--length-penalty", NULL, "MT_LENGTH_PENALTY", "A", K_FLOAT,
     OFF(length_penalty), 0, 100, "default length penalty (unset: the model's)"},
    {"decoding", "max_length", "--max-length", NULL, "MT_MAX_LENGTH", "N", K_INT,
     OFF(max_length), 0, 1000000, "default max decoding steps (0: the model's)"},
    {"decoding", "sampling_topk", "--sampling-topk", NULL, "MT_SAMPLING_TOPK", "K", K_INT,
     OFF(sampling_topk), 0, 1000000, "default sampling: from the K most likely (0: all; 1: no sampling)"},
    {"decoding", "sampling_topp", "--sampling-topp", NULL, "MT_SAMPLING_TOPP", "P", K_FLOAT,
     OFF(sampling_topp), 1e-9, 1, "default sampling: from the smallest set of mass >= P (1: all)"},
    {"decoding", "sampling_temperature", "--sampling-temperature", NULL, "MT_SAMPLING_TEMPERATURE", "T",
     K_FLOAT, OFF(sampling_temperature), 1e-6, 1000, "default sampling temperature (> 0)"},
    {"decoding", "seed", "--seed", NULL, "MT_SEED", "N", K_LONG, OFF(seed), 0, 9e15,
     "default sampling seed (a request's seed overrides it)"},
    {"decoding", "no_repeat_ngram_size", "--no-repeat-ngram-size", NULL, "MT_NO_REPEAT_NGRAM_SIZE", "N",
     K_INT, OFF(no_repeat_ngram_size), 0, 1000, "default: no n-gram of this size twice (0: off)"},
    {"decoding", "repetition_penalty", "--repetition-penalty", NULL, "MT_REPETITION_PENALTY", "R", K_FLOAT,
     OFF(repetition_penalty), 1, 1000, "default penalty of generated tokens (1: off)"},
    {"decoding", "min_length", "--min-length", NULL, "MT_MIN_LENGTH", "N", K_INT, OFF(min_length), 0,
     1000000, "default minimum output tokens before the end (0: off)"},
    {"decoding", "replace_unknowns", "--replace-unknowns", NULL, "MT_REPLACE_UNKNOWNS", "BOOL", K_BOOL,
     OFF(replace_unknowns), 0, 0, "replace <unk> in outputs by the aligned source token"},
    {"decoding", "compute_type", "--compute-type", NULL, "MT_COMPUTE_TYPE", "TYPE", K_STR,
     OFF(compute_type), 0, 0,
     "arithmetic of the matrix products: float32 (exact), bfloat16, int8, auto (fastest measured at "
     "load on this CPU) or default (what the model directory stores: float32); per model: "
     "[[models]] compute_type"},
    {"engine", "kernels", "--kernels", NULL, "MT_KERNELS", "PATH", K_STR, OFF(kernels), 0, 0,
     "at most this kernel path: scalar (also float32 on OpenBLAS), avx2, avx512 or auto (the best this CPU runs)"},
    {"engine", "cpu_hide", "--cpu-hide", NULL, "MT_CPU_HIDE", "LIST", K_STR, OFF(cpu_hide), 0, 0,
     "CPU features the compute-type check takes as absent (vnni,bf16,amx), to test the fallbacks"},
    {"engine", "split_min", "--split-min", NULL, "MT_SPLIT_MIN", "N", K_INT, OFF(split_min), 0, 1000000,
     "a worker splits a batch by sentence across its threads from N sentences per thread (0: never)"},
    {"log", "level", "--log-level", NULL, "MT_LOG_LEVEL", "LEVEL", K_LEVEL, OFF(log_level), 0, 0,
     "error, warn, info or debug"},
    {"log", "access_log", "--access-log", NULL, "MT_ACCESS_LOG", "BOOL", K_BOOL,
     OFF(access_log), 0, 0, "one log line per request (--no-access-log to disable)"},
};
#define N_SETTINGS (sizeof SETTINGS / sizeof SETTINGS[0])

static const char *const SECTIONS[] = {"server", "workers", "batch", "limits", "decoding", "engine", "log"};
#define N_SECTIONS (sizeof SECTIONS / sizeof SECTIONS[0])

void mt_config_init(mt_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    snprintf(cfg->host, sizeof cfg->host, "127.0.0.1");
    cfg->port = 8080;
    cfg->http_threads = 4;
    cfg->max_connections = 1024;
    cfg->max_connections_per_ip = 64;
    cfg->receive_timeout = 30;
    cfg->idle_timeout = 60;
    cfg->request_timeout = 60;
    cfg->drain_timeout = 30;
    cfg->workers = 0;
    cfg->threads_per_worker = 1;
    cfg->queue_capacity = 256;
    cfg->sentence_cache_mb = 64;
    cfg->batch_max_sentences = 32;
    cfg->batch_max_tokens = 8192;
    cfg->batch_max_wait_ms = 5;
    cfg->max_body_bytes = 1048576;
    cfg->max_texts = 128;
    cfg->max_text_chars = 20000;
    cfg->max_beam_size = 16;
    cfg->max_file_bytes = 5242880;
    cfg->file_ttl = 3600;
    cfg->max_file_jobs = 64;
    cfg->max_file_jobs_per_client = 8;
    cfg->suggest_limit = 30;
    cfg->beam_size = 0;
    cfg->length_penalty = -1;
    cfg->max_length = 0;
    cfg->sampling_topk = 1;
    cfg->sampling_topp = 1;
    cfg->sampling_temperature = 1;
    cfg->seed = 0;
    cfg->no_repeat_ngram_size = 0;
    cfg->repetition_penalty = 1;
    cfg->min_length = 0;
    cfg->replace_unknowns = 0;
    snprintf(cfg->compute_type, sizeof cfg->compute_type, "default");
    snprintf(cfg->kernels, sizeof cfg->kernels, "auto");
    cfg->split_min = 1;
    cfg->log_level = MT_LOG_INFO;
    cfg->access_log = 1;
}

static void free_keys(mt_config *cfg)
{
    for (int i = 0; i < cfg->n_api_keys; i++) free(cfg->api_keys[i]);
    free(cfg->api_keys);
    cfg->api_keys = NULL;
    cfg->n_api_keys = 0;
}

static void free_model(mt_config_model *m)
{
    free(m->path);
    free(m->source);
    free(m->target);
    free(m->name);
    free(m->compute_type);
    memset(m, 0, sizeof *m);
}

static void free_models(mt_config *cfg)
{
    for (int i = 0; i < cfg->n_models; i++) free_model(&cfg->models[i]);
    free(cfg->models);
    cfg->models = NULL;
    cfg->n_models = 0;
}

void mt_config_free(mt_config *cfg)
{
    free_keys(cfg);
    free_models(cfg);
    free(cfg->config_path);
    mt_config_init(cfg);
}

const char *mt_config_log_level_name(int level)
{
    switch (level) {
    case MT_LOG_ERROR: return "error";
    case MT_LOG_WARN: return "warn";
    case MT_LOG_INFO: return "info";
    case MT_LOG_DEBUG: return "debug";
    default: return "?";
    }
}

/* ------------------------------------------------------------------ small helpers */

static char *dupn(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

static char *dup(const char *s) { return dupn(s, strlen(s)); }

static int push_key(mt_config *cfg, const char *key, size_t len)
{
    char **k = realloc(cfg->api_keys, (size_t)(cfg->n_api_keys + 1) * sizeof *k);
    if (!k) return -1;
    cfg->api_keys = k;
    if (!(k[cfg->n_api_keys] = dupn(key, len))) return -1;
    cfg->n_api_keys++;
    return 0;
}

static int push_model(mt_config *cfg, mt_config_model *m)
{
    mt_config_model *ms = realloc(cfg->models, (size_t)(cfg->n_models + 1) * sizeof *ms);
    if (!ms) return -1;
    cfg->models = ms;
    ms[cfg->n_models++] = *m;
    memset(m, 0, sizeof *m);
    return 0;
}

/* Language codes: letters, digits, '-' and '_', 1..32 bytes, starting with a letter. */
static int valid_lang(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 32 || !isalpha((unsigned char)s[0])) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_') return 0;
    return 1;
}

static int parse_bool_text(const char *s, int *out)
{
    static const char *const yes[] = {"1", "true", "yes", "on"};
    static const char *const no[] = {"0", "false", "no", "off"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) { *out = 1; return 0; }
        if (strcasecmp(s, no[i]) == 0) { *out = 0; return 0; }
    }
    return -1;
}

static int parse_level_text(const char *s, int *out)
{
    if (strcasecmp(s, "error") == 0) *out = MT_LOG_ERROR;
    else if (strcasecmp(s, "warn") == 0 || strcasecmp(s, "warning") == 0) *out = MT_LOG_WARN;
    else if (strcasecmp(s, "info") == 0) *out = MT_LOG_INFO;
    else if (strcasecmp(s, "debug") == 0) *out = MT_LOG_DEBUG;
    else return -1;
    return 0;
}

/* Stores a number into the setting's field after the range check. `where` prefixes
 * messages ("FILE:3:8: workers.count" or "--workers"). */
static int store_number(mt_config *cfg, const setting *s, double v, int is_integer,
                        const char *where, char *err, size_t errlen)
{
    char *base = (char *)cfg;
    if ((s->kind == K_INT || s->kind == K_LONG) && !is_integer)
        return mt_error(-1, err, errlen, "%s must be an integer", where);
    if (!(v >= s->min && v <= s->max)) {
        if (s->kind == K_FLOAT)
            return mt_error(-1, err, errlen, "%s: %g is out of range (%g..%g)", where, v, s->min, s->max);
        return mt_error(-1, err, errlen, "%s: %.0f is out of range (%.0f..%.0f)", where, v, s->min,
                    s->max);
    }
    if (s->kind == K_INT) *(int *)(base + s->off) = (int)v;
    else if (s->kind == K_LONG) *(long *)(base + s->off) = (long)v;
    else *(double *)(base + s->off) = v;
    return 0;
}

/* Parses a number from flag/env text strictly (the whole text, no spaces). */
static int store_number_text(mt_config *cfg, const setting *s, const char *text,
                             const char *where, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    if (s->kind == K_FLOAT) {
        double v = strtod(text, &end);
        if (end == text || *end || errno || !isfinite(v) || isspace((unsigned char)text[0]))
            return mt_error(-1, err, errlen, "%s: '%s' is not a number", where, text);
        return store_number(cfg, s, v, 1, where, err, errlen);
    }
    long long v = strtoll(text, &end, 10);
    if (end == text || *end || errno || isspace((unsigned char)text[0]))
        return mt_error(-1, err, errlen, "%s: '%s' is not an integer", where, text);
    return store_number(cfg, s, (double)v, 1, where, err, errlen);
}

/* Applies a textual value (flag or environment) to a setting. */
static int apply_text(mt_config *cfg, const setting *s, const char *text, const char *where,
                      char *err, size_t errlen)
{
    char *base = (char *)cfg;
    switch (s->kind) {
    case K_STR:
        if (!*text) return mt_error(-1, err, errlen, "%s: empty value", where);
        if (strlen(text) >= 256) return mt_error(-1, err, errlen, "%s: value too long", where);
        snprintf(base + s->off, 256, "%s", text);
        return 0;
    case K_INT:
    case K_LONG:
    case K_FLOAT: return store_number_text(cfg, s, text, where, err, errlen);
    case K_BOOL: {
        int b;
        if (parse_bool_text(text, &b))
            return mt_error(-1, err, errlen, "%s: '%s' is not a boolean (true/false)", where, text);
        *(int *)(base + s->off) = b;
        return 0;
    }
    case K_LEVEL: {
        int l;
        if (parse_level_text(text, &l))
            return mt_error(-1, err, errlen, "%s: '%s' is not a log level (error, warn, info, debug)",
                        where, text);
        *(int *)(base + s->off) = l;
        return 0;
    }
    case K_KEYS: /* handled by the callers (lists) */
        break;
    }
    return mt_error(-1, err, errlen, "%s: internal error", where);
}

int mt_config_parse_model_spec(const char *spec, mt_config_model *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!spec || !*spec) return mt_error(-1, err, errlen, "empty model directory");
    /* DIR:SRC:TGT when the last two ':'-separated parts are language codes. */
    const char *c2 = strrchr(spec, ':');
    const char *c1 = NULL;
    if (c2 && c2 > spec) {
        for (const char *p = c2 - 1; p >= spec; p--)
            if (*p == ':') { c1 = p; break; }
    }
    if (c1 && c1 > spec) {
        char *src = dupn(c1 + 1, (size_t)(c2 - c1 - 1));
        char *tgt = dup(c2 + 1);
        if (!src || !tgt) {
            free(src);
            free(tgt);
            return mt_error(-1, err, errlen, "out of memory");
        }
        if (valid_lang(src) && valid_lang(tgt)) {
            out->path = dupn(spec, (size_t)(c1 - spec));
            out->source = src;
            out->target = tgt;
            if (!out->path) {
                free_model(out);
                return mt_error(-1, err, errlen, "out of memory");
            }
            return 0;
        }
        free(src);
        free(tgt);
    }
    out->path = dup(spec);
    return out->path ? 0 : mt_error(-1, err, errlen, "out of memory");
}

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
    unsigned char seen_sections[N_SECTIONS];
    unsigned char seen_keys[N_SETTINGS];
    unsigned char seen_model_keys[5];
} file_ctx;

static const char *const MODEL_KEYS[] = {"path", "source", "target", "name", "compute_type"};

int mt_config_kernels_valid(const char *name)
{
    static const char *const names[] = {"auto", "scalar", "avx2", "avx512"};
    for (size_t i = 0; name && i < sizeof names / sizeof *names; i++)
        if (!strcmp(name, names[i])) return 1;
    return 0;
}

int mt_config_cpu_hide_valid(const char *list)
{
    for (const char *p = list; p && *p;) {
        size_t n = strcspn(p, ",");
        if (!((n == 4 && !strncmp(p, "vnni", 4)) || (n == 4 && !strncmp(p, "bf16", 4)) ||
              (n == 3 && !strncmp(p, "amx", 3))))
            return 0;
        p += p[n] ? n + 1 : n;
    }
    return 1;
}

/* The [engine] settings' own checks (shared by mt_config_validate and mt_config_apply_engine_env). */
static int validate_engine(const mt_config *cfg, char *err, size_t errlen)
{
    if (!mt_config_kernels_valid(cfg->kernels))
        return mt_error(-1, err, errlen, "engine.kernels (MT_KERNELS): '%s' is not scalar, avx2, avx512 or auto", cfg->kernels);
    if (!mt_config_cpu_hide_valid(cfg->cpu_hide))
        return mt_error(-1, err, errlen, "engine.cpu_hide (MT_CPU_HIDE): '%s' is not a comma-separated list of vnni, bf16 and amx",
                        cfg->cpu_hide);
    return 0;
}

int mt_config_compute_type_valid(const char *name)
{
    static const char *const types[] = {"float32", "bfloat16", "int8", "auto", "default"};
    for (size_t i = 0; name && i < sizeof types / sizeof *types; i++)
        if (!strcmp(name, types[i])) return 1;
    return 0;
}

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
    if (push_model(fc->cfg, m)) return mt_toml_fail(r, fc->model_line, fc->model_col, "out of memory");
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
    if ((idx == 1 || idx == 2) && !valid_lang(v->s))
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
    for (size_t i = 0; i < N_SETTINGS; i++)
        if (strcmp(SETTINGS[i].section, fc->section) == 0 && n < sizeof known) {
            int w = snprintf(known + n, sizeof known - n, "%s%s", n ? ", " : "", SETTINGS[i].key);
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
    case K_INT:
    case K_LONG:
    case K_FLOAT: {
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
                         s->kind == K_FLOAT ? "a number" : "an integer", mt_toml_type_name(v->type));
        }
        if (s->kind != K_FLOAT && !is_int)
            return mt_toml_fail(r, v->line, v->col, "%s must be an integer, not a float", where);
        if (store_number(fc->cfg, s, d, is_int, where, msg, sizeof msg))
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
        if (parse_level_text(v->s, &l))
            return mt_toml_fail(r, v->line, v->col, "%s: '%s' is not a log level (error, warn, info, debug)",
                         where, v->s);
        *(int *)(base + s->off) = l;
        return 0;
    }
    case K_KEYS:
        if (v->type != MT_TOML_ARRAY)
            return mt_toml_fail(r, v->line, v->col, "%s must be an array of strings, not %s", where,
                         mt_toml_type_name(v->type));
        free_keys(fc->cfg);
        for (int i = 0; i < v->n_items; i++) {
            if (v->item_lens[i] == 0 || strlen(v->items[i]) != v->item_lens[i])
                return mt_toml_fail(r, v->line, v->col, "%s: keys must not be empty", where);
            if (push_key(fc->cfg, v->items[i], v->item_lens[i]))
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
    for (size_t i = 0; i < N_SETTINGS; i++)
        if (strcmp(SETTINGS[i].section, fc->section) == 0 && strcmp(SETTINGS[i].key, key) == 0) {
            s = &SETTINGS[i];
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
            free_models(fc->cfg);
            fc->models_replaced = 1;
        }
        fc->in_models = 1;
        fc->model_line = line;
        fc->model_col = col;
        memset(fc->seen_model_keys, 0, sizeof fc->seen_model_keys);
        fc->section[0] = '\0';
        return 0;
    }
    size_t si = N_SECTIONS;
    for (size_t i = 0; i < N_SECTIONS; i++)
        if (strcmp(SECTIONS[i], name) == 0) si = i;
    if (si == N_SECTIONS)
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
    free_model(&fc.model);
    return rc ? -1 : 0;
}

int mt_config_load_file(mt_config *cfg, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) return mt_error(-1, err, errlen, "%s: cannot open config file: %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fclose(f);
            return mt_error(-1, err, errlen, "%s: out of memory", path);
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
        if (n == cap) {
            if (cap >= (16u << 20)) {
                free(buf);
                fclose(f);
                return mt_error(-1, err, errlen, "%s: config file larger than 16 MiB", path);
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
        return mt_error(-1, err, errlen, "%s: read error", path);
    }
    char *dir = dup(path);
    if (!dir) {
        free(buf);
        return mt_error(-1, err, errlen, "out of memory");
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

/* ------------------------------------------------------------------ environment */

static const char *env_get(char *const *envp, const char *name)
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

static int key_item(void *user, const char *s, size_t n) { return push_key(user, s, n); }

typedef struct {
    mt_config *cfg;
    char *err;
    size_t errlen;
    const char *where;
} model_item_ctx;

static int model_item(void *user, const char *s, size_t n)
{
    model_item_ctx *c = user;
    char *spec = dupn(s, n);
    if (!spec) return mt_error(-1, c->err, c->errlen, "out of memory");
    mt_config_model m;
    char e[256];
    int rc = mt_config_parse_model_spec(spec, &m, e, sizeof e);
    free(spec);
    if (rc) return mt_error(-1, c->err, c->errlen, "%s: %s", c->where, e);
    if (push_model(c->cfg, &m)) {
        free_model(&m);
        return mt_error(-1, c->err, c->errlen, "out of memory");
    }
    return 0;
}

int mt_config_apply_env(mt_config *cfg, char *const *envp, char *err, size_t errlen)
{
    char where[96];
    for (size_t i = 0; i < N_SETTINGS; i++) {
        const setting *s = &SETTINGS[i];
        const char *v = env_get(envp, s->env);
        if (!v || !*v) continue;
        snprintf(where, sizeof where, "environment variable %s", s->env);
        if (s->kind == K_KEYS) {
            free_keys(cfg);
            if (for_each_item(v, key_item, cfg)) return mt_error(-1, err, errlen, "out of memory");
            continue;
        }
        if (apply_text(cfg, s, v, where, err, errlen)) return -1;
    }
    const char *models = env_get(envp, "MT_MODELS");
    if (models && *models) {
        free_models(cfg);
        model_item_ctx c = {cfg, err, errlen, "environment variable MT_MODELS"};
        if (for_each_item(models, model_item, &c)) return -1;
    }
    return 0;
}

int mt_config_apply_engine_env(mt_config *cfg, char *const *envp, char *err, size_t errlen)
{
    char where[96];
    for (size_t i = 0; i < N_SETTINGS; i++) {
        const setting *s = &SETTINGS[i];
        const char *v = env_get(envp, s->env);
        if (!v || !*v || (strcmp(s->section, "engine") && strcmp(s->key, "compute_type"))) continue;
        snprintf(where, sizeof where, "environment variable %s", s->env);
        if (apply_text(cfg, s, v, where, err, errlen)) return -1;
    }
    if (!mt_config_compute_type_valid(cfg->compute_type))
        return mt_error(-1, err, errlen, "MT_COMPUTE_TYPE: '%s' is not float32, bfloat16, int8, auto or default",
                        cfg->compute_type);
    return validate_engine(cfg, err, errlen);
}

/* ------------------------------------------------------------------ flags */

/* Matches argv[*i] against a flag name: "--name VALUE" or "--name=VALUE". Returns 1 and
 * sets *value when matched, 0 when not this flag, -1 when the value is missing. */
static int match_flag(const char *name, int argc, char *const *argv, int *i, const char **value)
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
        if ((m = match_flag("--config", argc, argv, &i, &v))) {
            if (m < 0) return mt_error(-1, err, errlen, "--config needs a value");
            continue; /* loaded by mt_config_resolve */
        }
        if ((m = match_flag("--model", argc, argv, &i, &v))) {
            if (m < 0) return mt_error(-1, err, errlen, "--model needs a value (DIR or DIR:SRC:TGT)");
            if (!models_given++) free_models(cfg);
            model_item_ctx c = {cfg, err, errlen, "--model"};
            if (model_item(&c, v, strlen(v))) return -1;
            continue;
        }
        if (strcmp(a, "--no-access-log") == 0) { cfg->access_log = 0; continue; }
        const setting *hit = NULL;
        for (size_t k = 0; k < N_SETTINGS && !hit; k++) {
            const setting *s = &SETTINGS[k];
            const char *names[2] = {s->flag, s->alias};
            for (int j = 0; j < 2 && !hit; j++) {
                if (!names[j]) continue;
                if (s->kind == K_BOOL && strcmp(a, names[j]) == 0) {
                    hit = s;
                    /* "--flag true|false" as the help shows, or a bare "--flag" meaning true */
                    if (i + 1 < argc && (!strcmp(argv[i + 1], "true") || !strcmp(argv[i + 1], "false"))) {
                        v = argv[++i];
                    } else {
                        *(int *)((char *)cfg + s->off) = 1;
                        v = NULL;
                    }
                    break;
                }
                m = match_flag(names[j], argc, argv, &i, &v);
                if (m < 0) return mt_error(-1, err, errlen, "%s needs a value (%s)", names[j], s->metavar);
                if (m > 0) hit = s;
            }
        }
        if (!hit) {
            if (a[0] == '-') return mt_error(-1, err, errlen, "unknown option '%s' (see --help)", a);
            return mt_error(-1, err, errlen, "unexpected argument '%s' (see --help)", a);
        }
        if (!v) continue;
        char where[64];
        snprintf(where, sizeof where, "%s", hit->flag);
        if (hit->kind == K_KEYS) {
            if (!*v) return mt_error(-1, err, errlen, "%s: empty value", hit->flag);
            if (!keys_given++) free_keys(cfg);
            if (push_key(cfg, v, strlen(v))) return mt_error(-1, err, errlen, "out of memory");
            continue;
        }
        if (apply_text(cfg, hit, v, where, err, errlen)) return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ validate, resolve */

int mt_config_validate(const mt_config *cfg, char *err, size_t errlen)
{
    if (cfg->n_models == 0)
        return mt_error(-1, err, errlen, "no model to serve: give --model DIR, MT_MODELS or [[models]] "
                    "in a config file (--config FILE)");
    for (int i = 0; i < cfg->n_models; i++) {
        const mt_config_model *m = &cfg->models[i];
        if (!m->path || !*m->path) return mt_error(-1, err, errlen, "model %d has no directory", i + 1);
        if (!m->source != !m->target)
            return mt_error(-1, err, errlen, "model %s: give both source and target, or neither", m->path);
        if ((m->source && !valid_lang(m->source)) || (m->target && !valid_lang(m->target)))
            return mt_error(-1, err, errlen, "model %s: invalid language code", m->path);
    }
    if (!mt_config_compute_type_valid(cfg->compute_type))
        return mt_error(-1, err, errlen, "decoding.compute_type: '%s' is not float32, bfloat16, int8, auto or "
                    "default", cfg->compute_type);
    if (validate_engine(cfg, err, errlen)) return -1;
    if (cfg->beam_size > cfg->max_beam_size)
        return mt_error(-1, err, errlen, "decoding.beam_size (%d) exceeds limits.max_beam_size (%d)",
                    cfg->beam_size, cfg->max_beam_size);
    for (int i = 0; i < cfg->n_api_keys; i++)
        if (!cfg->api_keys[i][0]) return mt_error(-1, err, errlen, "empty API key");
    return 0;
}

int mt_config_resolve(mt_config *cfg, int argc, char *const *argv, char *const *envp,
                      char *err, size_t errlen)
{
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        int m = match_flag("--config", argc, argv, &i, &v);
        if (m < 0) return mt_error(-1, err, errlen, "--config needs a value");
        if (m > 0) path = v;
    }
    if (!path) {
        path = env_get(envp, "MT_CONFIG");
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
        if (!(cfg->config_path = dup(path))) return mt_error(-1, err, errlen, "out of memory");
    }
    if (mt_config_apply_env(cfg, envp, err, errlen)) return -1;
    if (mt_config_apply_args(cfg, argc, argv, err, errlen)) return -1;
    return mt_config_validate(cfg, err, errlen);
}

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
            "                           repeatable; languages default to tokenizer_config.json\n",
            prog);
    for (size_t i = 0; i < N_SETTINGS; i++) {
        const setting *s = &SETTINGS[i];
        char flag[64];
        snprintf(flag, sizeof flag, "%s %s", s->flag, s->metavar);
        fprintf(f, "  %-24s [%s] %s.%s: %s (default ", flag, s->env, s->section, s->key, s->help);
        write_default(f, s);
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

void mt_config_write(const mt_config *cfg, FILE *f)
{
    const char *base = (const char *)cfg;
    const char *section = "";
    fprintf(f, "# mt-server %s effective configuration\n", MT_VERSION);
    for (size_t i = 0; i < N_SETTINGS; i++) {
        const setting *s = &SETTINGS[i];
        if (strcmp(section, s->section) != 0) {
            section = s->section;
            fprintf(f, "\n[%s]\n", section);
        }
        /* An unset optional path (web_root) is left out: an empty value reads back as an error. */
        if (s->kind == K_STR && !base[s->off]) continue;
        switch (s->kind) {
        case K_STR:
            fprintf(f, "%s = ", s->key);
            write_toml_string(f, base + s->off);
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
