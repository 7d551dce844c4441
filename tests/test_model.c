/* test_model.c: the engine's loading, validation and search invariants.
 * Numerics against PyTorch are in test_engine_vs_reference.py; here each test builds a
 * tiny model directory (tiny_model.h), possibly broken on purpose. */
#include <check.h>
#include <cpuid.h>
#include <math.h>
#include <signal.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "../model/internal.h"
#include "../model/packed.h"
#include "../model/pool.h"
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
 * are refused with a message; the library reads no MT_COMPUTE_TYPE or MT_CPU_HIDE of its own
 * (programs pass them in mt_model_options). */
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
    for (int want = MT_COMPUTE_DEFAULT; want <= MT_COMPUTE_AUTO; want++) {
        mt_model_options_default(&o);
        o.compute_type = (mt_compute_type)want;
        err[0] = 0;
        mt_model *m = mt_model_load_ex(dir, &o, err, sizeof err);
        int packed = want == MT_COMPUTE_BFLOAT16 || want == MT_COMPUTE_INT8;
        if (packed && !mt_packed_available((mt_compute_type)want, NULL, NULL, 0, NULL, 0)) {
            ck_assert_ptr_null(m);
            ASSERT_CONTAINS(err, mt_compute_type_name((mt_compute_type)want));
            ASSERT_CONTAINS(err, "not available on this CPU");
        } else {
            ck_assert_msg(m != NULL, "%s: %s", names[want], err);
            mt_compute_type got = mt_model_compute_type(m);
            ck_assert_int_eq((int)got, packed ? want : want == MT_COMPUTE_AUTO ? (int)got : (int)MT_COMPUTE_FLOAT32);
            ck_assert(got != MT_COMPUTE_DEFAULT && got != MT_COMPUTE_AUTO);
            ASSERT_CONTAINS(mt_model_compute_detail(m), mt_compute_type_name(got));
            if (want == MT_COMPUTE_AUTO)
                ASSERT_CONTAINS(mt_model_compute_detail(m), "auto");
            mt_model_free(m);
        }
    }
    /* an explicit type this CPU lacks (cpu_hide) is refused by name */
    mt_model_options_default(&o);
    o.compute_type = MT_COMPUTE_INT8;
    o.cpu_hide = "vnni,amx";
    ck_assert_ptr_null(mt_model_load_ex(dir, &o, err, sizeof err));
    ASSERT_CONTAINS(err, "compute type int8 is not available on this CPU");
    o.cpu_hide = "vnni,sse";
    ck_assert_ptr_null(mt_model_load_ex(dir, &o, err, sizeof err));
    ASSERT_CONTAINS(err, "cpu_hide 'vnni,sse'");
    mt_model_options_default(&o);
    o.kernels = "avx1024";
    ck_assert_ptr_null(mt_model_load_ex(dir, &o, err, sizeof err));
    ASSERT_CONTAINS(err, "kernels 'avx1024'");
    /* the variables are the programs' to read: the library ignores them */
    setenv("MT_COMPUTE_TYPE", "fp8", 1);
    setenv("MT_KERNELS", "avx1024", 1);
    setenv("MT_CPU_HIDE", "sse", 1);
    mt_model *m = mt_model_load(dir, err, sizeof err);
    ck_assert_msg(m != NULL, "%s", err);
    ck_assert_int_eq(mt_model_compute_type(m), MT_COMPUTE_FLOAT32);
    mt_model_free(m);
    unsetenv("MT_COMPUTE_TYPE");
    unsetenv("MT_KERNELS");
    unsetenv("MT_CPU_HIDE");
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

/* A batch split across threads (one part per thread, each on a one-thread state) gives
 * what the unsplit batch gives on one thread and on two: the same hypotheses, scores and
 * token scores, target prefixes and samples still those of each sentence's own index, and
 * a cancelled sentence is the one asked for, for odd part sizes and three parts too. */
static int cancel_fourth(void *user, int index)
{
    (void)user;
    return index == 3;
}

/* Per sentence of a search: its status and hypotheses' ids as text (compared exactly), and
 * their scores and token scores in order (compared within float rounding: with other row
 * counts the products may take other kernels, e.g. the few-rows kernel on AVX2). */
typedef struct {
    char text[12][2048];
    float num[12][256];
    int n_num[12];
} search_out;

static void search_all(int threads, const char *split_min, const mt_search_options *o, int n,
                       search_out *out)
{
    tiny_model_spec s = tiny_model_default();
    char err[512];
    mt_model_options mo;
    mt_model_options_default(&mo);
    mo.split_min = atoi(split_min);
    mt_model *m = mt_model_load_ex(write_model("split", &s), &mo, err, sizeof err);
    ck_assert_msg(m != NULL, "%s", err);
    mt_state *st = mt_state_create(m, threads, err, sizeof err);
    ck_assert_ptr_nonnull(st);
    const int32_t *src[12];
    int lens[12];
    for (int i = 0; i < n; i++)
        src[i] = sources[i % 6], lens[i] = source_lens[i % 6];
    mt_result r[12];
    ck_assert_int_eq(mt_translate_ids(st, o, n, src, lens, r), 0);
    for (int i = 0; i < n; i++) {
        size_t at = (size_t)snprintf(out->text[i], 2048, "status %d:", r[i].status);
        out->n_num[i] = 0;
        for (int k = 0; k < r[i].n_hyps; k++) {
            char ids[512];
            ids_text(&r[i].hyps[k], ids, sizeof ids);
            at += (size_t)snprintf(out->text[i] + at, 2048 - at, " [%s]", ids);
            out->num[i][out->n_num[i]++] = r[i].hyps[k].score;
            for (int t = 0; r[i].hyps[k].token_scores && t <= r[i].hyps[k].length && out->n_num[i] < 256; t++)
                out->num[i][out->n_num[i]++] = r[i].hyps[k].token_scores[t];
        }
    }
    mt_state_free(st);
    mt_model_free(m);
}

START_TEST(split_batch_matches_unsplit)
{
    static search_out one, whole, split;
    static const int32_t prefix_a[] = {7, 8}, prefix_b[] = {11};
    const int32_t *prefixes[12] = {prefix_a, NULL, prefix_b, NULL, NULL, prefix_a, NULL, prefix_b};
    int prefix_lens[12] = {2, 0, 1, 0, 0, 2, 0, 1};
    for (int setting = 0; setting < 4; setting++) {
        tiny_model_spec s = tiny_model_default();
        char err[512];
        mt_model *m = mt_model_load(write_model("split", &s), err, sizeof err);
        ck_assert_msg(m != NULL, "%s", err);
        mt_search_options o;
        mt_search_options_default(m, &o);
        mt_model_free(m);
        int n = 7, threads = 2;
        if (setting == 0) { /* beam 4, 2-best, scores, prefixes, 7 sentences: parts of 4 and 3 */
            o.beam_size = 4, o.n_best = 2, o.return_scores = 1;
            o.target_prefix = prefixes, o.target_prefix_len = prefix_lens;
        } else if (setting == 1) { /* sampling by batch position: the index travels with the part */
            o.beam_size = 1, o.sampling_topk = 0, o.seed = 1234, o.return_scores = 1;
        } else if (setting == 2) { /* the fourth sentence cancelled, whichever part holds it */
            o.beam_size = 3, o.cancel = cancel_fourth;
        } else { /* three threads, 12 sentences: three parts */
            o.beam_size = 4, n = 12, threads = 3;
        }
        search_all(1, "1", &o, n, &one);
        search_all(threads, "0", &o, n, &whole);
        search_all(threads, "1", &o, n, &split);
        for (int i = 0; i < n; i++) {
            ck_assert_str_eq(one.text[i], whole.text[i]);
            ck_assert_str_eq(one.text[i], split.text[i]);
            ck_assert_int_eq(one.n_num[i], whole.n_num[i]);
            ck_assert_int_eq(one.n_num[i], split.n_num[i]);
            for (int v = 0; v < one.n_num[i]; v++) {
                ck_assert_float_eq_tol(one.num[i][v], whole.num[i][v], 1e-4f);
                ck_assert_float_eq_tol(one.num[i][v], split.num[i][v], 1e-4f);
            }
            ck_assert_msg(strncmp(split.text[i], setting == 2 && i == 3 ? "status -3:" : "status 0: [", 10) == 0,
                          "setting %d sentence %d: %s", setting, i, split.text[i]);
        }
    }
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
    for (int t = 0; t < 4; t++) { /* two states split their batches, two split their products */
        drivers[t] = (pool_driver){.model = models[t % 2], .rounds = 8};
        drivers[t].state = mt_state_create_in(models[t % 2], pool, 3, err, sizeof err);
        if (drivers[t].state)
            drivers[t].state->split_min = t < 2 ? 1 : 0;
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

/* A trimmed state frees its scratch (only beyond `keep`) and searches as before. */
START_TEST(trimmed_state_searches_the_same)
{
    fixture f = open_model("trim", 2);
    mt_search_options o;
    mt_search_options_default(f.model, &o);
    o.beam_size = 4;
    const int32_t *src[6];
    for (int i = 0; i < 6; i++)
        src[i] = sources[i];
    mt_result res[6];
    char before[6][512], after[512];
    ck_assert_int_eq(mt_translate_ids(f.state, &o, 6, src, source_lens, res), 0);
    for (int i = 0; i < 6; i++)
        ids_text(&res[i].hyps[0], before[i], sizeof before[i]);
    ck_assert_uint_eq(mt_state_trim(f.state, (size_t)-1), 0); /* holds less than that */
    ck_assert_uint_gt(mt_state_trim(f.state, 0), 0);
    ck_assert_uint_eq(mt_state_trim(f.state, 0), 0);           /* nothing left */
    ck_assert_int_eq(mt_translate_ids(f.state, &o, 6, src, source_lens, res), 0);
    for (int i = 0; i < 6; i++) {
        ids_text(&res[i].hyps[0], after, sizeof after);
        ck_assert_str_eq(after, before[i]);
    }
    close_model(&f);
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
    /* A batch split across threads names a bad sentence by its index in the batch, not in
     * its thread's share (sentence 3 is the second of share 1). */
    fixture two = open_model("invalid2", 2);
    mt_search_options_default(two.model, &o);
    const int32_t *batch[4] = {sources[0], sources[1], sources[2], bad};
    int lens[4] = {source_lens[0], source_lens[1], source_lens[2], 3};
    mt_result rs[4];
    bad[1] = 400;
    ck_assert_int_eq(mt_translate_ids(two.state, &o, 4, batch, lens, rs), MT_ERR_INVALID);
    ASSERT_CONTAINS(mt_state_error(two.state), "sentence 3: token id 400");
    lens[3] = 0;
    ck_assert_int_eq(mt_translate_ids(two.state, &o, 4, batch, lens, rs), MT_ERR_INVALID);
    ASSERT_CONTAINS(mt_state_error(two.state), "sentence 3 has 0 source tokens");
    close_model(&two);
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
    /* I8: one byte per element, so 6 elements need 6 bytes, not 12 */
    st = parse_text("{\"a\":{\"dtype\":\"I8\",\"shape\":[2,3],\"data_offsets\":[0,6]}}", 6, err, sizeof err);
    ck_assert_msg(st != NULL, "%s", err);
    ck_assert_int_eq(mt_safetensors_find(st, "a")->dtype, MT_DTYPE_I8);
    mt_safetensors_close(st);
    ck_assert_ptr_null(parse_text("{\"a\":{\"dtype\":\"I8\",\"shape\":[2,3],\"data_offsets\":[0,12]}}", 12, err,
                                  sizeof err));
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

/* A released tensor (its pages handed back to the page cache) reads the same again, and
 * releasing a tensor does not touch its neighbours' bytes. */
START_TEST(released_tensors_read_the_same)
{
    tiny_model_spec s = tiny_model_default();
    s.vocab = 3000; /* a shared embedding of several pages */
    s.pad = 2999;
    const char *dir = write_model("release", &s);
    char path[600], err[512];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    mt_safetensors *st = mt_safetensors_open(path, err, sizeof err);
    ck_assert_msg(st != NULL, "%s", err);
    int n = mt_safetensors_count(st);
    float **before = calloc((size_t)n, sizeof *before);
    for (int i = 0; i < n; i++) {
        const mt_tensor_view *t = mt_safetensors_at(st, i);
        before[i] = malloc(sizeof(float) * (size_t)(t->numel ? t->numel : 1));
        mt_tensor_to_f32(t, before[i]);
    }
    for (int i = 0; i < n; i += 2) /* every other tensor: neighbours stay mapped */
        mt_safetensors_release(st, mt_safetensors_at(st, i));
    for (int i = 0; i < n; i++) {
        const mt_tensor_view *t = mt_safetensors_at(st, i);
        float *again = malloc(sizeof(float) * (size_t)(t->numel ? t->numel : 1));
        mt_tensor_to_f32(t, again);
        ck_assert_msg(memcmp(again, before[i], sizeof(float) * (size_t)t->numel) == 0, "%s changed", t->name);
        free(again);
        free(before[i]);
    }
    free(before);
    mt_safetensors_close(st);
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
    /* I8 is widened as is; the loader applies the row scales */
    const int8_t qraw[3] = {-127, 0, 127};
    mt_tensor_view q = {.name = "q", .dtype = MT_DTYPE_I8, .ndim = 1, .shape = {3}, .numel = 3, .data = qraw};
    mt_tensor_to_f32(&q, out);
    ck_assert_float_eq(out[0], -127.0f);
    ck_assert_float_eq(out[1], 0.0f);
    ck_assert_float_eq(out[2], 127.0f);
    ck_assert_uint_eq(mt_dtype_size(MT_DTYPE_I8), 1);
    ck_assert_uint_eq(mt_dtype_size(MT_DTYPE_BF16), 2);
    ck_assert_uint_eq(mt_dtype_size(MT_DTYPE_F32), 4);
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

static float det_value(unsigned *state, float scale)
{
    *state = *state * 1664525u + 1013904223u;
    return ((float)(int)((*state >> 9) % 2001u) - 1000.0f) * scale;
}

/* Attention's gathered rows: q against n keys anywhere in memory (unaligned, in any
 * order, some repeated) and the weighted sum of n value rows, for head sizes with tails,
 * beyond the 64 floats kept in registers, and n across the 16-key groups. */
START_TEST(attention_rows_match_double)
{
    static const int lens[] = {1, 7, 16, 33, 64, 100}, counts[] = {1, 5, 16, 17, 40};
    enum { POOL = 50 * 101 + 1 };
    static float pool[POOL], q[101], out[101 + GUARD], w[40], scores[40 + GUARD];
    unsigned seed = 5u;
    for (int i = 0; i < POOL; i++)
        pool[i] = det_value(&seed, 1e-3f);
    for (int i = 0; i < 101; i++)
        q[i] = det_value(&seed, 2e-3f);
    for (int isa = 0; isa < MT_ISA_COUNT; isa++) {
        const mt_kernels *k = mt_kernels_get(isa);
        if (!k)
            continue;
        for (size_t li = 0; li < sizeof lens / sizeof *lens; li++)
            for (size_t ci = 0; ci < sizeof counts / sizeof *counts; ci++) {
                int len = lens[li], n = counts[ci];
                const float *rows[40];
                for (int i = 0; i < n; i++) {
                    rows[i] = pool + 1 + (size_t)((i * 37) % 49) * 101 + (size_t)(i % 3); /* unaligned, repeats */
                    w[i] = det_value(&seed, 1e-3f);
                }
                for (int i = 0; i < 40 + GUARD; i++)
                    scores[i] = guard_value;
                for (int i = 0; i < 101 + GUARD; i++)
                    out[i] = guard_value;
                k->dots(q, rows, n, len, scores);
                k->weighted_rows(w, rows, n, len, out);
                for (int i = 0; i < n; i++) {
                    double want = 0.0, mag = 0.0;
                    for (int c = 0; c < len; c++) {
                        want += (double)q[c] * rows[i][c];
                        mag += fabs((double)q[c] * rows[i][c]);
                    }
                    ck_assert_msg(fabs(scores[i] - want) <= 1e-6 * mag + 1e-12, "%s dots len %d n %d [%d]: %g vs %g",
                                  k->name, len, n, i, (double)scores[i], want);
                }
                for (int c = 0; c < len; c++) {
                    double want = 0.0, mag = 0.0;
                    for (int i = 0; i < n; i++) {
                        want += (double)w[i] * rows[i][c];
                        mag += fabs((double)w[i] * rows[i][c]);
                    }
                    ck_assert_msg(fabs(out[c] - want) <= 1e-6 * mag + 1e-12, "%s weighted_rows len %d n %d [%d]",
                                  k->name, len, n, c);
                }
                ck_assert_msg(scores[n] == guard_value && out[len] == guard_value, "%s wrote past the end", k->name);
            }
    }
}
END_TEST

/* residual + LayerNorm: every path within float rounding of a double-precision LayerNorm
 * on widths with tails (1 is all mean: the output is beta), rows left untouched outside d. */
START_TEST(add_norm_matches_double)
{
    static float xb[3 * 1001 + 2 * GUARD + 2], db[3 * 1001 + 2 * GUARD + 2], g[1001], be[1001];
    for (int isa = 0; isa < MT_ISA_COUNT; isa++) {
        const mt_kernels *k = mt_kernels_get(isa);
        if (!k)
            continue;
        for (size_t si = 0; si < sizeof kernel_sizes / sizeof *kernel_sizes; si++) {
            int d = kernel_sizes[si], rows = 3, n = rows * d;
            float *x = guarded(xb, n, 31u + (unsigned)d), *delta = guarded(db, n, 32u + (unsigned)d);
            float *orig = malloc(sizeof(float) * (size_t)n);
            memcpy(orig, x, sizeof(float) * (size_t)n);
            for (int j = 0; j < d; j++) {
                g[j] = 0.5f + 0.01f * (float)(j % 13);
                be[j] = 0.02f * (float)(j % 7) - 0.05f;
            }
            k->add_norm(x, delta, rows, d, g, be);
            for (int r = 0; r < rows; r++) {
                double mean = 0.0, var = 0.0;
                for (int j = 0; j < d; j++)
                    mean += (double)(orig[r * d + j] + delta[r * d + j]);
                mean /= d;
                for (int j = 0; j < d; j++) {
                    double c = (double)(orig[r * d + j] + delta[r * d + j]) - mean;
                    var += c * c;
                }
                for (int j = 0; j < d; j++) {
                    double want = ((double)(orig[r * d + j] + delta[r * d + j]) - mean) / sqrt(var / d + 1e-5) * g[j] + be[j];
                    assert_close(x[r * d + j], (float)want, 4e-6f, k->name, d);
                }
            }
            check_guards(xb, n);
            free(orig);
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

/* Few-row products against a double-precision sum, for every path: rows 1..MT_FEW_ROWS,
 * odd k and n (masked tails, the n % 4 outputs), an output stride wider than n, unaligned
 * inputs, and nothing written outside the n columns of each output row. */
START_TEST(gemm_few_rows_matches_double)
{
    static const int ks[] = {1, 7, 16, 17, 100, 256}, ns[] = {1, 3, 4, 5, 17, 64};
    enum { MAXK = 256, MAXN = 64, LDY = MAXN + 3 };
    static float xb[MT_FEW_ROWS * MAXK + 2 * GUARD + 2], wb[MAXN * MAXK + 2 * GUARD + 2],
        yb[MT_FEW_ROWS * LDY + 2 * GUARD + 2];
    for (int isa = 0; isa < MT_ISA_COUNT; isa++) {
        const mt_kernels *kern = mt_kernels_get(isa);
        if (!kern)
            continue;
        for (int m = 1; m <= MT_FEW_ROWS; m++)
            for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++)
                for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
                    int k = ks[ki], n = ns[ni];
                    float *x = guarded(xb, m * k, 21u + (unsigned)(m * k)), *w = guarded(wb, n * k, 22u + (unsigned)k);
                    float *y = guarded(yb, m * LDY, 23u);
                    float *untouched = malloc(sizeof(float) * (size_t)(m * LDY));
                    memcpy(untouched, y, sizeof(float) * (size_t)(m * LDY));
                    kern->gemm_few_rows(x, m, k, w, n, y, LDY);
                    for (int r = 0; r < m; r++)
                        for (int j = 0; j < LDY; j++) {
                            if (j >= n) {
                                ck_assert_msg(y[r * LDY + j] == untouched[r * LDY + j], "%s wrote column %d of %d",
                                              kern->name, j, n);
                                continue;
                            }
                            double want = 0.0, mag = 0.0;
                            for (int i = 0; i < k; i++) {
                                want += (double)x[r * k + i] * (double)w[j * k + i];
                                mag += fabs((double)x[r * k + i] * (double)w[j * k + i]);
                            }
                            ck_assert_msg(fabs(y[r * LDY + j] - want) <= 1e-6 * mag + 1e-6,
                                          "%s m=%d k=%d n=%d [%d][%d]: %.9g vs %.9g", kern->name, m, k, n, r, j,
                                          (double)y[r * LDY + j], want);
                        }
                    free(untouched);
                    check_guards(yb, m * LDY);
                }
    }
}
END_TEST

/* Run-time dispatch: the choice is always a path this CPU runs, and the cap "scalar"
 * (MT_KERNELS=scalar in the programs) forces the fallback (how the other tests exercise
 * it end to end); an unknown name is refused. */
START_TEST(kernel_choice_respects_cpu_and_override)
{
    const mt_kernels *k = mt_kernels_select(NULL);
    ck_assert_ptr_eq(mt_kernels_select("auto"), k);
    ck_assert_ptr_eq(mt_kernels_select(""), k);
    ck_assert_ptr_null(mt_kernels_select("sse2"));
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
    ck_assert_str_eq(mt_kernels_select("scalar")->name, "scalar");
    k = mt_kernels_select("avx512");
    ck_assert_str_eq(k->name, mt_kernels_cpu_has(MT_ISA_AVX512) ? "avx512"
                              : mt_kernels_cpu_has(MT_ISA_AVX2) ? "avx2" : "scalar");
    /* never above what is asked, even on an AVX-512 CPU */
    ck_assert_str_eq(mt_kernels_select("avx2")->name, mt_kernels_cpu_has(MT_ISA_AVX2) ? "avx2" : "scalar");
    ck_assert_int_eq(mt_kernels_cpu_has(MT_ISA_AVX2), __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
    ck_assert_ptr_null(mt_kernels_get(MT_ISA_COUNT));
}
END_TEST

/* ---- bfloat16 / int8 through oneDNN (packed.c) ---- */

/* 1 when `type` must be offered here: the CPU reports what it needs (and oneDNN is not
 * held below it). Then a refusal is a failure, not a skip. */
static int cpu_should_offer(mt_compute_type type)
{
    unsigned a, b, c, d;
    int vnni = 0, bf16 = 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        vnni = (c >> 11) & 1;
        if (__get_cpuid_count(7, 1, &a, &b, &c, &d))
            bf16 = (a >> 5) & 1;
    }
    /* AVX-512 VNNI / BF16 need AVX-512 itself (valgrind, for one, hides it) */
    return getenv("ONEDNN_MAX_CPU_ISA") == NULL &&
           __builtin_cpu_supports("avx512f") && (type == MT_COMPUTE_INT8 ? vnni : bf16);
}

/* The types this machine offers; a type its CPU should offer but oneDNN does not is a
 * failure (a silent fallback to gemm:jit or ref). */
static int offered_types(mt_compute_type *out)
{
    static const mt_compute_type all[] = {MT_COMPUTE_BFLOAT16, MT_COMPUTE_INT8};
    int n = 0;
    for (int i = 0; i < 2; i++) {
        char impl[64], why[256];
        int ok = mt_packed_available(all[i], NULL, impl, sizeof impl, why, sizeof why);
        ck_assert_msg(ok || !cpu_should_offer(all[i]), "%s refused on a CPU that has it: %s",
                      mt_compute_type_name(all[i]), why);
        if (ok)
            out[n++] = all[i];
        else
            fprintf(stderr, "packed tests: %s not offered here (%s)\n", mt_compute_type_name(all[i]), why);
    }
    return n;
}

static void assert_fast_impl(mt_compute_type type, const char *impl)
{
    ck_assert_msg(impl && !strncmp(impl, "brg", 3), "%s runs on '%s', not brgemm", mt_compute_type_name(type),
                  impl ? impl : "(null)");
    if (type == MT_COMPUTE_INT8)
        ck_assert_msg(strstr(impl, "vnni") || strstr(impl, "amx"), "int8 runs on '%s' (no VNNI: pairs saturate)",
                      impl);
}

/* act(x . w^T + b) against a double-precision reference on odd shapes: 1 row, 130 and
 * 257 rows (across the 128-row chunks), column blocks with a short tail, K = 7, 9, 33,
 * with and without bias + relu (and bias + gelu), 1 and 3 threads, scalar and AVX-512
 * epilogues. The bounds are what rounding the inputs can move the result by, plus float
 * accumulation: bfloat16 (8 significant bits) rounds each factor by at most 2^-8
 * relative, so |error| <= 2^-7 (1.01) sum |x_i w_i|; int8 rounds x_i by at most ax / 254 and w_i by aw / 254 (ax, aw: the
 * row's largest magnitudes), so |error| <= ax/254 sum |w_i| + aw/254 sum |x_i| + k ax aw
 * / 254^2. Every primitive used must be brgemm. */
START_TEST(packed_products_match_double_reference)
{
    mt_compute_type types[3];
    int n_types = offered_types(types);
    /* float32 packed (what float32 runs on with the AVX-512 kernels): float accumulation
     * only; oneDNN 2.6 has a float32 brgemm wherever AVX-512 is */
    char f32_why[256];
    if (mt_packed_available(MT_COMPUTE_FLOAT32, NULL, NULL, 0, f32_why, sizeof f32_why))
        types[n_types++] = MT_COMPUTE_FLOAT32;
    else
        ck_assert_msg(!__builtin_cpu_supports("avx512f") || getenv("ONEDNN_MAX_CPU_ISA"),
                      "float32 not packed on an AVX-512 CPU: %s", f32_why);
    if (!n_types)
        return;
    static const int rows_list[] = {1, 4, 130, 257}, k_list[] = {7, 9, 33}, n_list[] = {70, 300, 1100};
    char err[512];
    mt_pool *pools[2] = {mt_pool_create(0), mt_pool_create(2)};
    const int pool_threads[2] = {1, 3};
    ck_assert(pools[0] && pools[1]);
    for (int ti = 0; ti < n_types; ti++) {
        mt_compute_type t = types[ti];
        for (size_t ki = 0; ki < sizeof k_list / sizeof *k_list; ki++)
            for (size_t ni = 0; ni < sizeof n_list / sizeof *n_list; ni++) {
                int k = k_list[ki], n = n_list[ni];
                unsigned seed = 99u + (unsigned)(k * 1000 + n);
                float *w = malloc(sizeof *w * (size_t)n * (size_t)k), *b = malloc(sizeof *b * (size_t)n);
                for (int i = 0; i < n * k; i++)
                    w[i] = det_value(&seed, 1e-3f) * (1.0f + (float)(i / k % 5)); /* rows of different scales */
                for (int i = 0; i < n; i++)
                    b[i] = det_value(&seed, 2e-4f);
                mt_packed *p = mt_packed_create(t, w, n, k, err, sizeof err);
                ck_assert_msg(p != NULL, "%s %dx%d: %s", mt_compute_type_name(t), n, k, err);
                ck_assert(mt_packed_block_cols(p) % 64 == 0 || mt_packed_block_cols(p) == n);
                mt_packed_ctx *c = mt_packed_ctx_create(pool_threads[1], err, sizeof err);
                ck_assert_ptr_nonnull(c);
                for (size_t ri = 0; ri < sizeof rows_list / sizeof *rows_list; ri++) {
                    int m = rows_list[ri];
                    float *x = malloc(sizeof *x * (size_t)m * (size_t)k), *y = malloc(sizeof *y * (size_t)m * (size_t)n);
                    for (int i = 0; i < m * k; i++)
                        x[i] = det_value(&seed, 1e-3f) * (float)(1 + i / k % 3);
                    if (m > 1)
                        memset(x + (size_t)k, 0, sizeof *x * (size_t)k); /* an all-zero row */
                    for (int isa = 0; isa < MT_ISA_COUNT; isa++)
                        for (int pi = 0; pi < 2; pi++)
                            for (int act = 0; act < 3; act++) {
                                const mt_kernels *kern = mt_kernels_get(isa);
                                if (!kern)
                                    continue;
                                int a = act == 0 ? 0 : act == 1 ? MT_ACT_RELU + 1 : MT_ACT_GELU + 1;
                                const float *bias = act ? b : NULL;
                                for (int i = 0; i < m * n; i++)
                                    y[i] = NAN;
                                int bad = 0;
                                char msg[300] = "";
                                ck_assert_msg(!mt_packed_linear(c, pools[pi], pool_threads[pi], kern, p, x, m, bias, y, a, err, sizeof err),
                                              "%s", err);
                                for (int r = 0; r < m; r++)
                                    for (int j = 0; j < n; j++) {
                                        double sum = 0.0, mag = 0.0, ax = 0.0, aw = 0.0, sx = 0.0, sw = 0.0;
                                        for (int q = 0; q < k; q++) {
                                            double xv = x[(size_t)r * k + q], wv = w[(size_t)j * k + q];
                                            sum += xv * wv;
                                            mag += fabs(xv * wv);
                                            ax = fmax(ax, fabs(xv));
                                            aw = fmax(aw, fabs(wv));
                                            sx += fabs(xv);
                                            sw += fabs(wv);
                                        }
                                        double bound = t == MT_COMPUTE_INT8
                                                           ? 1.01 * (ax / 254 * sw + aw / 254 * sx + k * ax * aw / 254 / 254)
                                                       : t == MT_COMPUTE_BFLOAT16 ? 1.01 * mag / 128
                                                                                  : 0.0;
                                        bound += 1e-6 * (mag + 1.0);
                                        sum += bias ? bias[j] : 0.0;
                                        if (a)
                                            sum = mt_activation((float)sum, a);
                                        double got = y[(size_t)r * n + j];
                                        /* one assertion per product: Check reports each one */
                                        if (!(fabs(got - sum) <= bound) && !bad) {
                                            bad = 1;
                                            snprintf(msg, sizeof msg, "%s %s threads %d act %d: %dx%d by %dx%d at "
                                                     "(%d,%d): %g vs %g (bound %g)", mt_compute_type_name(t),
                                                     kern->name, pool_threads[pi], a, m, k, k, n, r, j,
                                                     got, sum, bound);
                                        }
                                    }
                                ck_assert_msg(!bad, "%s", msg);
                            }
                    free(x);
                    free(y);
                }
                static const int impl_rows[] = {1, 4, 7, 64, 128};
                for (size_t i = 0; i < sizeof impl_rows / sizeof *impl_rows; i++)
                    assert_fast_impl(t, mt_packed_impl(c, p, impl_rows[i], err, sizeof err));
                /* and every primitive the products above used (fused bias / relu included) */
                ck_assert_msg(mt_packed_slow_impl(c) == NULL, "%s %dx%d used '%s'", mt_compute_type_name(t), n, k,
                              mt_packed_slow_impl(c));
                mt_packed_ctx_free(c);
                mt_packed_free(p);
                free(w);
                free(b);
            }
    }
    mt_pool_free(pools[0]);
    mt_pool_free(pools[1]);
}
END_TEST

/* The AVX-512 conversion and epilogue give exactly the scalar results (same operations,
 * nearest-even rounding in both), on lengths with tails, ties, NaN and infinities. */
START_TEST(packed_kernels_match_scalar)
{
    const mt_packed_kernels *ref = &mt_packed_kernels_scalar, *v = mt_packed_kernels_for(mt_kernels_get(MT_ISA_AVX512));
    if (!mt_kernels_get(MT_ISA_AVX512))
        return; /* nothing to compare with */
    ck_assert_ptr_eq(v, &mt_packed_kernels_avx512);
    enum { N = 203 };
    static float x[N];
    static uint16_t h1[N + 8], h2[N + 8];
    static uint8_t q1[N + 8], q2[N + 8];
    unsigned seed = 5u;
    for (int len = 1; len <= N; len += 17) {
        for (int i = 0; i < len; i++)
            x[i] = det_value(&seed, 0.01f);
        x[0] = 1.0f + 1.0f / 256.0f;                   /* a bfloat16 tie: to even (1.0) */
        if (len > 3) {
            x[1] = 1.0f + 3.0f / 256.0f;               /* a tie rounding up */
            x[2] = NAN;
            x[3] = -INFINITY;
        }
        memset(h1, 0xAB, sizeof h1);
        memset(h2, 0xAB, sizeof h2);
        ref->to_bf16(x, h1, (size_t)len);
        v->to_bf16(x, h2, (size_t)len);
        ck_assert_msg(!memcmp(h1, h2, sizeof h1), "to_bf16 differs at length %d", len);
        ck_assert_int_eq(h1[0], 0x3f80);
        if (len > 3) {
            ck_assert_int_eq(h1[1], 0x3f82);
            ck_assert((h1[2] & 0x7f80) == 0x7f80 && (h1[2] & 0x7f) != 0);
            ck_assert_int_eq(h1[3], 0xff80);
            x[2] = 0.5f;
            x[3] = -0.75f;
        }
        ck_assert_int_eq(h1[len], 0xABAB);
        memset(q1, 0xCD, sizeof q1);
        memset(q2, 0xCD, sizeof q2);
        float s1 = ref->quant_u8(x, len, q1), s2 = v->quant_u8(x, len, q2);
        ck_assert(s1 == s2);
        ck_assert_msg(!memcmp(q1, q2, sizeof q1), "quant_u8 differs at length %d", len);
        ck_assert_int_eq(q1[len], 0xCD);
        for (int i = 0; i < len; i++) {
            ck_assert(q1[i] >= 1 && q1[i] <= 255);
            ck_assert(fabsf(((float)q1[i] - 128.0f) * s1 - x[i]) <= 0.5f * s1 * 1.0001f);
        }
    }
    float zero[5] = {0};
    ck_assert(ref->quant_u8(zero, 5, q1) == v->quant_u8(zero, 5, q2));
    ck_assert(q1[0] == 128 && q2[4] == 128);
    /* epilogues on a block narrower than the output's rows, with a tail */
    enum { R = 3, C = 37, LD = 40 };
    static int32_t acc[R * C];
    static float facc[R * C], y1[R * LD], y2[R * LD], ws[C], xs[R], b[C];
    static int32_t colsum[C];
    for (int i = 0; i < R * C; i++) {
        acc[i] = (int32_t)(det_value(&seed, 1.0f) * 300.0f);
        facc[i] = det_value(&seed, 0.01f);
    }
    for (int j = 0; j < C; j++) {
        ws[j] = 0.001f * (float)(j + 1);
        colsum[j] = (int32_t)det_value(&seed, 1.0f);
        b[j] = det_value(&seed, 0.001f);
    }
    for (int r = 0; r < R; r++)
        xs[r] = 0.01f * (float)(r + 1);
    for (int variant = 0; variant < 4; variant++) {
        const float *bias = variant & 1 ? b : NULL;
        int relu = variant >> 1;
        for (int i = 0; i < R * LD; i++)
            y1[i] = y2[i] = -7.0f;
        ref->epi_s32(acc, C, y1, LD, R, C, xs, ws, colsum, bias, relu);
        v->epi_s32(acc, C, y2, LD, R, C, xs, ws, colsum, bias, relu);
        ck_assert_msg(!memcmp(y1, y2, sizeof y1), "epi_s32 differs (variant %d)", variant);
        ck_assert(y1[C] == -7.0f); /* past the block's columns: untouched */
        ref->epi_f32(facc, C, y1, LD, R, C, bias, relu);
        v->epi_f32(facc, C, y2, LD, R, C, bias, relu);
        ck_assert_msg(!memcmp(y1, y2, sizeof y1), "epi_f32 differs (variant %d)", variant);
    }
}
END_TEST

/* Encoder output and the first decoder step's logits of a model loaded as bfloat16 /
 * int8 against the same model's float32 twin (the exact path). */
START_TEST(packed_model_matches_plain_twin)
{
    mt_compute_type types[2];
    int n_types = offered_types(types);
    tiny_model_spec s = tiny_model_default();
    s.d = 64;
    s.ffn = 130;
    s.vocab = 300;
    s.pad = 299;
    const char *dir = write_model("twin", &s);
    char err[512];
    mt_model_options o;
    mt_model_options_default(&o);
    o.compute_type = MT_COMPUTE_FLOAT32;
    mt_model *plain = mt_model_load_ex(dir, &o, err, sizeof err);
    ck_assert_msg(plain != NULL, "%s", err);
    for (int ti = 0; ti < n_types; ti++) {
        o.compute_type = types[ti];
        mt_model *pk = mt_model_load_ex(dir, &o, err, sizeof err);
        ck_assert_msg(pk != NULL, "%s", err);
        ck_assert_int_eq(mt_model_compute_type(pk), types[ti]);
        ASSERT_CONTAINS(mt_model_compute_detail(pk), "oneDNN");
        for (int threads = 1; threads <= 2; threads++) {
            mt_state *a = mt_state_create(plain, threads, err, sizeof err), *b = mt_state_create(pk, threads, err, sizeof err);
            ck_assert(a && b);
            const int32_t *src[6];
            for (int i = 0; i < 6; i++)
                src[i] = sources[i];
            float *ea, *eb;
            ck_assert_int_eq(mt_encode_batch(a, 6, src, source_lens, &ea), MT_OK);
            ck_assert_int_eq(mt_encode_batch(b, 6, src, source_lens, &eb), MT_OK);
            int total = 0;
            for (int i = 0; i < 6; i++)
                total += source_lens[i];
            /* relative RMS differences: a tiny random model amplifies rounding more than a
             * trained one (test_bundled_models.py holds the BLEU bounds on real models) */
            double tol = types[ti] == MT_COMPUTE_INT8 ? 0.2 : 0.1;
            double se = 0, sa = 0, mx = 0;
            for (int i = 0; i < total * s.d; i++) {
                se += (ea[i] - eb[i]) * (double)(ea[i] - eb[i]);
                sa += ea[i] * (double)ea[i];
                mx = fmax(mx, fabs(ea[i] - eb[i]));
            }
            ck_assert_msg(sqrt(se / sa) <= tol, "%s encoder output: relative RMS difference %g (max %g)",
                          mt_compute_type_name(types[ti]), sqrt(se / sa), mx);
            /* one decoder step from the start token over those sources */
            float *kva = malloc(sizeof(float) * (size_t)total * 2 * (size_t)s.layers * (size_t)s.d);
            float *kvb = malloc(sizeof(float) * (size_t)total * 2 * (size_t)s.layers * (size_t)s.d);
            mt_cross_kv(a, ea, total, kva);
            mt_cross_kv(b, eb, total, kvb);
            int32_t toks[6];
            int row_sent[6], hist[6], off[6], at = 0, max_len = 0;
            for (int i = 0; i < 6; i++) {
                toks[i] = s.pad; /* decoder_start defaults to pad */
                row_sent[i] = i;
                hist[i] = i;
                off[i] = at;
                at += source_lens[i];
                max_len = source_lens[i] > max_len ? source_lens[i] : max_len;
            }
            mt_decoder_input in = {.rows = 6, .step = 0, .tokens = toks, .row_sent = row_sent, .hist = hist,
                                   .hist_stride = 1, .slot_base = 0, .src_off = off, .src_len = source_lens,
                                   .max_src_len = max_len, .attn_layer = -1};
            float *la, *lb;
            in.cross_kv = kva;
            ck_assert_int_eq(mt_decoder_step(a, &in, &la), MT_OK);
            in.cross_kv = kvb;
            ck_assert_int_eq(mt_decoder_step(b, &in, &lb), MT_OK);
            double scale = 0.0;
            for (int i = 0; i < 6 * s.vocab; i++)
                scale = fmax(scale, fabs(la[i]));
            se = sa = mx = 0;
            for (int i = 0; i < 6 * s.vocab; i++) {
                se += (la[i] - lb[i]) * (double)(la[i] - lb[i]);
                sa += la[i] * (double)la[i];
                mx = fmax(mx, fabs(la[i] - lb[i]));
            }
            ck_assert_msg(sqrt(se / sa) <= tol && mx <= tol * scale, "%s logits: relative RMS difference %g, max %g "
                          "(max |logit| %g)", mt_compute_type_name(types[ti]), sqrt(se / sa), mx, scale);
            free(kva);
            free(kvb);
            /* and a whole search runs */
            mt_search_options so;
            mt_search_options_default(pk, &so);
            mt_result res[6];
            ck_assert_int_eq(mt_translate_ids(b, &so, 6, src, source_lens, res), MT_OK);
            for (int i = 0; i < 6; i++)
                ck_assert_int_eq(res[i].status, MT_OK);
            mt_state_free(a);
            mt_state_free(b);
        }
        mt_model_free(pk);
    }
    mt_model_free(plain);
}
END_TEST

/* auto never picks a type the CPU lacks: with VNNI, BF16 and AMX hidden it is float32;
 * with VNNI hidden it is not int8; explicit types the CPU lacks are refused by name. */
START_TEST(auto_never_picks_a_type_the_cpu_lacks)
{
    tiny_model_spec s = tiny_model_default();
    const char *dir = write_model("auto", &s);
    char err[512];
    mt_model_options o;
    mt_model_options_default(&o);
    static const char *const hide[] = {"vnni,bf16,amx", "vnni,amx", "bf16,amx"};
    for (int h = 0; h < 3; h++) {
        o.cpu_hide = hide[h];
        o.compute_type = MT_COMPUTE_AUTO;
        mt_model *m = mt_model_load_ex(dir, &o, err, sizeof err);
        ck_assert_msg(m != NULL, "%s", err);
        mt_compute_type got = mt_model_compute_type(m);
        ck_assert_msg(mt_packed_available(got, hide[h], NULL, 0, NULL, 0) || got == MT_COMPUTE_FLOAT32, "auto chose %s",
                      mt_compute_type_name(got));
        if (h == 0)
            ck_assert_int_eq(got, MT_COMPUTE_FLOAT32);
        if (h == 1)
            ck_assert_int_ne(got, MT_COMPUTE_INT8);
        if (h == 2)
            ck_assert_int_ne(got, MT_COMPUTE_BFLOAT16);
        mt_model_free(m);
        for (int t = MT_COMPUTE_BFLOAT16; t <= MT_COMPUTE_INT8; t++) {
            int lacks = t == MT_COMPUTE_INT8 ? h < 2 : h != 1;
            if (!lacks)
                continue;
            o.compute_type = (mt_compute_type)t;
            ck_assert_ptr_null(mt_model_load_ex(dir, &o, err, sizeof err));
            ASSERT_CONTAINS(err, "not available on this CPU");
        }
    }
}
END_TEST

/* A state of a model with packed weights has its oneDNN engine and streams from the
 * start: the hot product never creates them (and a state that cannot have them is
 * refused at creation, not at its first product). A plain float32 model's state has none. */
START_TEST(packed_context_is_made_with_the_state)
{
    tiny_model_spec s = tiny_model_default();
    const char *dir = write_model("ctx", &s);
    char err[512];
    mt_compute_type types[4];
    int n_types = offered_types(types);
    if (mt_packed_available(MT_COMPUTE_FLOAT32, NULL, NULL, 0, NULL, 0))
        types[n_types++] = MT_COMPUTE_FLOAT32;
    for (int ti = 0; ti < n_types; ti++) {
        mt_model_options o;
        mt_model_options_default(&o);
        o.compute_type = types[ti];
        mt_model *m = mt_model_load_ex(dir, &o, err, sizeof err);
        ck_assert_msg(m != NULL, "%s", err);
        for (int threads = 1; threads <= 3; threads += 2) {
            mt_state *st = mt_state_create(m, threads, err, sizeof err);
            ck_assert_msg(st != NULL, "%s", err);
            ck_assert_msg(m->n_packs == 0 || st->packed != NULL, "%s, %d threads: no oneDNN context before "
                          "the first product", mt_compute_type_name(types[ti]), threads);
            mt_state_free(st);
        }
        mt_model_free(m);
    }
    mt_model_options o;
    mt_model_options_default(&o);
    o.compute_type = MT_COMPUTE_FLOAT32;
    o.kernels = "scalar"; /* OpenBLAS: nothing packed, no context */
    mt_model *m = mt_model_load_ex(dir, &o, err, sizeof err);
    ck_assert_msg(m != NULL, "%s", err);
    mt_state *st = mt_state_create(m, 2, err, sizeof err);
    ck_assert_ptr_nonnull(st);
    ck_assert_int_eq(m->n_packs, 0);
    ck_assert_ptr_null(st->packed);
    mt_state_free(st);
    mt_model_free(m);
}
END_TEST

/* Run with ONEDNN_MAX_CPU_ISA=AVX512_CORE (meson test model-onednn-avx512-core): oneDNN
 * then has only gemm:jit for bfloat16 and int8 (whose u8 x s8 pairs saturate without
 * VNNI), so both are refused even though the CPU reports the features, and auto keeps
 * float32. */
START_TEST(onednn_fallback_is_refused)
{
    ck_assert_ptr_nonnull(getenv("ONEDNN_MAX_CPU_ISA"));
    for (int t = MT_COMPUTE_BFLOAT16; t <= MT_COMPUTE_INT8; t++) {
        char impl[64], why[256];
        ck_assert_int_eq(mt_packed_available((mt_compute_type)t, NULL, impl, sizeof impl, why, sizeof why), 0);
        fprintf(stderr, "%s with ONEDNN_MAX_CPU_ISA=%s: %s\n", mt_compute_type_name((mt_compute_type)t),
                getenv("ONEDNN_MAX_CPU_ISA"), why);
    }
    tiny_model_spec s = tiny_model_default();
    const char *dir = write_model("isa", &s);
    char err[512];
    mt_model_options o;
    mt_model_options_default(&o);
    o.compute_type = MT_COMPUTE_AUTO;
    mt_model *m = mt_model_load_ex(dir, &o, err, sizeof err);
    ck_assert_msg(m != NULL, "%s", err);
    ck_assert_int_eq(mt_model_compute_type(m), MT_COMPUTE_FLOAT32);
    mt_model_free(m);
    o.compute_type = MT_COMPUTE_INT8;
    ck_assert_ptr_null(mt_model_load_ex(dir, &o, err, sizeof err));
    ASSERT_CONTAINS(err, "not available on this CPU");
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
    tcase_add_test(search, split_batch_matches_unsplit);
    tcase_add_test(search, n_best_is_sorted_and_within_limits);
    tcase_add_test(search, trimmed_state_searches_the_same);
    tcase_add_test(search, shared_pool_serves_states_of_two_models_at_once);
    tcase_add_test(search, greedy_equals_beam_one_argmax_path);
    tcase_add_test(search, cancelled_sentence_leaves_the_batch);
    tcase_add_test(search, invalid_inputs_are_errors);
    tcase_add_test(search, max_length_factor_limits_relative_to_source);
    suite_add_tcase(s, search);

    TCase *kern = tcase_create("kernels");
    tcase_add_test(kern, kernels_match_scalar);
    tcase_add_test(kern, gemm_few_rows_matches_double);
    tcase_add_test(kern, add_norm_matches_double);
    tcase_add_test(kern, attention_rows_match_double);
    tcase_add_test(kern, bias_act_matches_scalar);
    tcase_add_test(kern, top_k_matches_scalar_with_ties);
    tcase_add_test(kern, kernel_choice_respects_cpu_and_override);
    suite_add_tcase(s, kern);

    TCase *st = tcase_create("safetensors");
    tcase_add_test(st, safetensors_parser_cases);
    tcase_add_test(st, f16_and_bf16_conversion);
    tcase_add_test(st, released_tensors_read_the_same);
    suite_add_tcase(s, st);

    TCase *pk = tcase_create("packed");
    tcase_add_checked_fixture(pk, make_root, remove_root);
    tcase_set_timeout(pk, 600);
    tcase_add_test(pk, packed_products_match_double_reference);
    tcase_add_test(pk, packed_kernels_match_scalar);
    tcase_add_test(pk, packed_model_matches_plain_twin);
    tcase_add_test(pk, auto_never_picks_a_type_the_cpu_lacks);
    tcase_add_test(pk, packed_context_is_made_with_the_state);
    suite_add_tcase(s, pk);
    /* only under a limited oneDNN (see onednn_fallback_is_refused) */
    if (getenv("ONEDNN_MAX_CPU_ISA")) {
        TCase *isa = tcase_create("onednn_isa");
        tcase_add_checked_fixture(isa, make_root, remove_root);
        tcase_add_test(isa, onednn_fallback_is_refused);
        suite_add_tcase(s, isa);
    }
    return s;
}

int main(void)
{
    mt_process_setup(NULL, NULL);
    return mt_check_run(srunner_create(model_suite()));
}
