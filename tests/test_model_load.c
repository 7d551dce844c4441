/* test_model_load.c: loading a model directory: config.json, the safetensors file and
 * its parser, validation with messages that name what is wrong, compute types, and the
 * read-only weights. Each test builds a tiny model directory (tiny_model.h), possibly
 * broken on purpose. Numerics against PyTorch are in test_engine_vs_reference.py. */
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
#include "model_fixtures.h"
#include "tiny_model.h"

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

static Suite *model_suite(void)
{
    Suite *s = suite_create("model-load");
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

    TCase *st = tcase_create("safetensors");
    tcase_add_test(st, safetensors_parser_cases);
    tcase_add_test(st, f16_and_bf16_conversion);
    tcase_add_test(st, released_tensors_read_the_same);
    suite_add_tcase(s, st);
    return s;
}

int main(void)
{
    mt_process_setup(NULL, NULL);
    return mt_check_run(srunner_create(model_suite()));
}
