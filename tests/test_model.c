/* test_model.c: the engine's loading, validation and search invariants.
 * Numerics against PyTorch are in test_engine_vs_reference.py; here each test builds a
 * tiny model directory (tiny_model.h), possibly broken on purpose. */
#include <check.h>
#include <math.h>
#include <signal.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "../model/internal.h"
#include "../model/probe.h"
#include "../model/safetensors.h"
#include "model.h"
#include "tiny_model.h"

static char tmp_root[256];

static void make_root(void)
{
    snprintf(tmp_root, sizeof tmp_root, "/tmp/mt-test-model-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmp_root));
}

static void remove_root(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_root);
    ck_assert_int_eq(system(cmd), 0);
}

/* Writes a model from spec into a fresh directory and returns its path (static buffer). */
static const char *write_model(const char *name, const tiny_model_spec *spec)
{
    static char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", tmp_root, name);
    ck_assert_int_eq(tiny_model_write(dir, spec), 0);
    return dir;
}

/* Loads dir expecting failure; returns the error text (static buffer). */
static const char *load_error(const char *dir)
{
    static char err[512];
    err[0] = 0;
    mt_model *m = mt_model_load(dir, err, sizeof err);
    ck_assert_msg(m == NULL, "model in %s loaded but should have failed", dir);
    ck_assert_msg(err[0] != 0, "no error message");
    return err;
}

#define ASSERT_CONTAINS(hay, needle) ck_assert_msg(strstr((hay), (needle)) != NULL, "'%s' not in '%s'", (needle), (hay))

/* ---- loading ---- */

/* Every activation_function name HF uses for these models, and MarianConfig's default
 * (gelu) when config.json has none. */
START_TEST(activation_names_and_default)
{
    static const char *const cases[][2] = {
        {",\"activation_function\":\"swish\"", "swish"},  {",\"activation_function\":\"silu\"", "swish"},
        {",\"activation_function\":\"gelu\"", "gelu"},    {",\"activation_function\":\"quick_gelu\"", "quick_gelu"},
        {",\"activation_function\":\"gelu_new\"", "gelu_new"},
        {",\"activation_function\":\"gelu_pytorch_tanh\"", "gelu_new"},
    };
    char err[512];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tiny_model_spec s = tiny_model_default();
        s.config_extra = cases[i][0];
        mt_model *m = mt_model_load(write_model("act", &s), err, sizeof err);
        ck_assert_msg(m != NULL, "%s", err);
        ck_assert_str_eq(mt_model_get_info(m)->activation, cases[i][1]);
        mt_model_free(m);
    }
    /* no activation_function at all: rewrite config.json without the key */
    tiny_model_spec s = tiny_model_default();
    const char *dir = write_model("act-default", &s);
    char path[600], buf[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *relu = ",\"activation_function\":\"relu\"";
    char *key = strstr(buf, relu);
    ck_assert_ptr_nonnull(key);
    memmove(key, key + strlen(relu), strlen(key) - strlen(relu) + 1);
    ck_assert_ptr_null(strstr(buf, "activation_function"));
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(buf, f);
    fclose(f);
    mt_model *m = mt_model_load(dir, err, sizeof err);
    ck_assert_msg(m != NULL, "%s", err);
    ck_assert_str_eq(mt_model_get_info(m)->activation, "gelu");
    mt_model_free(m);
}
END_TEST

START_TEST(loads_valid_model_and_reads_config)
{
    tiny_model_spec s = tiny_model_default();
    char err[512];
    mt_model *m = mt_model_load(write_model("ok", &s), err, sizeof err);
    ck_assert_msg(m != NULL, "%s", err);
    const mt_model_info *in = mt_model_get_info(m);
    ck_assert_int_eq(in->d_model, 16);
    ck_assert_int_eq(in->pad_id, 39);
    ck_assert_int_eq(in->decoder_start_id, 39);
    ck_assert_int_eq(in->default_beam_size, 3);
    ck_assert_int_eq(in->default_max_length, 20);
    ck_assert_str_eq(in->activation, "relu");
    mt_search_options o;
    mt_search_options_default(m, &o);
    ck_assert_int_eq(o.beam_size, 3);
    ck_assert_int_eq(o.n_best, 1);
    mt_model_free(m);
}
END_TEST

START_TEST(generation_config_overrides_config)
{
    tiny_model_spec s = tiny_model_default();
    const char *dir = write_model("gen", &s);
    char path[600];
    snprintf(path, sizeof path, "%s/generation_config.json", dir);
    FILE *f = fopen(path, "w");
    fprintf(f, "{\"num_beams\": 6, \"max_length\": 33, \"length_penalty\": 0.6}");
    fclose(f);
    char err[512];
    mt_model *m = mt_model_load(dir, err, sizeof err);
    ck_assert_msg(m != NULL, "%s", err);
    ck_assert_int_eq(mt_model_get_info(m)->default_beam_size, 6);
    ck_assert_int_eq(mt_model_get_info(m)->default_max_length, 33);
    ck_assert_float_eq_tol(mt_model_get_info(m)->default_length_penalty, 0.6f, 1e-6f);
    mt_model_free(m);
}
END_TEST

START_TEST(missing_directory_and_files)
{
    ASSERT_CONTAINS(load_error("/nonexistent/model"), "config.json");
    tiny_model_spec s = tiny_model_default();
    const char *dir = write_model("nofile", &s);
    char path[600];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    unlink(path);
    ASSERT_CONTAINS(load_error(dir), "model.safetensors");
}
END_TEST

START_TEST(malformed_config_json)
{
    tiny_model_spec s = tiny_model_default();
    const char *dir = write_model("badjson", &s);
    char path[600];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    fprintf(f, "{\"d_model\": 16,\n \"encoder_layers\": }");
    fclose(f);
    const char *e = load_error(dir);
    ASSERT_CONTAINS(e, "config.json");
    ASSERT_CONTAINS(e, "line 2");
}
END_TEST

START_TEST(config_wrong_types_and_unsupported_settings)
{
    struct {
        const char *extra, *expect;
    } cases[] = {
        {",\"activation_function\":\"tanh\"", "activation_function \"tanh\""},
        {",\"normalize_before\":true", "pre-norm"},
        {",\"static_position_embeddings\":false", "learned positions"},
        {",\"bad_words_ids\":[[1,2]]", "bad_words_ids[0]"},
        {",\"scale_embedding\":\"yes\"", "scale_embedding"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tiny_model_spec s = tiny_model_default();
        s.config_extra = cases[i].extra;
        char name[32];
        snprintf(name, sizeof name, "cfg%zu", i);
        const char *dir = write_model(name, &s);
        char err[512];
        mt_model *m = mt_model_load(dir, err, sizeof err);
        if (m) {
            mt_model_free(m);
            ck_abort_msg("case %zu loaded", i);
        }
        ck_assert_msg(strstr(err, cases[i].expect) != NULL, "case %zu: %s", i, err);
    }
}
END_TEST

START_TEST(config_missing_key_and_bad_value)
{
    tiny_model_spec s = tiny_model_default();
    const char *dir = write_model("cfgkey", &s);
    char path[600];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    fprintf(f, "{\"d_model\": 16, \"encoder_layers\": 1}");
    fclose(f);
    ASSERT_CONTAINS(load_error(dir), "missing required key \"decoder_layers\"");
    f = fopen(path, "w");
    fprintf(f, "{\"d_model\": \"16\"}");
    fclose(f);
    ASSERT_CONTAINS(load_error(dir), "\"d_model\" must be an integer");
    f = fopen(path, "w");
    fprintf(f, "[1, 2]");
    fclose(f);
    ASSERT_CONTAINS(load_error(dir), "not a JSON object");
}
END_TEST

/* Issue 13 item 6: a config asking for 10^9 layers is named as such, not "out of memory". */
START_TEST(absurd_layer_count_is_named)
{
    tiny_model_spec s = tiny_model_default();
    const char *dir = write_model("layers", &s);
    char path[600];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char cfg[4096];
    size_t n = fread(cfg, 1, sizeof cfg - 1, f);
    fclose(f);
    cfg[n] = 0;
    char *at = strstr(cfg, "\"decoder_layers\"");
    ck_assert_ptr_nonnull(at);
    char *colon = strchr(at, ':'), *end = colon + 1;
    while (*end == ' ' || (*end >= '0' && *end <= '9'))
        end++;
    f = fopen(path, "w");
    fprintf(f, "%.*s: 1000000000%s", (int)(colon - cfg), cfg, end);
    fclose(f);
    const char *e = load_error(dir);
    ASSERT_CONTAINS(e, "decoder_layers is 1000000000");
    ASSERT_CONTAINS(e, "holds 2 decoder layers");
    ck_assert_msg(strstr(e, "out of memory") == NULL, "%s", e);
}
END_TEST

/* Compute types through the engine API: names round-trip, float32/auto/default load and
 * resolve to a type this build runs (auto never to one it lacks), the ones not built yet
 * are refused with a message, and MT_COMPUTE_TYPE applies only to DEFAULT. */
START_TEST(compute_types_resolve_or_are_refused)
{
    const char *names[] = {"default", "float32", "bfloat16", "int8", "auto"};
    for (int i = 0; i < 5; i++) {
        mt_compute_type t;
        ck_assert_int_eq(mt_compute_type_parse(names[i], &t), 0);
        ck_assert_str_eq(mt_compute_type_name(t), names[i]);
    }
    mt_compute_type t;
    ck_assert_int_eq(mt_compute_type_parse("fp8", &t), -1);
    ck_assert_int_eq(mt_compute_type_parse(NULL, &t), -1);

    tiny_model_spec s = tiny_model_default();
    const char *dir = write_model("compute", &s);
    char err[512];
    mt_model_options o;
    unsetenv("MT_COMPUTE_TYPE");
    for (int want = MT_COMPUTE_DEFAULT; want <= MT_COMPUTE_AUTO; want++) {
        mt_model_options_default(&o);
        o.compute_type = (mt_compute_type)want;
        err[0] = 0;
        mt_model *m = mt_model_load_ex(dir, &o, err, sizeof err);
        if (want == MT_COMPUTE_BFLOAT16 || want == MT_COMPUTE_INT8) {
            ck_assert_ptr_null(m);
            ASSERT_CONTAINS(err, mt_compute_type_name((mt_compute_type)want));
            ASSERT_CONTAINS(err, "not available");
        } else {
            ck_assert_msg(m != NULL, "%s: %s", names[want], err);
            ck_assert_int_eq(mt_model_compute_type(m), MT_COMPUTE_FLOAT32);
            mt_model_free(m);
        }
    }
    setenv("MT_COMPUTE_TYPE", "int8", 1);
    ck_assert_ptr_null(mt_model_load(dir, err, sizeof err));
    ASSERT_CONTAINS(err, "int8");
    mt_model_options_default(&o);
    o.compute_type = MT_COMPUTE_FLOAT32; /* an explicit choice wins over the variable */
    mt_model *m = mt_model_load_ex(dir, &o, err, sizeof err);
    ck_assert_ptr_nonnull(m);
    mt_model_free(m);
    setenv("MT_COMPUTE_TYPE", "fp8", 1);
    ck_assert_ptr_null(mt_model_load(dir, err, sizeof err));
    ASSERT_CONTAINS(err, "MT_COMPUTE_TYPE=fp8");
    unsetenv("MT_COMPUTE_TYPE");
}
END_TEST

START_TEST(missing_tensor_is_named)
{
    tiny_model_spec s = tiny_model_default();
    s.skip_tensor = "model.decoder.layers.1.encoder_attn.k_proj.bias";
    ASSERT_CONTAINS(load_error(write_model("miss", &s)), "missing tensor 'model.decoder.layers.1.encoder_attn.k_proj.bias'");
}
END_TEST

START_TEST(wrong_shape_is_named)
{
    tiny_model_spec s = tiny_model_default();
    s.bad_shape = "model.encoder.layers.0.fc1.weight";
    const char *e = load_error(write_model("shape", &s));
    ASSERT_CONTAINS(e, "model.encoder.layers.0.fc1.weight");
    ASSERT_CONTAINS(e, "[33, 16]");
    ASSERT_CONTAINS(e, "[32, 16]");
}
END_TEST

START_TEST(unexpected_tensor_is_refused)
{
    tiny_model_spec s = tiny_model_default();
    s.extra_tensor = "model.encoder.layer_norm.weight";
    ASSERT_CONTAINS(load_error(write_model("extra", &s)), "unexpected tensor 'model.encoder.layer_norm.weight'");
    s.extra_tensor = "model.encoder.embed_positions.weight"; /* a stored table is used: shape checked */
    ASSERT_CONTAINS(load_error(write_model("pos", &s)), "'model.encoder.embed_positions.weight' has shape [4]");
}
END_TEST

/* Rewrites the safetensors file through fn(bytes, len) -> new len. */
static const char *corrupt(const char *name, size_t (*fn)(unsigned char *, size_t))
{
    tiny_model_spec s = tiny_model_default();
    const char *dir = write_model(name, &s);
    char path[600];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    FILE *f = fopen(path, "rb");
    static unsigned char buf[1 << 20];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    len = fn(buf, len);
    f = fopen(path, "wb");
    fwrite(buf, 1, len, f);
    fclose(f);
    return dir;
}

static size_t truncate_half(unsigned char *b, size_t len) { (void)b; return len / 2; }
static size_t lie_header_len(unsigned char *b, size_t len) { b[3] = 0x7f; return len; }
static size_t tiny_file(unsigned char *b, size_t len) { (void)b; (void)len; return 5; }
static size_t replace_in_header(unsigned char *b, size_t len, const char *from, const char *to)
{
    unsigned char *p = memmem(b, len, from, strlen(from));
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(strlen(from), strlen(to));
    memcpy(p, to, strlen(to));
    return len;
}
static size_t bad_dtype(unsigned char *b, size_t len) { return replace_in_header(b, len, "\"F32\"", "\"I64\""); }
static size_t bad_json(unsigned char *b, size_t len) { return replace_in_header(b, len, "\"shape\"", "\"shape "); }
/* The second tensor's offsets start at 0 too: it overlaps the first. */
static size_t overlap(unsigned char *b, size_t len)
{
    unsigned char *first = memmem(b, len, "\"data_offsets\":[0,", 18);
    ck_assert_ptr_nonnull(first);
    unsigned char *second = memmem(first + 1, len - (size_t)(first + 1 - b), "\"data_offsets\":[", 16);
    ck_assert_ptr_nonnull(second);
    /* "[2560,2720]" -> "[0   ,2720]" keeps the length; JSON allows the spaces */
    unsigned char *num = second + 16;
    while (*num != ',')
        *num++ = ' ';
    second[16] = '0';
    return len;
}

START_TEST(broken_safetensors_files)
{
    ASSERT_CONTAINS(load_error(corrupt("trunc", truncate_half)), "past the data section");
    ASSERT_CONTAINS(load_error(corrupt("lie", lie_header_len)), "header length");
    ASSERT_CONTAINS(load_error(corrupt("short", tiny_file)), "too short");
    ASSERT_CONTAINS(load_error(corrupt("dtype", bad_dtype)), "unsupported dtype \"I64\"");
    ASSERT_CONTAINS(load_error(corrupt("json", bad_json)), "header JSON");
    const char *e = load_error(corrupt("overlap", overlap));
    ck_assert_msg(strstr(e, "overlap") || strstr(e, "cover"), "%s", e);
}
END_TEST

START_TEST(f16_weights_load_close_to_f32)
{
    tiny_model_spec s = tiny_model_default();
    char err[512];
    mt_model *a = mt_model_load(write_model("f32", &s), err, sizeof err);
    s.f16 = 1;
    mt_model *b = mt_model_load(write_model("f16", &s), err, sizeof err);
    ck_assert_msg(a && b, "%s", err);
    mt_state *sa = mt_state_create(a, 1, err, sizeof err), *sb = mt_state_create(b, 1, err, sizeof err);
    int32_t src[] = {3, 4, 5, 0};
    float ea[4 * 16], eb[4 * 16];
    ck_assert_int_eq(mt_encode_one(sa, src, 4, ea), 0);
    ck_assert_int_eq(mt_encode_one(sb, src, 4, eb), 0);
    for (int i = 0; i < 4 * 16; i++)
        ck_assert_float_eq_tol(ea[i], eb[i], 0.05f);
    mt_state_free(sa);
    mt_state_free(sb);
    mt_model_free(a);
    mt_model_free(b);
}
END_TEST

/* The arena is mapped read-only, so a stray write faults instead of corrupting weights
 * other threads read. Checked in /proc/self/maps rather than by faulting, which sanitizers
 * and valgrind would report as an error. */
START_TEST(weights_are_read_only)
{
    tiny_model_spec s = tiny_model_default();
    char err[512];
    mt_model *m = mt_model_load(write_model("ro", &s), err, sizeof err);
    ck_assert_ptr_nonnull(m);
    uintptr_t w = (uintptr_t)m->enc[0].fc1.w;
    FILE *maps = fopen("/proc/self/maps", "r");
    ck_assert_ptr_nonnull(maps);
    char line[512], perms[8] = "";
    while (fgets(line, sizeof line, maps)) {
        unsigned long lo, hi;
        char p[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, p) == 3 && w >= lo && w < hi)
            snprintf(perms, sizeof perms, "%s", p);
    }
    fclose(maps);
    ck_assert_str_eq(perms, "r--p");
    mt_model_free(m);
}
END_TEST

/* ---- search ---- */

typedef struct {
    mt_model *model;
    mt_state *state;
} fixture;

static fixture open_model(const char *name, int threads)
{
    tiny_model_spec s = tiny_model_default();
    char err[512];
    fixture fx = {mt_model_load(write_model(name, &s), err, sizeof err), NULL};
    ck_assert_msg(fx.model != NULL, "%s", err);
    fx.state = mt_state_create(fx.model, threads, err, sizeof err);
    ck_assert_ptr_nonnull(fx.state);
    return fx;
}

static void close_model(fixture *fx)
{
    mt_state_free(fx->state);
    mt_model_free(fx->model);
}

static const int32_t sources[6][8] = {
    {5, 6, 7, 0}, {9, 0}, {12, 13, 14, 15, 16, 17, 0}, {20, 21, 0}, {3, 30, 31, 32, 0}, {0},
};
static const int source_lens[6] = {4, 2, 7, 3, 5, 1};

/* Copies result ids into a string like "5 7 9" for comparisons. */
static void ids_text(const mt_hypothesis *h, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = 0;
    for (int i = 0; i < h->length && n + 12 < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, i ? " %d" : "%d", h->ids[i]);
}

START_TEST(batch_and_thread_count_do_not_change_results)
{
    fixture one = open_model("inv1", 1), two = open_model("inv2", 2);
    mt_search_options o;
    mt_search_options_default(one.model, &o);
    o.beam_size = 4;
    o.n_best = 2;
    const int32_t *src[6];
    for (int i = 0; i < 6; i++)
        src[i] = sources[i];
    mt_result batch[6], single;
    char a[512], b[512];
    ck_assert_int_eq(mt_translate_ids(two.state, &o, 6, src, source_lens, batch), 0);
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(mt_translate_ids(one.state, &o, 1, &src[i], &source_lens[i], &single), 0);
        ck_assert_int_eq(single.n_hyps, batch[i].n_hyps);
        for (int k = 0; k < single.n_hyps; k++) {
            ids_text(&single.hyps[k], a, sizeof a);
            ids_text(&batch[i].hyps[k], b, sizeof b);
            ck_assert_str_eq(a, b);
            ck_assert_float_eq_tol(single.hyps[k].score, batch[i].hyps[k].score, 1e-5f);
        }
    }
    close_model(&one);
    close_model(&two);
}
END_TEST

/* One pool driven by several threads at once, with states of two different models (as
 * the server's workers do): every result equals the one computed on a lone thread. The
 * model is wide enough (vocabulary 600 >= 512 columns) that products really split. */
typedef struct {
    const mt_model *model;
    mt_state *state;
    const char *expect[6];
    int rounds, failures;
} pool_driver;

static void *drive_shared_pool(void *arg)
{
    pool_driver *d = arg;
    mt_search_options o;
    mt_search_options_default(d->model, &o);
    o.beam_size = 4;
    const int32_t *src[6];
    for (int i = 0; i < 6; i++)
        src[i] = sources[i];
    for (int r = 0; r < d->rounds; r++) {
        mt_result res[6];
        if (mt_translate_ids(d->state, &o, 6, src, source_lens, res) != 0) {
            d->failures++;
            continue;
        }
        for (int i = 0; i < 6; i++) {
            char got[512];
            ids_text(&res[i].hyps[0], got, sizeof got);
            if (strcmp(got, d->expect[i]) != 0) d->failures++;
        }
    }
    return NULL;
}

START_TEST(shared_pool_serves_states_of_two_models_at_once)
{
    tiny_model_spec sa = tiny_model_default(), sb = tiny_model_default();
    sa.d = sb.d = 32, sa.ffn = sb.ffn = 64, sa.vocab = sb.vocab = 600, sa.pad = sb.pad = 599;
    sb.seed = 11;
    char err[512];
    mt_model *models[2] = {mt_model_load(write_model("pool_a", &sa), err, sizeof err),
                           mt_model_load(write_model("pool_b", &sb), err, sizeof err)};
    ck_assert_msg(models[0] && models[1], "%s", err);
    static char expect[2][6][512];
    for (int m = 0; m < 2; m++) { /* references on a lone thread */
        mt_state *st = mt_state_create(models[m], 1, err, sizeof err);
        ck_assert_ptr_nonnull(st);
        mt_search_options o;
        mt_search_options_default(models[m], &o);
        o.beam_size = 4;
        const int32_t *src[6];
        for (int i = 0; i < 6; i++)
            src[i] = sources[i];
        mt_result res[6];
        ck_assert_int_eq(mt_translate_ids(st, &o, 6, src, source_lens, res), 0);
        for (int i = 0; i < 6; i++)
            ids_text(&res[i].hyps[0], expect[m][i], sizeof expect[m][i]);
        mt_state_free(st);
    }
    ck_assert_str_ne(expect[0][2], expect[1][2]); /* the two models really differ */
    mt_pool *pool = mt_pool_create(3);
    ck_assert_ptr_nonnull(pool);
    pool_driver drivers[4];
    pthread_t threads[4];
    for (int t = 0; t < 4; t++) {
        drivers[t] = (pool_driver){.model = models[t % 2], .rounds = 8};
        drivers[t].state = mt_state_create_in(models[t % 2], pool, 3, err, sizeof err);
        ck_assert_ptr_nonnull(drivers[t].state);
        for (int i = 0; i < 6; i++)
            drivers[t].expect[i] = expect[t % 2][i];
    }
    for (int t = 0; t < 4; t++)
        ck_assert_int_eq(pthread_create(&threads[t], NULL, drive_shared_pool, &drivers[t]), 0);
    for (int t = 0; t < 4; t++) {
        pthread_join(threads[t], NULL);
        ck_assert_int_eq(drivers[t].failures, 0);
        mt_state_free(drivers[t].state);
    }
    mt_pool_free(pool);
    mt_model_free(models[0]);
    mt_model_free(models[1]);
}
END_TEST

START_TEST(n_best_is_sorted_and_within_limits)
{
    fixture fx = open_model("nbest", 1);
    mt_search_options o;
    mt_search_options_default(fx.model, &o);
    o.beam_size = 5;
    o.n_best = 5;
    o.max_length = 6;
    const int32_t *src[6];
    for (int i = 0; i < 6; i++)
        src[i] = sources[i];
    mt_result r[6];
    ck_assert_int_eq(mt_translate_ids(fx.state, &o, 6, src, source_lens, r), 0);
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(r[i].status, MT_OK);
        ck_assert_int_eq(r[i].n_hyps, 5);
        for (int k = 0; k < r[i].n_hyps; k++) {
            ck_assert_int_le(r[i].hyps[k].length, 5); /* max_length counts the eos */
            if (k)
                ck_assert_float_le(r[i].hyps[k].score, r[i].hyps[k - 1].score);
            for (int t = 0; t < r[i].hyps[k].length; t++) {
                ck_assert_int_ne(r[i].hyps[k].ids[t], 39); /* pad never produced */
                ck_assert_int_ne(r[i].hyps[k].ids[t], 0);  /* eos only at the end (not stored) */
            }
        }
    }
    close_model(&fx);
}
END_TEST

START_TEST(greedy_equals_beam_one_argmax_path)
{
    fixture fx = open_model("greedy", 1);
    mt_search_options o;
    mt_search_options_default(fx.model, &o);
    o.beam_size = 1;
    const int32_t *src = sources[2];
    mt_result r;
    ck_assert_int_eq(mt_translate_ids(fx.state, &o, 1, &src, &source_lens[2], &r), 0);
    ck_assert_int_eq(r.n_hyps, 1);
    /* Re-derive the greedy path from full-prefix logits: each token must be the argmax. */
    int len = r.hyps[0].length;
    int32_t prefix[32] = {39};
    for (int t = 0; t < len; t++)
        prefix[t + 1] = r.hyps[0].ids[t];
    float *logits = malloc(sizeof(float) * 40 * (size_t)(len + 1));
    ck_assert_int_eq(mt_decoder_logits(fx.state, src, source_lens[2], prefix, len + 1, logits), 0);
    double total = 0.0;
    for (int t = 0; t <= len; t++) {
        float *row = logits + t * 40;
        double mx = row[0], sum = 0.0; /* the engine normalises over the whole vocabulary, pad included */
        for (int v = 1; v < 40; v++)
            mx = row[v] > mx ? row[v] : mx;
        for (int v = 0; v < 40; v++)
            sum += exp(row[v] - mx);
        row[39] = -INFINITY;
        int best = 0;
        for (int v = 1; v < 40; v++)
            best = row[v] > row[best] ? v : best;
        int expect = t < len ? r.hyps[0].ids[t] : 0;
        if (t < len || len + 1 < o.max_length) /* at the last allowed step eos is forced */
            ck_assert_int_eq(best, expect);
        total += row[expect] - mx - log(sum);
    }
    ck_assert_float_eq_tol(r.hyps[0].score, (float)(total / (len + 1)), 1e-4f); /* alpha 1 */
    free(logits);
    close_model(&fx);
}
END_TEST

static int cancel_second(void *user, int index)
{
    (*(int *)user)++;
    return index == 1;
}

START_TEST(cancelled_sentence_leaves_the_batch)
{
    fixture fx = open_model("cancel", 1);
    mt_search_options o;
    mt_search_options_default(fx.model, &o);
    int calls = 0;
    o.cancel = cancel_second;
    o.cancel_user = &calls;
    const int32_t *src[3] = {sources[0], sources[1], sources[2]};
    mt_result r[3];
    ck_assert_int_eq(mt_translate_ids(fx.state, &o, 3, src, source_lens, r), 0);
    ck_assert_int_gt(calls, 0);
    ck_assert_int_eq(r[0].status, MT_OK);
    ck_assert_int_eq(r[1].status, MT_ERR_CANCELLED);
    ck_assert_int_eq(r[1].n_hyps, 0);
    ck_assert_int_eq(r[2].status, MT_OK);
    ck_assert_int_ge(r[2].n_hyps, 1);
    close_model(&fx);
}
END_TEST

START_TEST(invalid_inputs_are_errors)
{
    fixture fx = open_model("invalid", 1);
    mt_search_options o;
    mt_search_options_default(fx.model, &o);
    mt_result r;
    int32_t bad[] = {5, 400, 0};
    const int32_t *src = bad;
    int len = 3;
    ck_assert_int_eq(mt_translate_ids(fx.state, &o, 1, &src, &len, &r), MT_ERR_INVALID);
    ASSERT_CONTAINS(mt_state_error(fx.state), "outside the vocabulary");
    len = 0;
    ck_assert_int_eq(mt_translate_ids(fx.state, &o, 1, &src, &len, &r), MT_ERR_INVALID);
    len = 100; /* max_position_embeddings is 64 */
    ck_assert_int_eq(mt_translate_ids(fx.state, &o, 1, &src, &len, &r), MT_ERR_INVALID);
    o.n_best = o.beam_size + 1;
    len = 3;
    bad[1] = 6;
    ck_assert_int_eq(mt_translate_ids(fx.state, &o, 1, &src, &len, &r), MT_ERR_INVALID);
    ASSERT_CONTAINS(mt_state_error(fx.state), "n_best");
    close_model(&fx);
}
END_TEST

START_TEST(max_length_factor_limits_relative_to_source)
{
    fixture fx = open_model("factor", 1);
    mt_search_options o;
    mt_search_options_default(fx.model, &o);
    o.max_length = 60;
    o.max_length_factor = 0.5f; /* 1-token source: floor(0.5) + 10 = 10 steps */
    const int32_t *src = sources[5];
    mt_result r;
    ck_assert_int_eq(mt_translate_ids(fx.state, &o, 1, &src, &source_lens[5], &r), 0);
    ck_assert_int_le(r.hyps[0].length, 9);
    close_model(&fx);
}
END_TEST

/* ---- safetensors parser on hand-made buffers ---- */

static mt_safetensors *parse_text(const char *header, size_t data_len, char *err, size_t errlen)
{
    static unsigned char buf[4096];
    uint64_t hl = strlen(header);
    memcpy(buf, &hl, 8);
    memcpy(buf + 8, header, hl);
    memset(buf + 8 + hl, 0, data_len);
    return mt_safetensors_parse(buf, 8 + hl + data_len, err, errlen);
}

START_TEST(safetensors_parser_cases)
{
    char err[512];
    mt_safetensors *st = parse_text("{\"a\":{\"dtype\":\"BF16\",\"shape\":[2,3],\"data_offsets\":[0,12]}}", 12, err,
                                    sizeof err);
    ck_assert_msg(st != NULL, "%s", err);
    ck_assert_int_eq(mt_safetensors_count(st), 1);
    ck_assert_int_eq(mt_safetensors_find(st, "a")->numel, 6);
    mt_safetensors_close(st);
    ck_assert_ptr_null(parse_text("{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, err, sizeof err));
    ASSERT_CONTAINS(err, "shape[0]");
    ck_assert_ptr_null(parse_text("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,0]}}", 8, err, sizeof err));
    ASSERT_CONTAINS(err, "increasing");
    ck_assert_ptr_null(parse_text("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 8, err, sizeof err));
    ASSERT_CONTAINS(err, "needs 8");
    ck_assert_ptr_null(parse_text("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 8, err, sizeof err));
    ASSERT_CONTAINS(err, "data_offsets");
    ck_assert_ptr_null(parse_text("{\"a\":1}", 0, err, sizeof err));
    ASSERT_CONTAINS(err, "not a JSON object");
    ck_assert_ptr_null(parse_text("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                                  "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, err, sizeof err));
    ASSERT_CONTAINS(err, "duplicate");
    /* 2^32 * 2^32 wraps to 0 in 64 bits: must be refused for its shape, not read as empty */
    ck_assert_ptr_null(parse_text("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4],"
                                  "\"data_offsets\":[0,0]}}", 0, err, sizeof err));
    ASSERT_CONTAINS(err, "more than 2^40 elements");
}
END_TEST

START_TEST(f16_and_bf16_conversion)
{
    unsigned char raw[8] = {0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00, 0x00, 0x7c}; /* 1, -2, min subnormal, inf */
    mt_tensor_view t = {.name = "x", .dtype = MT_DTYPE_F16, .ndim = 1, .shape = {4}, .numel = 4, .data = raw};
    float out[4];
    mt_tensor_to_f32(&t, out);
    ck_assert_float_eq(out[0], 1.0f);
    ck_assert_float_eq(out[1], -2.0f);
    ck_assert_float_eq_tol(out[2], 5.9604645e-8f, 1e-12f);
    ck_assert(isinf(out[3]));
    unsigned char braw[4] = {0x80, 0x3f, 0x40, 0xc0}; /* bf16 1.0, -3.0 */
    mt_tensor_view b = {.name = "y", .dtype = MT_DTYPE_BF16, .ndim = 1, .shape = {2}, .numel = 2, .data = braw};
    mt_tensor_to_f32(&b, out);
    ck_assert_float_eq(out[0], 1.0f);
    ck_assert_float_eq(out[1], -3.0f);
}
END_TEST

/* ---- kernels: every path against the scalar one, odd sizes, unaligned starts, guards ---- */

static const int kernel_sizes[] = {1, 2, 7, 15, 16, 17, 31, 33, 64, 100, 1001};
enum { GUARD = 8 };
static const float guard_value = 12345.5f;

/* n floats at an odd (unaligned) offset of a buffer with guard values either side. */
static float *guarded(float *buf, int n, unsigned seed)
{
    float *x = buf + GUARD + 1;
    for (int i = 0; i < GUARD + 1; i++)
        buf[i] = x[n + i] = guard_value;
    srand(seed);
    for (int i = 0; i < n; i++)
        x[i] = (float)rand() / (float)RAND_MAX * 8.0f - 6.0f;
    return x;
}

static void check_guards(const float *buf, int n)
{
    const float *x = buf + GUARD + 1;
    for (int i = 0; i < GUARD + 1; i++)
        ck_assert_msg(buf[i] == guard_value && x[n + i] == guard_value, "write outside [0, %d)", n);
}

static void assert_close(float got, float want, float rel, const char *what, int n)
{
    float tol = rel * (fabsf(want) > 1.0f ? fabsf(want) : 1.0f);
    ck_assert_msg(fabsf(got - want) <= tol, "%s n=%d: %.9g vs scalar %.9g", what, n, got, want);
}

/* Compares path isa with the scalar table on every size (the scalar table against itself
 * still checks guards and the exp polynomial against libm). */
static void check_kernels_against_scalar(int isa)
{
    const mt_kernels *ref = mt_kernels_get(MT_ISA_SCALAR), *k = mt_kernels_get(isa);
    ck_assert_ptr_nonnull(ref);
    if (!k)
        return;
    static float a[1001 + 2 * GUARD + 2], b[1001 + 2 * GUARD + 2], c[1001 + 2 * GUARD + 2];
    for (size_t si = 0; si < sizeof kernel_sizes / sizeof *kernel_sizes; si++) {
        int n = kernel_sizes[si];
        float *x = guarded(a, n, 1u + (unsigned)n), *y = guarded(b, n, 2u + (unsigned)n);
        ck_assert_float_eq(k->max(x, n), ref->max(x, n));
        float mx = ref->max(x, n);
        double want = 0.0;
        for (int i = 0; i < n; i++)
            want += exp((double)x[i] - mx);
        assert_close(k->exp_sum(x, n, mx), (float)want, 2e-6f, "exp_sum", n);
        assert_close(k->dot(x, y, n), ref->dot(x, y, n), 1e-5f, "dot", n);
        float *z = guarded(c, n, 1u + (unsigned)n);
        float sum = k->exp_store_sum(z, n, mx);
        assert_close(sum, (float)want, 2e-6f, "exp_store_sum", n);
        for (int i = 0; i < n; i++)
            assert_close(z[i], (float)exp((double)x[i] - mx), 2e-7f, "exp_store_sum element", n);
        check_guards(c, n);
        z = guarded(c, n, 3u);
        float w[1001];
        memcpy(w, z, sizeof(float) * (size_t)n);
        k->scale(z, n, 0.37f);
        ref->scale(w, n, 0.37f);
        ck_assert(memcmp(z, w, sizeof(float) * (size_t)n) == 0);
        check_guards(c, n);
        z = guarded(c, n, 4u);
        memcpy(w, z, sizeof(float) * (size_t)n);
        k->axpy(z, -1.25f, x, n);
        ref->axpy(w, -1.25f, x, n);
        for (int i = 0; i < n; i++)
            assert_close(z[i], w[i], 1e-6f, "axpy", n);
        check_guards(c, n);
    }
}

START_TEST(kernels_match_scalar)
{
    for (int isa = 0; isa < MT_ISA_COUNT; isa++)
        check_kernels_against_scalar(isa);
}
END_TEST

/* bias + activation: rows with a stride wider than the columns (the column-split
 * products write such slices); relu and none must be bit-identical to the scalar path. */
START_TEST(bias_act_matches_scalar)
{
    const mt_kernels *ref = mt_kernels_get(MT_ISA_SCALAR);
    static float a[3 * 40 + 2 * GUARD + 2], b[3 * 40 + 2 * GUARD + 2], bias[40];
    for (int isa = 0; isa < MT_ISA_COUNT; isa++) {
        const mt_kernels *k = mt_kernels_get(isa);
        if (!k)
            continue;
        for (int act = 0; act <= MT_ACT_GELU_TANH + 1; act++)
            for (int cols = 1; cols <= 37; cols += 6) {
                int rows = 3, ld = 40, n = rows * ld;
                float *x = guarded(a, n, 7u), *y = guarded(b, n, 7u);
                for (int j = 0; j < cols; j++)
                    bias[j] = 0.1f * (float)(j % 7) - 0.3f;
                k->bias_act(x, rows, ld, cols, act % 2 ? bias : NULL, act);
                ref->bias_act(y, rows, ld, cols, act % 2 ? bias : NULL, act);
                ck_assert_msg(memcmp(x, y, sizeof(float) * (size_t)n) == 0, "%s act %d cols %d", k->name, act, cols);
                check_guards(a, n);
            }
    }
}
END_TEST

/* top-k over a row with masked (-inf) entries and many exact ties: the vector path must
 * return the very same candidates in the same order as the scalar scan, for every k. */
START_TEST(top_k_matches_scalar_with_ties)
{
    const mt_kernels *ref = mt_kernels_get(MT_ISA_SCALAR);
    static float a[1001 + 2 * GUARD + 2];
    for (int isa = 0; isa < MT_ISA_COUNT; isa++) {
        const mt_kernels *k = mt_kernels_get(isa);
        if (!k)
            continue;
        for (size_t si = 0; si < sizeof kernel_sizes / sizeof *kernel_sizes; si++) {
            int n = kernel_sizes[si];
            float *x = guarded(a, n, 11u + (unsigned)n);
            for (int i = 0; i < n; i++) {
                x[i] = (float)(int)(x[i] * 2.0f) * 0.5f; /* few distinct values: ties */
                if (i % 5 == 3)
                    x[i] = -INFINITY;
            }
            for (int kk = 0; kk <= 9; kk++) {
                mt_candidate got[9], want[9];
                int ng = k->top_k(x, n, 0.75f, -2.5f, kk, 4, got);
                int nw = ref->top_k(x, n, 0.75f, -2.5f, kk, 4, want);
                ck_assert_int_eq(ng, nw);
                for (int i = 0; i < nw; i++) {
                    ck_assert_msg(got[i].token == want[i].token && got[i].score == want[i].score && got[i].row == 4,
                                  "%s n=%d k=%d #%d: token %d vs %d", k->name, n, kk, i, got[i].token, want[i].token);
                    ck_assert(x[want[i].token] != -INFINITY);
                }
                if (kk && n >= kk + n / 5 + 1)
                    ck_assert_int_eq(nw, kk);
            }
            check_guards(a, n);
        }
    }
}
END_TEST

/* Run-time dispatch: the choice is always a path this CPU runs, and MT_KERNELS=scalar
 * forces the fallback (how the other tests exercise it end to end). */
START_TEST(kernel_choice_respects_cpu_and_override)
{
    unsetenv("MT_KERNELS");
    const mt_kernels *k = mt_kernels_select();
    ck_assert_ptr_nonnull(k);
    int found = 0;
    for (int isa = 0; isa < MT_ISA_COUNT; isa++)
        if (mt_kernels_get(isa) == k) {
            found = 1;
            ck_assert(mt_kernels_cpu_has(isa));
        }
    ck_assert(found);
    ck_assert_int_eq(mt_kernels_cpu_has(MT_ISA_AVX512), __builtin_cpu_supports("avx512f") &&
                                                            __builtin_cpu_supports("avx512bw") &&
                                                            __builtin_cpu_supports("avx512dq") &&
                                                            __builtin_cpu_supports("avx512vl"));
    if (mt_kernels_cpu_has(MT_ISA_AVX512))
        ck_assert_str_eq(k->name, "avx512");
    setenv("MT_KERNELS", "scalar", 1);
    ck_assert_str_eq(mt_kernels_select()->name, "scalar");
    setenv("MT_KERNELS", "avx512", 1);
    k = mt_kernels_select();
    ck_assert_str_eq(k->name, mt_kernels_cpu_has(MT_ISA_AVX512) ? "avx512" : "scalar");
    unsetenv("MT_KERNELS");
}
END_TEST

static Suite *model_suite(void)
{
    Suite *s = suite_create("model");
    TCase *load = tcase_create("load");
    tcase_add_checked_fixture(load, make_root, remove_root);
    tcase_add_test(load, loads_valid_model_and_reads_config);
    tcase_add_test(load, activation_names_and_default);
    tcase_add_test(load, generation_config_overrides_config);
    tcase_add_test(load, missing_directory_and_files);
    tcase_add_test(load, malformed_config_json);
    tcase_add_test(load, config_wrong_types_and_unsupported_settings);
    tcase_add_test(load, config_missing_key_and_bad_value);
    tcase_add_test(load, absurd_layer_count_is_named);
    tcase_add_test(load, compute_types_resolve_or_are_refused);
    tcase_add_test(load, missing_tensor_is_named);
    tcase_add_test(load, wrong_shape_is_named);
    tcase_add_test(load, unexpected_tensor_is_refused);
    tcase_add_test(load, broken_safetensors_files);
    tcase_add_test(load, f16_weights_load_close_to_f32);
    tcase_add_test(load, weights_are_read_only);
    suite_add_tcase(s, load);

    TCase *search = tcase_create("search");
    tcase_add_checked_fixture(search, make_root, remove_root);
    tcase_add_test(search, batch_and_thread_count_do_not_change_results);
    tcase_add_test(search, n_best_is_sorted_and_within_limits);
    tcase_add_test(search, shared_pool_serves_states_of_two_models_at_once);
    tcase_add_test(search, greedy_equals_beam_one_argmax_path);
    tcase_add_test(search, cancelled_sentence_leaves_the_batch);
    tcase_add_test(search, invalid_inputs_are_errors);
    tcase_add_test(search, max_length_factor_limits_relative_to_source);
    suite_add_tcase(s, search);

    TCase *kern = tcase_create("kernels");
    tcase_add_test(kern, kernels_match_scalar);
    tcase_add_test(kern, bias_act_matches_scalar);
    tcase_add_test(kern, top_k_matches_scalar_with_ties);
    tcase_add_test(kern, kernel_choice_respects_cpu_and_override);
    suite_add_tcase(s, kern);

    TCase *st = tcase_create("safetensors");
    tcase_add_test(st, safetensors_parser_cases);
    tcase_add_test(st, f16_and_bf16_conversion);
    suite_add_tcase(s, st);
    return s;
}

int main(void)
{
    mt_process_setup(NULL);
    return mt_check_run(srunner_create(model_suite()));
}
