/* config.c: the settings table (every setting's file key, flag, environment variable,
 * range and help, once), the defaults, the lifetime of an mt_config, storing one value,
 * and the checks across fields. Reading a file: config_file.c; the environment and
 * flags: config_flags.c; --help and --print-config: config_write.c. */
#include "config.h"

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

#define OFF(f) offsetof(mt_config, f)

/* A row of decoding_options.h as a setting: CFG rows only (NOCFG ones expand to nothing). */
#define DEC_ROW_(ID, name, flag, alias, arg, type, min, max, min_open, where, batch_key, cache_key, cfg, help) \
    DEC_ROW_##cfg(ID, name, flag, alias, arg, type, min, max, min_open, help)
#define DEC_ROW_NOCFG(...)
#define DEC_ROW_CFG(ID, name, flag, alias, arg, type, min, max, min_open, help)                                \
    {"decoding", #name, flag, alias, "MT_" #ID, MT_OPT_##type == MT_OPT_BOOL ? "BOOL" : arg, K_DEC,              \
     MT_OPT_##ID, min, max, help},
/* The rest of each row: the option's type and whether its min is excluded, by id. */
#define DEC_INFO_(ID, name, flag, alias, arg, type, min, max, min_open, where, batch_key, cache_key, cfg, help) \
    [MT_OPT_##ID] = {MT_OPT_##type, min_open},
static const struct {
    int type, min_open;
} DEC_INFO[MT_OPT_COUNT] = {MT_DECODING_OPTIONS(DEC_INFO_)};

int cfg_dec_type(const setting *s) { return DEC_INFO[s->off].type; }

const setting cfg_settings[] = {
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
    {"server", "file_timeout", "--file-timeout", NULL, "MT_FILE_TIMEOUT", "SEC", K_FLOAT, OFF(file_timeout), 0,
     86400,
     "seconds a file job (/translate_file, /v2/document) may take from when it starts; then its queued sentences are dropped and it fails with 504 (0: no limit)"},
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
    {"server", "glossary_db", "--glossary-db", NULL, "MT_GLOSSARY_DB", "FILE", K_STR, OFF(glossary_db), 0, 0,
     "SQLite file the DeepL glossaries (POST /v2/glossaries) are kept in (unset: suggestions_db, else in memory until the server stops; with shared_state they are kept in that database instead)"},
    {"server", "shared_state", "--shared-state", NULL, "MT_SHARED_STATE", "URL", K_STR, OFF(shared_state), 0, 0,
     "postgresql:// URL of the database every replica shares: suggestions, API keys (mt-server keys), rate-limit counters (libpq's PG* variables and password file apply; unset: kept in this process, suggestions in suggestions_db)"},
    {"server", "file_workers", "--file-workers", NULL, "MT_FILE_WORKERS", "N", K_INT, OFF(file_workers), 1, 256,
     "with shared_state: threads of this replica that claim file jobs from the queue every replica shares"},
    {"server", "job_lease_seconds", "--job-lease-seconds", NULL, "MT_JOB_LEASE_SECONDS", "SEC", K_FLOAT,
     OFF(job_lease_seconds), 0.5, 86400,
     "with shared_state: a claimed file job's lease, renewed while it is worked on; a replica that dies loses it and another replica takes the job over"},
    {"server", "job_max_attempts", "--job-max-attempts", NULL, "MT_JOB_MAX_ATTEMPTS", "N", K_INT,
     OFF(job_max_attempts), 1, 100, "with shared_state: claims of one file job (replicas that died on it) before it fails"},
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
    {"limits", "glossary_max_entries", "--glossary-max-entries", NULL, "MT_GLOSSARY_MAX_ENTRIES", "N", K_INT,
     OFF(glossary_max_entries), 1, 100000000, "entries of one glossary (POST /v2/glossaries); beyond: 413"},
    {"limits", "glossary_max_bytes", "--glossary-max-bytes", NULL, "MT_GLOSSARY_MAX_BYTES", "N", K_LONG,
     OFF(glossary_max_bytes), 1, 1073741824.0,
     "bytes of one glossary's entries as sent (also bounded by max_body_bytes); beyond: 413"},
    {"limits", "glossaries_per_key", "--glossaries-per-key", NULL, "MT_GLOSSARIES_PER_KEY", "N", K_INT,
     OFF(glossaries_per_key), 1, 100000000,
     "glossaries one API key may hold (without keys: the server in all); beyond: 456"},
    {"limits", "max_file_jobs_per_client", "--max-file-jobs-per-client", NULL, "MT_MAX_FILE_JOBS_PER_CLIENT", "N",
     K_INT, OFF(max_file_jobs_per_client), 0, 100000,
     "translated files one client (API key, else address) may hold at once (0: no limit below max_file_jobs); beyond: 429"},
    {"limits", "file_reader_cpu_seconds", "--file-reader-cpu-seconds", NULL, "MT_FILE_READER_CPU_SECONDS", "SEC",
     K_INT, OFF(file_reader_cpu_seconds), 1, 3600,
     "CPU seconds the process that reads and rebuilds one file may use; beyond: that job fails (422)"},
    {"limits", "file_reader_memory_mb", "--file-reader-memory-mb", NULL, "MT_FILE_READER_MEMORY_MB", "MB",
     K_INT, OFF(file_reader_memory_mb), 16, 1048576,
     "memory (MiB of address space) the process that reads one file may add; beyond: that job fails (422)"},
    {"limits", "max_file_jobs", "--max-file-jobs", NULL, "MT_MAX_FILE_JOBS", "N", K_INT,
     OFF(max_file_jobs), 1, 100000, "translated files kept at once (running and finished); beyond: 503"},
    /* [decoding]: decoding_options.h's CFG rows (their range, flag, help), then compute_type */
    MT_DECODING_OPTIONS(DEC_ROW_)
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
const size_t cfg_n_settings = sizeof cfg_settings / sizeof cfg_settings[0];
_Static_assert(sizeof cfg_settings / sizeof cfg_settings[0] <= CFG_MAX_SETTINGS, "raise CFG_MAX_SETTINGS");

const char *const cfg_sections[CFG_N_SECTIONS] = {"server", "workers", "batch", "limits", "decoding", "engine", "log"};


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
    /* Half an hour: 2.7 MB of text at the pace of the bundled en-de model on one worker of
     * a loaded 2-core machine (25 sentences, 1.5 KB a second), so a legitimate document
     * finishes, while a runaway one (a text blown up within the limits) gives its worker
     * back (its sentences queue beside /translate's, 32 lines at a time, meanwhile). */
    cfg->file_timeout = 1800;
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
    cfg->file_reader_cpu_seconds = 30;
    cfg->file_reader_memory_mb = 1024;
    cfg->suggest_limit = 30;
    cfg->glossary_max_entries = 100000; /* as mt_glossaries_limits_default */
    cfg->glossary_max_bytes = 10L << 20;
    cfg->glossaries_per_key = 1000;
    cfg->file_workers = 2;
    cfg->job_lease_seconds = 30;
    cfg->job_max_attempts = 3;
    for (int i = 0; i < MT_OPT_COUNT; i++) cfg->decoding[i] = NAN;
    snprintf(cfg->compute_type, sizeof cfg->compute_type, "default");
    snprintf(cfg->kernels, sizeof cfg->kernels, "auto");
    cfg->split_min = 1;
    cfg->log_level = MT_LOG_INFO;
    cfg->access_log = 1;
}

void cfg_free_keys(mt_config *cfg)
{
    for (int i = 0; i < cfg->n_api_keys; i++) free(cfg->api_keys[i]);
    free(cfg->api_keys);
    cfg->api_keys = NULL;
    cfg->n_api_keys = 0;
}

void cfg_free_model(mt_config_model *m)
{
    free(m->path);
    free(m->source);
    free(m->target);
    free(m->name);
    free(m->compute_type);
    memset(m, 0, sizeof *m);
}

void cfg_free_models(mt_config *cfg)
{
    for (int i = 0; i < cfg->n_models; i++) cfg_free_model(&cfg->models[i]);
    free(cfg->models);
    cfg->models = NULL;
    cfg->n_models = 0;
}

void mt_config_free(mt_config *cfg)
{
    cfg_free_keys(cfg);
    cfg_free_models(cfg);
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

char *cfg_dupn(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *cfg_dup(const char *s) { return cfg_dupn(s, strlen(s)); }

int cfg_push_key(mt_config *cfg, const char *key, size_t len)
{
    char **k = realloc(cfg->api_keys, (size_t)(cfg->n_api_keys + 1) * sizeof *k);
    if (!k) return -1;
    cfg->api_keys = k;
    if (!(k[cfg->n_api_keys] = cfg_dupn(key, len))) return -1;
    cfg->n_api_keys++;
    return 0;
}

int cfg_push_model(mt_config *cfg, mt_config_model *m)
{
    mt_config_model *ms = realloc(cfg->models, (size_t)(cfg->n_models + 1) * sizeof *ms);
    if (!ms) return -1;
    cfg->models = ms;
    ms[cfg->n_models++] = *m;
    memset(m, 0, sizeof *m);
    return 0;
}

/* Language codes: letters, digits, '-' and '_', 1..32 bytes, starting with a letter. */
int cfg_valid_lang(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 32 || !isalpha((unsigned char)s[0])) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_') return 0;
    return 1;
}

int cfg_parse_bool_text(const char *s, int *out)
{
    static const char *const yes[] = {"1", "true", "yes", "on"};
    static const char *const no[] = {"0", "false", "no", "off"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) { *out = 1; return 0; }
        if (strcasecmp(s, no[i]) == 0) { *out = 0; return 0; }
    }
    return -1;
}

int cfg_parse_level_text(const char *s, int *out)
{
    if (strcasecmp(s, "error") == 0) *out = MT_LOG_ERROR;
    else if (strcasecmp(s, "warn") == 0 || strcasecmp(s, "warning") == 0) *out = MT_LOG_WARN;
    else if (strcasecmp(s, "info") == 0) *out = MT_LOG_INFO;
    else if (strcasecmp(s, "debug") == 0) *out = MT_LOG_DEBUG;
    else return -1;
    return 0;
}

/* A [decoding] option's value after its row's checks. 0 for a count that starts at 1
 * (beam_size, max_length) leaves it unset: the model's default, as such files always meant. */
static int store_decoding(mt_config *cfg, const setting *s, double v, int is_integer, const char *where, char *err,
                          size_t errlen)
{
    int integral = cfg_dec_type(s) != MT_OPT_FLOAT, min_open = DEC_INFO[s->off].min_open;
    if (integral && !is_integer) return mt_error(MT_ERR_INVALID, err, errlen, "%s must be an integer", where);
    if (v == 0 && integral && s->min > 0) {
        cfg->decoding[s->off] = NAN;
        return 0;
    }
    if (!((min_open ? v > s->min : v >= s->min) && v <= s->max)) {
        if (!integral)
            return mt_error(MT_ERR_INVALID, err, errlen, "%s: %g is out of range (%s%g..%g)", where, v,
                            min_open ? "above " : "", s->min, s->max);
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: %.0f is out of range (%.0f..%.0f)", where, v, s->min,
                        s->max);
    }
    cfg->decoding[s->off] = v;
    return 0;
}

/* Stores a number into the setting's field after the range check. `where` prefixes
 * messages ("FILE:3:8: workers.count" or "--workers"). */
int cfg_store_number(mt_config *cfg, const setting *s, double v, int is_integer,
                        const char *where, char *err, size_t errlen)
{
    char *base = (char *)cfg;
    if (s->kind == K_DEC) return store_decoding(cfg, s, v, is_integer, where, err, errlen);
    if ((s->kind == K_INT || s->kind == K_LONG) && !is_integer)
        return mt_error(MT_ERR_INVALID, err, errlen, "%s must be an integer", where);
    if (!(v >= s->min && v <= s->max)) {
        if (s->kind == K_FLOAT)
            return mt_error(MT_ERR_INVALID, err, errlen, "%s: %g is out of range (%g..%g)", where, v, s->min, s->max);
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: %.0f is out of range (%.0f..%.0f)", where, v, s->min,
                    s->max);
    }
    if (s->kind == K_INT) *(int *)(base + s->off) = (int)v;
    else if (s->kind == K_LONG) *(long *)(base + s->off) = (long)v;
    else *(double *)(base + s->off) = v;
    return 0;
}

/* Parses a number from flag/env text strictly (the whole text, no spaces). */
static int cfg_store_number_text(mt_config *cfg, const setting *s, const char *text,
                             const char *where, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    if (s->kind == K_FLOAT || (s->kind == K_DEC && cfg_dec_type(s) == MT_OPT_FLOAT)) {
        double v = strtod(text, &end);
        if (end == text || *end || errno || !isfinite(v) || isspace((unsigned char)text[0]))
            return mt_error(MT_ERR_INVALID, err, errlen, "%s: '%s' is not a number", where, text);
        return cfg_store_number(cfg, s, v, 1, where, err, errlen);
    }
    long long v = strtoll(text, &end, 10);
    if (end == text || *end || errno || isspace((unsigned char)text[0]))
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: '%s' is not an integer", where, text);
    return cfg_store_number(cfg, s, (double)v, 1, where, err, errlen);
}

/* Applies a textual value (flag or environment) to a setting. */
int cfg_apply_text(mt_config *cfg, const setting *s, const char *text, const char *where,
                      char *err, size_t errlen)
{
    char *base = (char *)cfg;
    switch (s->kind) {
    case K_STR:
        if (!*text) return mt_error(MT_ERR_INVALID, err, errlen, "%s: empty value", where);
        if (strlen(text) >= 256) return mt_error(MT_ERR_INVALID, err, errlen, "%s: value too long", where);
        snprintf(base + s->off, 256, "%s", text);
        return 0;
    case K_DEC:
        if (cfg_dec_type(s) == MT_OPT_BOOL) {
            int b;
            if (cfg_parse_bool_text(text, &b))
                return mt_error(MT_ERR_INVALID, err, errlen, "%s: '%s' is not a boolean (true/false)", where, text);
            cfg->decoding[s->off] = b;
            return 0;
        }
        return cfg_store_number_text(cfg, s, text, where, err, errlen);
    case K_INT:
    case K_LONG:
    case K_FLOAT: return cfg_store_number_text(cfg, s, text, where, err, errlen);
    case K_BOOL: {
        int b;
        if (cfg_parse_bool_text(text, &b))
            return mt_error(MT_ERR_INVALID, err, errlen, "%s: '%s' is not a boolean (true/false)", where, text);
        *(int *)(base + s->off) = b;
        return 0;
    }
    case K_LEVEL: {
        int l;
        if (cfg_parse_level_text(text, &l))
            return mt_error(MT_ERR_INVALID, err, errlen, "%s: '%s' is not a log level (error, warn, info, debug)",
                        where, text);
        *(int *)(base + s->off) = l;
        return 0;
    }
    case K_KEYS: /* handled by the callers (lists) */
        break;
    }
    return mt_error(MT_ERR_INVALID, err, errlen, "%s: internal error", where);
}

int mt_config_parse_model_spec(const char *spec, mt_config_model *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!spec || !*spec) return mt_error(MT_ERR_INVALID, err, errlen, "empty model directory");
    /* DIR:SRC:TGT when the last two ':'-separated parts are language codes. */
    const char *c2 = strrchr(spec, ':');
    const char *c1 = NULL;
    if (c2 && c2 > spec) {
        for (const char *p = c2 - 1; p >= spec; p--)
            if (*p == ':') { c1 = p; break; }
    }
    if (c1 && c1 > spec) {
        char *src = cfg_dupn(c1 + 1, (size_t)(c2 - c1 - 1));
        char *tgt = cfg_dup(c2 + 1);
        if (!src || !tgt) {
            free(src);
            free(tgt);
            return mt_error(MT_ERR_NOMEM, err, errlen, "out of memory");
        }
        if (cfg_valid_lang(src) && cfg_valid_lang(tgt)) {
            out->path = cfg_dupn(spec, (size_t)(c1 - spec));
            out->source = src;
            out->target = tgt;
            if (!out->path) {
                cfg_free_model(out);
                return mt_error(MT_ERR_NOMEM, err, errlen, "out of memory");
            }
            return 0;
        }
        free(src);
        free(tgt);
    }
    out->path = cfg_dup(spec);
    return out->path ? 0 : mt_error(MT_ERR_NOMEM, err, errlen, "out of memory");
}

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
int cfg_validate_engine(const mt_config *cfg, char *err, size_t errlen)
{
    if (!mt_config_kernels_valid(cfg->kernels))
        return mt_error(MT_ERR_INVALID, err, errlen, "engine.kernels (MT_KERNELS): '%s' is not scalar, avx2, avx512 or auto", cfg->kernels);
    if (!mt_config_cpu_hide_valid(cfg->cpu_hide))
        return mt_error(MT_ERR_INVALID, err, errlen, "engine.cpu_hide (MT_CPU_HIDE): '%s' is not a comma-separated list of vnni, bf16 and amx",
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

/* ------------------------------------------------------------------ validate, resolve */

int mt_config_validate(const mt_config *cfg, char *err, size_t errlen)
{
    if (cfg->n_models == 0)
        return mt_error(MT_ERR_INVALID, err, errlen, "no model to serve: give --model DIR, MT_MODELS or [[models]] "
                    "in a config file (--config FILE)");
    for (int i = 0; i < cfg->n_models; i++) {
        const mt_config_model *m = &cfg->models[i];
        if (!m->path || !*m->path) return mt_error(MT_ERR_INVALID, err, errlen, "model %d has no directory", i + 1);
        if (!m->source != !m->target)
            return mt_error(MT_ERR_INVALID, err, errlen, "model %s: give both source and target, or neither", m->path);
        if ((m->source && !cfg_valid_lang(m->source)) || (m->target && !cfg_valid_lang(m->target)))
            return mt_error(MT_ERR_INVALID, err, errlen, "model %s: invalid language code", m->path);
    }
    if (!mt_config_compute_type_valid(cfg->compute_type))
        return mt_error(MT_ERR_INVALID, err, errlen, "decoding.compute_type: '%s' is not float32, bfloat16, int8, auto or "
                    "default", cfg->compute_type);
    if (cfg_validate_engine(cfg, err, errlen)) return -1;
    if (cfg->decoding[MT_OPT_BEAM_SIZE] > cfg->max_beam_size) /* false for NAN: unset */
        return mt_error(MT_ERR_INVALID, err, errlen, "decoding.beam_size (%.0f) exceeds limits.max_beam_size (%d)",
                    cfg->decoding[MT_OPT_BEAM_SIZE], cfg->max_beam_size);
    for (int i = 0; i < cfg->n_api_keys; i++)
        if (!cfg->api_keys[i][0]) return mt_error(MT_ERR_INVALID, err, errlen, "empty API key");
    return 0;
}
