/* test_config.c: the mt-server settings loader: defaults, the strict config file
 * reader (errors name key and position), environment, flags and their precedence. */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "config.h"
#include "status.h"

static char err[512];

/* Loads text into a fresh config; returns the status (err holds the message). */
static int load(mt_config *cfg, const char *text)
{
    mt_config_init(cfg);
    err[0] = '\0';
    return mt_config_load_string(cfg, text, strlen(text), "t.toml", NULL, err, sizeof err);
}

/* Expects text to fail with a message containing `want`. */
static void expect_error(const char *text, const char *want)
{
    mt_config cfg;
    int rc = load(&cfg, text);
    ck_assert_msg(rc == -1, "expected failure for: %s", text);
    ck_assert_msg(strstr(err, want) != NULL, "message '%s' lacks '%s'", err, want);
    mt_config_free(&cfg);
}

static char *write_temp(const char *text, char *path, size_t cap)
{
    snprintf(path, cap, "/tmp/mt_test_config_XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    size_t n = strlen(text);
    ck_assert_int_eq((int)write(fd, text, n), (int)n);
    close(fd);
    return path;
}

START_TEST(test_defaults)
{
    mt_config cfg;
    mt_config_init(&cfg);
    ck_assert_str_eq(cfg.host, "127.0.0.1");
    ck_assert_int_eq(cfg.port, 8080);
    /* [decoding] unset: the model's defaults, like mt-translate */
    for (int id = 0; id < MT_OPT_COUNT; id++) ck_assert(isnan(cfg.decoding[id]));
    ck_assert_int_eq(cfg.n_models, 0);
    ck_assert_int_eq(cfg.n_api_keys, 0);
    ck_assert_int_gt(cfg.queue_capacity, 0);
    ck_assert_int_gt(cfg.batch_max_sentences, 0);
    ck_assert_int_gt(cfg.max_body_bytes, 0);
    ck_assert_int_eq(cfg.log_level, MT_LOG_INFO);
    ck_assert_int_eq(cfg.access_log, 1);
    /* No model: validation says how to give one. */
    ck_assert_int_eq(mt_config_validate(&cfg, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "--model"));
    mt_config_free(&cfg);
}
END_TEST

START_TEST(test_full_file)
{
    const char *text =
        "# comment line\n"
        "\n"
        "[server]\n"
        "host = \"0.0.0.0\"   # all interfaces\n"
        "port = 9_000\n"
        "http_threads = 3\n"
        "max_connections = 100\n"
        "idle_timeout = 5.5\n"
        "request_timeout = 12\n"
        "drain_timeout = 2.5e1\n"
        "api_keys = [\n"
        "  \"k1\",  # first\n"
        "  'k\\2',\n"
        "]\n"
        "[workers]\n"
        "count = 3\n"
        "threads_per_worker = 2\n"
        "queue_capacity = 17\n"
        "[batch]\n"
        "max_sentences = 8\n"
        "max_tokens = 1000\n"
        "max_wait_ms = 0\n"
        "[limits]\n"
        "max_body_bytes = 4096\n"
        "max_texts = 5\n"
        "max_text_chars = 300\n"
        "max_beam_size = 6\n"
        "[decoding]\n"
        "beam_size = 2\n"
        "length_penalty = 0.6\n"
        "max_length = 64\n"
        "[log]\n"
        "level = \"debug\"\n"
        "access_log = false\n"
        "[[models]]\n"
        "path = \"/m/en-de\"\n"
        "source = \"en\"\n"
        "target = \"de\"\n"
        "name = \"opus-en-de\"\n"
        "[[models]]\n"
        "'path' = \"/m/fr-en\"\n";
    mt_config cfg;
    ck_assert_msg(load(&cfg, text) == 0, "%s", err);
    ck_assert_str_eq(cfg.host, "0.0.0.0");
    ck_assert_int_eq(cfg.port, 9000);
    ck_assert_int_eq(cfg.http_threads, 3);
    ck_assert_int_eq(cfg.max_connections, 100);
    ck_assert_double_eq(cfg.idle_timeout, 5.5);
    ck_assert_double_eq(cfg.request_timeout, 12);
    ck_assert_double_eq(cfg.drain_timeout, 25);
    ck_assert_int_eq(cfg.n_api_keys, 2);
    ck_assert_str_eq(cfg.api_keys[0], "k1");
    ck_assert_str_eq(cfg.api_keys[1], "k\\2"); /* literal string: no escapes */
    ck_assert_int_eq(cfg.workers, 3);
    ck_assert_int_eq(cfg.threads_per_worker, 2);
    ck_assert_int_eq(cfg.queue_capacity, 17);
    ck_assert_int_eq(cfg.batch_max_sentences, 8);
    ck_assert_int_eq(cfg.batch_max_tokens, 1000);
    ck_assert_int_eq(cfg.batch_max_wait_ms, 0);
    ck_assert_int_eq(cfg.max_body_bytes, 4096);
    ck_assert_int_eq(cfg.max_texts, 5);
    ck_assert_int_eq(cfg.max_text_chars, 300);
    ck_assert_int_eq(cfg.max_beam_size, 6);
    ck_assert_double_eq(cfg.decoding[MT_OPT_BEAM_SIZE], 2);
    ck_assert_double_eq_tol(cfg.decoding[MT_OPT_LENGTH_PENALTY], 0.6, 1e-12);
    ck_assert_double_eq(cfg.decoding[MT_OPT_MAX_LENGTH], 64);
    ck_assert_int_eq(cfg.log_level, MT_LOG_DEBUG);
    ck_assert_int_eq(cfg.access_log, 0);
    ck_assert_int_eq(cfg.n_models, 2);
    ck_assert_str_eq(cfg.models[0].path, "/m/en-de");
    ck_assert_str_eq(cfg.models[0].source, "en");
    ck_assert_str_eq(cfg.models[0].target, "de");
    ck_assert_str_eq(cfg.models[0].name, "opus-en-de");
    ck_assert_str_eq(cfg.models[1].path, "/m/fr-en");
    ck_assert_ptr_null(cfg.models[1].source);
    ck_assert_ptr_null(cfg.models[1].target);
    ck_assert_int_eq(mt_config_validate(&cfg, err, sizeof err), 0);
    mt_config_free(&cfg);
}
END_TEST

START_TEST(test_strings_and_escapes)
{
    mt_config cfg;
    ck_assert_msg(load(&cfg, "[server]\nhost = \"a\\u00e9\\t\\\"b\"\r\n") == 0, "%s", err);
    ck_assert_str_eq(cfg.host, "a\xC3\xA9\t\"b");
    mt_config_free(&cfg);
    ck_assert_msg(load(&cfg, "\xEF\xBB\xBF[server]\nhost='::1'") == 0, "%s", err); /* BOM, no EOL */
    ck_assert_str_eq(cfg.host, "::1");
    mt_config_free(&cfg);
    ck_assert_msg(load(&cfg, "[server]\nhost = \"h\\U0001F600\"\n") == 0, "%s", err);
    ck_assert_str_eq(cfg.host, "h\xF0\x9F\x98\x80");
    mt_config_free(&cfg);
    /* Integer accepted where a float is expected; negative values parsed. */
    ck_assert_msg(load(&cfg, "[decoding]\nlength_penalty = 1\n") == 0, "%s", err);
    ck_assert_double_eq(cfg.decoding[MT_OPT_LENGTH_PENALTY], 1.0);
    mt_config_free(&cfg);
    /* An empty file changes nothing. */
    ck_assert_msg(load(&cfg, "") == 0, "%s", err);
    ck_assert_int_eq(cfg.port, 8080);
    mt_config_free(&cfg);
}
END_TEST

START_TEST(test_errors_name_key_and_position)
{
    expect_error("[server]\nport = 1\nprot = 2\n", "t.toml:3:1: unknown key 'prot' in [server]");
    expect_error("[server]\nport = \"80\"\n", "t.toml:2:8: server.port must be an integer, not a string");
    expect_error("[server]\nport = 8.5\n", "t.toml:2:8: server.port must be an integer, not a float");
    expect_error("[server]\nport = 70000\n", "t.toml:2:8: server.port: 70000 is out of range (0..65535)");
    expect_error("[workers]\ncount = -1\n", "t.toml:2:9: workers.count: -1 is out of range");
    expect_error("[server]\nhost = 5\n", "t.toml:2:8: server.host must be a string, not an integer");
    expect_error("[server]\nhost = \"\"\n", "server.host must not be empty");
    expect_error("[log]\naccess_log = \"yes\"\n", "t.toml:2:14: log.access_log must be a boolean");
    expect_error("[log]\nlevel = \"loud\"\n", "t.toml:2:9: log.level: 'loud' is not a log level");
    expect_error("[server]\napi_keys = \"k\"\n", "t.toml:2:12: server.api_keys must be an array of strings");
    expect_error("[server]\napi_keys = [1]\n", "t.toml:2:13: arrays may only hold strings");
    expect_error("[server]\napi_keys = [\"\"]\n", "keys must not be empty");
    expect_error("[decoding]\nlength_penalty = true\n", "decoding.length_penalty must be a number, not a boolean");
    expect_error("[serve]\n", "t.toml:1:1: unknown table [serve]");
    expect_error("port = 1\n", "t.toml:1:1: key 'port' outside a table");
    expect_error("[server]\nport = 1\nport = 2\n", "t.toml:3:1: duplicate key 'server.port'");
    expect_error("[server]\n[log]\n[server]\n", "t.toml:3:1: duplicate table [server]");
    expect_error("[models]\npath = \"x\"\n", "t.toml:1:1: models are an array of tables");
    expect_error("[[server]]\n", "[server] is a table, not an array of tables");
    expect_error("[[models]]\nsource = \"en\"\ntarget = \"de\"\n", "t.toml:1:1: [[models]] entry has no 'path'");
    expect_error("[[models]]\npath = \"x\"\nsource = \"en\"\n", "must give both 'source' and 'target'");
    expect_error("[[models]]\npath = \"x\"\nlang = \"en\"\n", "t.toml:3:1: unknown key 'lang' in [[models]]");
    expect_error("[[models]]\npath = \"x\"\npath = \"y\"\n", "t.toml:3:1: duplicate key 'models.path'");
    expect_error("[[models]]\npath = \"x\"\nsource = \"e n\"\ntarget = \"de\"\n", "t.toml:3:10: models.source: 'e n' is not a language code");
    expect_error("[[models]]\npath = 3\n", "t.toml:2:8: models.path must be a string, not an integer");
}
END_TEST

START_TEST(test_syntax_errors)
{
    expect_error("[server]\nhost = \"abc\n", "t.toml:2:8: unterminated string");
    expect_error("[server]\nport 8080\n", "t.toml:2:6: expected '=' after key 'port'");
    expect_error("[server]\nport = 80 80\n", "t.toml:2:11: expected end of line");
    expect_error("[server]\nport =\n", "t.toml:2:7: missing value for key 'port'");
    expect_error("[server]\nport = {a = 1}\n", "t.toml:2:8: inline tables are not supported");
    expect_error("[server]\nhost = \"\"\"x\"\"\"\n", "multi-line strings are not supported");
    expect_error("[server]\nserver.port = 1\n", "t.toml:2:1: dotted keys are not supported");
    expect_error("[server]\nport = 0x10\n", "t.toml:2:8: invalid value '0x10'");
    expect_error("[server]\nport = 08\n", "invalid value '08'");
    expect_error("[server]\nport = 1__0\n", "invalid value '1__0'");
    expect_error("[server]\nport = 99999999999999999999\n", "is too large");
    expect_error("[server]\nhost = \"\\q\"\n", "t.toml:2:9: invalid escape sequence");
    expect_error("[server]\nhost = \"\\u12\"\n", "invalid \\u escape");
    expect_error("[server]\nhost = \"\\u0000\"\n", "invalid code point");
    expect_error("[server]\nhost = \"\xC3\x28\"\n", "t.toml:2:9: invalid UTF-8 in string");
    expect_error("[server]\napi_keys = [\"a\" \"b\"]\n", "expected ',' or ']' in array");
    expect_error("[server]\napi_keys = [\"a\",\n", "unterminated array");
    expect_error("[server\n", "expected ']' after table name");
    expect_error("[[models]\n", "expected ']]' after table name");
    expect_error("[server]\n= 3\n", "t.toml:2:1: expected a key, found '='");
    expect_error("[server]\nport = nan\n", "invalid value 'nan'");
    expect_error("[server]\nport = \x01\n", "expected a value");
    /* Positions count characters, not bytes: 'é' is one column. */
    expect_error("[server]\nhost = \"\xC3\xA9\" x\n", "t.toml:2:12: expected end of line");
}
END_TEST

START_TEST(test_file_relative_paths_and_replace)
{
    char dirpath[] = "/tmp/mt_test_cfgdir_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dirpath));
    char file[512];
    snprintf(file, sizeof file, "%s/server.toml", dirpath);
    FILE *f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fputs("[[models]]\npath = \"models/en-de\"\n[[models]]\npath = \"/abs/fr-en\"\n", f);
    fclose(f);
    mt_config cfg;
    mt_config_init(&cfg);
    /* Models from an earlier source are replaced by the file's list. */
    mt_config_model m;
    ck_assert_int_eq(mt_config_parse_model_spec("old", &m, err, sizeof err), 0);
    cfg.models = malloc(sizeof m);
    cfg.models[0] = m;
    cfg.n_models = 1;
    ck_assert_msg(mt_config_load_file(&cfg, file, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(cfg.n_models, 2);
    char want[600];
    snprintf(want, sizeof want, "%s/models/en-de", dirpath);
    ck_assert_str_eq(cfg.models[0].path, want);
    ck_assert_str_eq(cfg.models[1].path, "/abs/fr-en");
    mt_config_free(&cfg);
    unlink(file);
    rmdir(dirpath);

    mt_config_init(&cfg);
    ck_assert_int_eq(mt_config_load_file(&cfg, "/nonexistent/mt.toml", err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/mt.toml: cannot open config file"));
    mt_config_free(&cfg);
}
END_TEST

START_TEST(test_model_spec)
{
    mt_config_model m;
    ck_assert_int_eq(mt_config_parse_model_spec("models/en-de", &m, err, sizeof err), 0);
    ck_assert_str_eq(m.path, "models/en-de");
    ck_assert_ptr_null(m.source);
    ck_assert_ptr_null(m.target);
    free(m.path);
    ck_assert_int_eq(mt_config_parse_model_spec("/m/x:en:de", &m, err, sizeof err), 0);
    ck_assert_str_eq(m.path, "/m/x");
    ck_assert_str_eq(m.source, "en");
    ck_assert_str_eq(m.target, "de");
    free(m.path), free(m.source), free(m.target);
    ck_assert_int_eq(mt_config_parse_model_spec("/m/x:zh-Hant:pt_BR", &m, err, sizeof err), 0);
    ck_assert_str_eq(m.source, "zh-Hant");
    ck_assert_str_eq(m.target, "pt_BR");
    free(m.path), free(m.source), free(m.target);
    /* Not language codes: the whole spec is a directory. */
    ck_assert_int_eq(mt_config_parse_model_spec("/m/a:b c:d", &m, err, sizeof err), 0);
    ck_assert_str_eq(m.path, "/m/a:b c:d");
    ck_assert_ptr_null(m.source);
    free(m.path);
    ck_assert_int_eq(mt_config_parse_model_spec(":en:de", &m, err, sizeof err), 0);
    ck_assert_str_eq(m.path, ":en:de");
    free(m.path);
    ck_assert_int_eq(mt_config_parse_model_spec("", &m, err, sizeof err), -1);
}
END_TEST

START_TEST(test_env)
{
    char *env[] = {"PATH=/bin", "MT_PORT=9100", "MT_HOST=0.0.0.0", "MT_WORKERS=3",
                   "MT_LENGTH_PENALTY=0.8", "MT_ACCESS_LOG=off", "MT_LOG_LEVEL=warn",
                   "MT_API_KEYS= a , b,,", "MT_MODELS=/m/one, /m/two:en:fr",
                   "MT_BEAM_SIZE=", /* empty: unset */
                   NULL};
    mt_config cfg;
    mt_config_init(&cfg);
    ck_assert_msg(mt_config_apply_env(&cfg, env, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(cfg.port, 9100);
    ck_assert_str_eq(cfg.host, "0.0.0.0");
    ck_assert_int_eq(cfg.workers, 3);
    ck_assert_double_eq_tol(cfg.decoding[MT_OPT_LENGTH_PENALTY], 0.8, 1e-12);
    ck_assert_int_eq(cfg.access_log, 0);
    ck_assert_int_eq(cfg.log_level, MT_LOG_WARN);
    ck_assert(isnan(cfg.decoding[MT_OPT_BEAM_SIZE])); /* empty: unset */
    ck_assert_int_eq(cfg.n_api_keys, 2);
    ck_assert_str_eq(cfg.api_keys[0], "a");
    ck_assert_str_eq(cfg.api_keys[1], "b");
    ck_assert_int_eq(cfg.n_models, 2);
    ck_assert_str_eq(cfg.models[0].path, "/m/one");
    ck_assert_str_eq(cfg.models[1].path, "/m/two");
    ck_assert_str_eq(cfg.models[1].target, "fr");
    mt_config_free(&cfg);

    char *bad[] = {"MT_PORT=80a", NULL};
    mt_config_init(&cfg);
    ck_assert_int_eq(mt_config_apply_env(&cfg, bad, err, sizeof err), -1);
    ck_assert_str_eq(err, "environment variable MT_PORT: '80a' is not an integer");
    char *range[] = {"MT_QUEUE_CAPACITY=0", NULL};
    ck_assert_int_eq(mt_config_apply_env(&cfg, range, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "MT_QUEUE_CAPACITY: 0 is out of range"));
    char *boolean[] = {"MT_ACCESS_LOG=maybe", NULL};
    ck_assert_int_eq(mt_config_apply_env(&cfg, boolean, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "MT_ACCESS_LOG: 'maybe' is not a boolean"));
    mt_config_free(&cfg);
}
END_TEST

START_TEST(test_args)
{
    char *argv[] = {"mt-server", "--port", "1234", "--host=::1", "--beam", "3", "--max-length=50",
                    "--workers", "2", "--threads", "4", "--model", "/a", "--model", "/b:de:en",
                    "--api-key", "x", "--api-key=y", "--no-access-log", "--log-level", "DEBUG",
                    "--batch-max-wait-ms", "0", "--length-penalty", "1.5", NULL};
    int argc = (int)(sizeof argv / sizeof argv[0]) - 1;
    mt_config cfg;
    mt_config_init(&cfg);
    ck_assert_msg(mt_config_apply_args(&cfg, argc, argv, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(cfg.port, 1234);
    ck_assert_str_eq(cfg.host, "::1");
    ck_assert_double_eq(cfg.decoding[MT_OPT_BEAM_SIZE], 3);
    ck_assert_double_eq(cfg.decoding[MT_OPT_MAX_LENGTH], 50);
    ck_assert_int_eq(cfg.workers, 2);
    ck_assert_int_eq(cfg.threads_per_worker, 4);
    ck_assert_int_eq(cfg.n_models, 2);
    ck_assert_str_eq(cfg.models[0].path, "/a");
    ck_assert_str_eq(cfg.models[1].source, "de");
    ck_assert_int_eq(cfg.n_api_keys, 2);
    ck_assert_str_eq(cfg.api_keys[1], "y");
    ck_assert_int_eq(cfg.access_log, 0);
    ck_assert_int_eq(cfg.log_level, MT_LOG_DEBUG);
    ck_assert_int_eq(cfg.batch_max_wait_ms, 0);
    ck_assert_double_eq(cfg.decoding[MT_OPT_LENGTH_PENALTY], 1.5);
    mt_config_free(&cfg);

    /* booleans: "--flag false" as --help shows, "--flag=false", and a bare "--flag" */
    char *bools[] = {"mt-server", "--no-access-log", "--access-log", "false", NULL};
    mt_config_init(&cfg);
    ck_assert_int_eq(mt_config_apply_args(&cfg, 4, bools, err, sizeof err), 0);
    ck_assert_int_eq(cfg.access_log, 0);
    bools[3] = NULL;
    ck_assert_int_eq(mt_config_apply_args(&cfg, 3, bools, err, sizeof err), 0);
    ck_assert_int_eq(cfg.access_log, 1);
    mt_config_free(&cfg);

    struct { char *args[4]; const char *want; } cases[] = {
        {{"mt-server", "--prot", "1", NULL}, "unknown option '--prot'"},
        {{"mt-server", "--port", NULL}, "--port needs a value (N)"},
        {{"mt-server", "--port", "x", NULL}, "--port: 'x' is not an integer"},
        {{"mt-server", "--port", "-5", NULL}, "--port: -5 is out of range (0..65535)"},
        {{"mt-server", "--workers", "1.5", NULL}, "--workers: '1.5' is not an integer"},
        {{"mt-server", "stray", NULL}, "unexpected argument 'stray'"},
        {{"mt-server", "--model", NULL}, "--model needs a value"},
        {{"mt-server", "--request-timeout", "inf", NULL}, "is not a number"},
        {{"mt-server", "--access-log=perhaps", NULL}, "is not a boolean"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int n = 0;
        while (cases[i].args[n]) n++;
        mt_config_init(&cfg);
        ck_assert_int_eq(mt_config_apply_args(&cfg, n, cases[i].args, err, sizeof err), -1);
        ck_assert_msg(strstr(err, cases[i].want), "'%s' lacks '%s'", err, cases[i].want);
        mt_config_free(&cfg);
    }
}
END_TEST

START_TEST(test_precedence)
{
    char path[64];
    write_temp("[server]\nport = 1111\nhost = \"10.0.0.1\"\nrequest_timeout = 7\n"
               "[workers]\ncount = 5\n[[models]]\npath = \"/file/model\"\n",
               path, sizeof path);
    char cfgflag[80];
    snprintf(cfgflag, sizeof cfgflag, "--config=%s", path);
    char *env[] = {"MT_PORT=2222", "MT_WORKERS=6", NULL};
    char *argv[] = {"mt-server", cfgflag, "--port", "3333", NULL};
    mt_config cfg;
    mt_config_init(&cfg);
    ck_assert_msg(mt_config_resolve(&cfg, 4, argv, env, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(cfg.port, 3333);              /* flag > env > file */
    ck_assert_int_eq(cfg.workers, 6);              /* env > file */
    ck_assert_str_eq(cfg.host, "10.0.0.1");        /* file > default */
    ck_assert_double_eq(cfg.request_timeout, 7);
    ck_assert_int_eq(cfg.batch_max_sentences, 32); /* default */
    ck_assert_int_eq(cfg.n_models, 1);
    ck_assert_str_eq(cfg.models[0].path, "/file/model");
    ck_assert_str_eq(cfg.config_path, path);
    mt_config_free(&cfg);

    /* MT_CONFIG names the file when --config is absent; --model replaces the file's. */
    char envcfg[96];
    snprintf(envcfg, sizeof envcfg, "MT_CONFIG=%s", path);
    char *env2[] = {envcfg, NULL};
    char *argv2[] = {"mt-server", "--model", "/flag/model", NULL};
    mt_config_init(&cfg);
    ck_assert_msg(mt_config_resolve(&cfg, 3, argv2, env2, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(cfg.port, 1111);
    ck_assert_int_eq(cfg.n_models, 1);
    ck_assert_str_eq(cfg.models[0].path, "/flag/model");
    mt_config_free(&cfg);

    /* No config file at all. */
    char *argv3[] = {"mt-server", "--model", "/m", "--port", "0", NULL};
    mt_config_init(&cfg);
    ck_assert_msg(mt_config_resolve(&cfg, 5, argv3, NULL, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(cfg.port, 0);
    ck_assert_ptr_null(cfg.config_path);
    mt_config_free(&cfg);

    /* --help wins over errors elsewhere; errors in the file are reported. */
    char *argv4[] = {"mt-server", "--bogus", "--help", NULL};
    mt_config_init(&cfg);
    ck_assert_int_eq(mt_config_resolve(&cfg, 3, argv4, NULL, err, sizeof err), 0);
    ck_assert_int_eq(cfg.show_help, 1);
    mt_config_free(&cfg);
    char *argv5[] = {"mt-server", NULL};
    mt_config_init(&cfg);
    ck_assert_int_eq(mt_config_resolve(&cfg, 1, argv5, NULL, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "no model to serve"));
    mt_config_free(&cfg);
    char *env3[] = {"MT_CONFIG=/nonexistent.toml", NULL};
    mt_config_init(&cfg);
    ck_assert_int_eq(mt_config_resolve(&cfg, 1, argv5, env3, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent.toml: cannot open"));
    mt_config_free(&cfg);
    unlink(path);
}
END_TEST

START_TEST(test_validate)
{
    mt_config cfg;
    ck_assert_int_eq(load(&cfg, "[decoding]\nbeam_size = 20\n[limits]\nmax_beam_size = 8\n"
                                "[[models]]\npath = \"/m\"\n"), 0);
    ck_assert_int_eq(mt_config_validate(&cfg, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "exceeds limits.max_beam_size"));
    mt_config_free(&cfg);
}
END_TEST

/* [decoding] is decoding_options.h's CFG rows: their ranges (length_penalty 0..10 as a
 * request's, not the old 0..100 of its own), the open lower bound of sampling_topp, every
 * such row a key with its MT_ variable, the per-request-only rows no key; 0 for a count
 * leaves it unset. */
START_TEST(test_decoding_rows_from_options_table)
{
    expect_error("[decoding]\nlength_penalty = 50\n", "decoding.length_penalty: 50 is out of range (0..10)");
    expect_error("[decoding]\nsampling_topp = 0\n", "decoding.sampling_topp: 0 is out of range (above 0..1)");
    expect_error("[decoding]\nbeam_size = 257\n", "out of range (1..256)");
    expect_error("[decoding]\nn_best = 2\n", "n_best");
    expect_error("[decoding]\nseed = 1.5\n", "must be an integer");
    mt_config cfg;
    ck_assert_msg(load(&cfg, "[decoding]\nbeam_size = 0\nsampling_topp = 0.5\nreplace_unknowns = true\n"
                             "seed = 9007199254740991\n") == 0, "%s", err);
    ck_assert(isnan(cfg.decoding[MT_OPT_BEAM_SIZE]));
    ck_assert_double_eq(cfg.decoding[MT_OPT_SAMPLING_TOPP], 0.5);
    ck_assert_double_eq(cfg.decoding[MT_OPT_REPLACE_UNKNOWNS], 1);
    ck_assert_double_eq(cfg.decoding[MT_OPT_SEED], 9007199254740991.0);
    mt_config_free(&cfg);
    char *env[] = {"MT_NO_REPEAT_NGRAM_SIZE=3", NULL};
    char *argv[] = {"mt-server", "--model", "/m", "--beam-size", "5", "--replace-unknowns", NULL};
    mt_config_init(&cfg);
    ck_assert_msg(mt_config_resolve(&cfg, 6, argv, env, err, sizeof err) == 0, "%s", err);
    ck_assert_double_eq(cfg.decoding[MT_OPT_NO_REPEAT_NGRAM_SIZE], 3);
    ck_assert_double_eq(cfg.decoding[MT_OPT_BEAM_SIZE], 5);
    ck_assert_double_eq(cfg.decoding[MT_OPT_REPLACE_UNKNOWNS], 1);
    mt_config_free(&cfg);
}
END_TEST

/* decoding.compute_type and [[models]] compute_type: accepted names, refused others (by
 * key and position, or by validation for flags and the environment), and a round trip. */
START_TEST(test_compute_type)
{
    mt_config cfg;
    ck_assert_int_eq(load(&cfg, "[[models]]\npath = \"/m\"\n"), 0);
    ck_assert_str_eq(cfg.compute_type, "default");
    mt_config_free(&cfg);
    ck_assert_msg(load(&cfg, "[decoding]\ncompute_type = \"int8\"\n[[models]]\npath = \"/a\"\n"
                             "compute_type = \"bfloat16\"\n[[models]]\npath = \"/b\"\n") == 0, "%s", err);
    ck_assert_str_eq(cfg.compute_type, "int8");
    ck_assert_str_eq(cfg.models[0].compute_type, "bfloat16");
    ck_assert_ptr_null(cfg.models[1].compute_type);
    ck_assert_int_eq(mt_config_validate(&cfg, err, sizeof err), 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    mt_config_write(&cfg, f);
    fclose(f);
    mt_config b;
    mt_config_init(&b);
    ck_assert_msg(mt_config_load_string(&b, buf, len, "dump", NULL, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(b.compute_type, "int8");
    ck_assert_str_eq(b.models[0].compute_type, "bfloat16");
    ck_assert_ptr_null(b.models[1].compute_type);
    free(buf);
    mt_config_free(&b);
    mt_config_free(&cfg);
    expect_error("[[models]]\npath = \"/m\"\ncompute_type = \"fp8\"\n", "t.toml:3:16: models.compute_type: 'fp8'");
    expect_error("[[models]]\npath = \"/m\"\ncompute_type = 8\n", "models.compute_type must be a string");
    ck_assert_int_eq(load(&cfg, "[decoding]\ncompute_type = \"fp8\"\n[[models]]\npath = \"/m\"\n"), 0);
    ck_assert_int_eq(mt_config_validate(&cfg, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "decoding.compute_type: 'fp8'"));
    mt_config_free(&cfg);
    char *argv[] = {"mt-server", "--compute-type", "auto", "--model", "/m", NULL};
    mt_config_init(&cfg);
    ck_assert_int_eq(mt_config_apply_args(&cfg, 5, argv, err, sizeof err), 0);
    ck_assert_str_eq(cfg.compute_type, "auto");
    char *envp[] = {"MT_COMPUTE_TYPE=float32", NULL};
    ck_assert_int_eq(mt_config_apply_env(&cfg, envp, err, sizeof err), 0);
    ck_assert_str_eq(cfg.compute_type, "float32");
    ck_assert_int_eq(mt_config_validate(&cfg, err, sizeof err), 0);
    mt_config_free(&cfg);
}
END_TEST

/* The model library's settings ([engine] and compute_type): a file, the environment and
 * flags like every setting; mt_config_apply_engine_env reads those variables alone (a
 * bad MT_PORT is none of mt-translate's business) with the same checks. */
START_TEST(test_engine_settings)
{
    mt_config cfg;
    mt_config_init(&cfg);
    ck_assert_str_eq(cfg.kernels, "auto");
    ck_assert_str_eq(cfg.cpu_hide, "");
    ck_assert_int_eq(cfg.split_min, 1);
    ck_assert_int_eq(load(&cfg, "[engine]\nkernels = \"avx2\"\ncpu_hide = \"vnni,amx\"\nsplit_min = 0\n"
                                "[[models]]\npath = \"/m\"\n"), 0);
    ck_assert_int_eq(mt_config_validate(&cfg, err, sizeof err), 0);
    ck_assert_str_eq(cfg.kernels, "avx2");
    ck_assert_str_eq(cfg.cpu_hide, "vnni,amx");
    ck_assert_int_eq(cfg.split_min, 0);
    char *argv[] = {"mt-server", "--kernels", "scalar", NULL};
    ck_assert_int_eq(mt_config_apply_args(&cfg, 3, argv, err, sizeof err), 0);
    ck_assert_str_eq(cfg.kernels, "scalar");
    mt_config_free(&cfg);
    ck_assert_int_eq(load(&cfg, "[engine]\nkernels = \"avx1024\"\n[[models]]\npath = \"/m\"\n"), 0);
    ck_assert_int_eq(mt_config_validate(&cfg, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "engine.kernels (MT_KERNELS): 'avx1024'"));
    mt_config_free(&cfg);

    mt_config_init(&cfg);
    char *envp[] = {"MT_PORT=abc", "MT_KERNELS=avx512", "MT_CPU_HIDE=bf16", "MT_SPLIT_MIN=4",
                    "MT_COMPUTE_TYPE=int8", NULL};
    ck_assert_int_eq(mt_config_apply_engine_env(&cfg, envp, err, sizeof err), 0);
    ck_assert_str_eq(cfg.kernels, "avx512");
    ck_assert_str_eq(cfg.cpu_hide, "bf16");
    ck_assert_int_eq(cfg.split_min, 4);
    ck_assert_str_eq(cfg.compute_type, "int8");
    ck_assert_int_eq(cfg.port, 8080);
    char *bad_hide[] = {"MT_CPU_HIDE=vnni,sse", NULL};
    ck_assert_int_eq(mt_config_apply_engine_env(&cfg, bad_hide, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "MT_CPU_HIDE"));
    char *bad_type[] = {"MT_COMPUTE_TYPE=fp8", NULL};
    ck_assert_int_eq(mt_config_apply_engine_env(&cfg, bad_type, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "MT_COMPUTE_TYPE"));
    char *bad_split[] = {"MT_SPLIT_MIN=-1", NULL};
    ck_assert_int_eq(mt_config_apply_engine_env(&cfg, bad_split, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "MT_SPLIT_MIN"));
    mt_config_free(&cfg);
}
END_TEST

/* The one error type (status.h): mt_error writes the message and returns the
 * status it was given, config's failures are MT_ERR_INVALID, every status has a name. */
START_TEST(test_status_helper)
{
    char buf[16];
    ck_assert_int_eq(mt_error(MT_ERR_NOMEM, buf, sizeof buf, "no %d bytes", 123456789), MT_ERR_NOMEM);
    ck_assert_str_eq(buf, "no 123456789 by"); /* truncated, terminated */
    ck_assert_int_eq(mt_error(MT_ERR_INVALID, NULL, 0, "nowhere"), MT_ERR_INVALID);
    ck_assert_str_eq(mt_strfmt(buf, sizeof buf, "%s.%d", "layer", 3), "layer.3");
    ck_assert_str_eq(mt_status_str(MT_OK), "ok");
    ck_assert_str_eq(mt_status_str(MT_ERR_INVALID), "invalid input");
    ck_assert_str_eq(mt_status_str(MT_ERR_NOMEM), "out of memory");
    ck_assert_str_eq(mt_status_str(MT_ERR_CANCELLED), "cancelled");
    ck_assert_str_eq(mt_status_str(42), "unknown status");
    mt_config cfg;
    mt_config_init(&cfg);
    char *argv[] = {"mt-server", "--port", "http", NULL};
    ck_assert_int_eq(mt_config_apply_args(&cfg, 3, argv, err, sizeof err), MT_ERR_INVALID);
    ck_assert_int_eq(load(&cfg, "[server]\nport = \"x\"\n"), MT_ERR_INVALID);
    mt_config_free(&cfg);
}
END_TEST

START_TEST(test_write_roundtrip)
{
    char *argv[] = {"mt-server", "--port", "4321", "--api-key", "se\"cret", "--model",
                    "/m/x y:en:de", "--length-penalty", "0.25", "--log-level", "error", NULL};
    mt_config a, b;
    mt_config_init(&a);
    ck_assert_int_eq(mt_config_apply_args(&a, 11, argv, err, sizeof err), 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    mt_config_write(&a, f);
    fclose(f);
    mt_config_init(&b);
    ck_assert_msg(mt_config_load_string(&b, buf, len, "dump", NULL, err, sizeof err) == 0,
                  "%s\n%s", err, buf);
    ck_assert_int_eq(b.port, 4321);
    ck_assert_str_eq(b.api_keys[0], "se\"cret");
    ck_assert_str_eq(b.models[0].path, "/m/x y");
    ck_assert_str_eq(b.models[0].target, "de");
    ck_assert_double_eq(b.decoding[MT_OPT_LENGTH_PENALTY], 0.25);
    ck_assert_int_eq(b.log_level, MT_LOG_ERROR);
    ck_assert_int_eq(b.queue_capacity, a.queue_capacity);
    free(buf);
    mt_config_free(&a);
    mt_config_free(&b);

    /* A model default (unset length penalty) stays unset through a round trip. */
    mt_config_init(&a);
    f = open_memstream(&buf, &len);
    mt_config_write(&a, f);
    fclose(f);
    mt_config_init(&b);
    ck_assert_int_eq(mt_config_load_string(&b, buf, len, "dump", NULL, err, sizeof err), 0);
    ck_assert(isnan(b.decoding[MT_OPT_LENGTH_PENALTY]));
    free(buf);
    mt_config_free(&a);
    mt_config_free(&b);
}
END_TEST

START_TEST(test_write_hides_database_password)
{
    /* --print-config output gets pasted into tickets: the shared-state URL's password
     * (user info and a password= parameter) is printed as ***, the rest as given. */
    char *argv[] = {"mt-server", "--shared-state",
                    "postgresql://mt:s3cret-pw@db.example:5432/mt?password=other-s3cret&sslmode=require",
                    NULL};
    mt_config a;
    mt_config_init(&a);
    ck_assert_int_eq(mt_config_apply_args(&a, 3, argv, err, sizeof err), 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    mt_config_write(&a, f);
    fclose(f);
    ck_assert_msg(strstr(buf, "s3cret") == NULL, "%s", buf);
    ck_assert_msg(strstr(buf, "shared_state = \"postgresql://mt:***@db.example:5432/mt?password=***"
                              "&sslmode=require\"") != NULL, "%s", buf);
    free(buf);
    mt_config_free(&a);
}
END_TEST

START_TEST(test_help_lists_every_setting)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    mt_config_write_help(f, "mt-server");
    fclose(f);
    const char *want[] = {"--config", "--model", "--host", "--port", "--workers", "--beam",
                          "--max-length", "--length-penalty", "--queue-capacity",
                          "--batch-max-sentences", "--batch-max-tokens", "--batch-max-wait-ms",
                          "--max-body-bytes", "--max-texts", "--max-text-chars",
                          "--request-timeout", "--api-key", "--log-level", "MT_PORT",
                          "MT_MODELS", "server.port", "--threads-per-worker", "--drain-timeout"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(buf, want[i]), "help lacks %s", want[i]);
    free(buf);
}
END_TEST

/* Every example config shipped in config/examples/ loads and validates. */
START_TEST(test_examples_load)
{
    const char *src = getenv("MT_SOURCE_DIR");
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/config/examples", src ? src : ".");
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open %s (set MT_SOURCE_DIR)", dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 5, ".toml") != 0) continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        mt_config cfg;
        mt_config_init(&cfg);
        ck_assert_msg(mt_config_load_file(&cfg, path, err, sizeof err) == 0, "%s", err);
        ck_assert_msg(mt_config_validate(&cfg, err, sizeof err) == 0, "%s: %s", path, err);
        mt_config_free(&cfg);
        n++;
    }
    closedir(d);
    ck_assert_int_ge(n, 2);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("config");
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_full_file);
    tcase_add_test(tc, test_strings_and_escapes);
    tcase_add_test(tc, test_errors_name_key_and_position);
    tcase_add_test(tc, test_syntax_errors);
    tcase_add_test(tc, test_file_relative_paths_and_replace);
    tcase_add_test(tc, test_model_spec);
    tcase_add_test(tc, test_env);
    tcase_add_test(tc, test_args);
    tcase_add_test(tc, test_precedence);
    tcase_add_test(tc, test_validate);
    tcase_add_test(tc, test_decoding_rows_from_options_table);
    tcase_add_test(tc, test_compute_type);
    tcase_add_test(tc, test_engine_settings);
    tcase_add_test(tc, test_status_helper);
    tcase_add_test(tc, test_write_roundtrip);
    tcase_add_test(tc, test_write_hides_database_password);
    tcase_add_test(tc, test_help_lists_every_setting);
    tcase_add_test(tc, test_examples_load);
    suite_add_tcase(s, tc);
    return mt_check_run(srunner_create(s));
}
