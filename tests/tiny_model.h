/* tiny_model.h: writes small random MarianMT model directories for C tests, with knobs
 * to break them in specific ways. Header-only because only test programs use it. */
#ifndef MT_TINY_MODEL_H
#define MT_TINY_MODEL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture_dir.h"

typedef struct {
    int d, layers, heads, ffn, vocab;
    int eos, pad;
    unsigned seed;
    int f16;                 /* store weights as F16 */
    const char *skip_tensor; /* leave this tensor out */
    const char *bad_shape;   /* give this tensor one row too many */
    const char *extra_tensor;/* add an unexpected tensor */
    const char *config_extra;/* extra JSON members appended to config.json ("" or ",\"k\":v") */
} tiny_model_spec;

static tiny_model_spec tiny_model_default(void)
{
    tiny_model_spec s = {.d = 16, .layers = 2, .heads = 2, .ffn = 32, .vocab = 40, .eos = 0, .pad = 39, .seed = 7};
    return s;
}

static float tiny_rand(unsigned *state)
{
    *state = *state * 1103515245u + 12345u;
    return ((float)((*state >> 8) & 0xFFFF) / 65535.0f - 0.5f);
}

static uint16_t tiny_to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, exp = (x >> 23) & 0xff, man = x & 0x7fffff;
    if (exp < 113)
        return (uint16_t)sign; /* tiny values flush to zero: fine for tests */
    return (uint16_t)(sign | ((exp - 112) << 10) | (man >> 13));
}

typedef struct {
    char name[128];
    int rows, cols; /* cols 0: vector */
    float scale;
} tiny_tensor;

/* Lists the tensors of the spec's architecture. */
static int tiny_tensors(const tiny_model_spec *s, tiny_tensor *t)
{
    int n = 0;
#define T(r, c, sc, ...) (snprintf(t[n].name, sizeof t[n].name, __VA_ARGS__), t[n].rows = (r), t[n].cols = (c), t[n++].scale = (sc))
    T(s->vocab, s->d, 2.0f, "model.shared.weight");
    T(1, s->vocab, 1.0f, "final_logits_bias");
    const char *stacks[2] = {"encoder", "decoder"};
    for (int k = 0; k < 2; k++)
        for (int l = 0; l < s->layers; l++) {
            const char *atts[2] = {"self_attn", "encoder_attn"};
            for (int a = 0; a < (k ? 2 : 1); a++) {
                const char *proj[4] = {"q_proj", "k_proj", "v_proj", "out_proj"};
                for (int p = 0; p < 4; p++) {
                    T(s->d, s->d, 1.0f, "model.%s.layers.%d.%s.%s.weight", stacks[k], l, atts[a], proj[p]);
                    T(s->d, 0, 0.2f, "model.%s.layers.%d.%s.%s.bias", stacks[k], l, atts[a], proj[p]);
                }
                T(s->d, 0, 0.2f, "model.%s.layers.%d.%s_layer_norm.weight", stacks[k], l, atts[a]);
                T(s->d, 0, 0.2f, "model.%s.layers.%d.%s_layer_norm.bias", stacks[k], l, atts[a]);
            }
            T(s->ffn, s->d, 1.0f, "model.%s.layers.%d.fc1.weight", stacks[k], l);
            T(s->ffn, 0, 0.2f, "model.%s.layers.%d.fc1.bias", stacks[k], l);
            T(s->d, s->ffn, 1.0f, "model.%s.layers.%d.fc2.weight", stacks[k], l);
            T(s->d, 0, 0.2f, "model.%s.layers.%d.fc2.bias", stacks[k], l);
            T(s->d, 0, 0.2f, "model.%s.layers.%d.final_layer_norm.weight", stacks[k], l);
            T(s->d, 0, 0.2f, "model.%s.layers.%d.final_layer_norm.bias", stacks[k], l);
        }
#undef T
    return n;
}

/* Writes DIR/config.json, DIR/generation_config.json and DIR/model.safetensors.
 * Returns 0 on success. */
static int tiny_model_write(const char *dir, const tiny_model_spec *s)
{
    mkdir(dir, 0755);
    char path[1024];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    /* keys that config_extra mentions are left out here, so the extra value replaces them */
    const char *extra = s->config_extra ? s->config_extra : "";
    fprintf(f,
            "{\"model_type\":\"marian\",\"d_model\":%d,\"encoder_layers\":%d,\"decoder_layers\":%d,"
            "\"encoder_attention_heads\":%d,\"decoder_attention_heads\":%d,\"encoder_ffn_dim\":%d,"
            "\"decoder_ffn_dim\":%d,\"vocab_size\":%d,\"decoder_vocab_size\":%d,\"pad_token_id\":%d,"
            "\"eos_token_id\":%d,\"decoder_start_token_id\":%d,\"max_position_embeddings\":64,"
            "\"num_beams\":3,\"max_length\":20",
            s->d, s->layers, s->layers, s->heads, s->heads, s->ffn, s->ffn, s->vocab, s->vocab, s->pad, s->eos,
            s->pad);
    if (!strstr(extra, "\"activation_function\""))
        fprintf(f, ",\"activation_function\":\"relu\"");
    if (!strstr(extra, "\"scale_embedding\""))
        fprintf(f, ",\"scale_embedding\":true");
    if (!strstr(extra, "\"static_position_embeddings\""))
        fprintf(f, ",\"static_position_embeddings\":true");
    if (!strstr(extra, "\"bad_words_ids\""))
        fprintf(f, ",\"bad_words_ids\":[[%d]]", s->pad);
    fprintf(f, "%s}\n", extra);
    fclose(f);

    tiny_tensor *t = calloc(512, sizeof *t);
    int n = tiny_tensors(s, t);
    if (s->extra_tensor) {
        snprintf(t[n].name, sizeof t[n].name, "%s", s->extra_tensor);
        t[n].rows = 4;
        t[n++].scale = 1.0f;
    }
    size_t esize = s->f16 ? 2 : 4, off = 0;
    char *header = malloc(1 << 16), *h = header;
    h += sprintf(h, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (int i = 0; i < n; i++) {
        if (s->skip_tensor && !strcmp(t[i].name, s->skip_tensor))
            continue;
        if (s->bad_shape && !strcmp(t[i].name, s->bad_shape))
            t[i].rows++;
        size_t numel = (size_t)t[i].rows * (size_t)(t[i].cols ? t[i].cols : 1);
        if (t[i].cols)
            h += sprintf(h, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%d,%d],\"data_offsets\":[%zu,%zu]}", t[i].name,
                         s->f16 ? "F16" : "F32", t[i].rows, t[i].cols, off, off + numel * esize);
        else
            h += sprintf(h, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%d],\"data_offsets\":[%zu,%zu]}", t[i].name,
                         s->f16 ? "F16" : "F32", t[i].rows, off, off + numel * esize);
        off += numel * esize;
    }
    h += sprintf(h, "}");
    while ((h - header) % 8)
        *h++ = ' ';
    uint64_t hlen = (uint64_t)(h - header);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    f = fopen(path, "wb");
    if (!f)
        return -1;
    fwrite(&hlen, 8, 1, f);
    fwrite(header, 1, hlen, f);
    unsigned state = s->seed;
    for (int i = 0; i < n; i++) {
        if (s->skip_tensor && !strcmp(t[i].name, s->skip_tensor))
            continue;
        size_t numel = (size_t)t[i].rows * (size_t)(t[i].cols ? t[i].cols : 1);
        int is_norm_weight = strstr(t[i].name, "norm.weight") != NULL;
        for (size_t k = 0; k < numel; k++) {
            float v = t[i].scale * tiny_rand(&state) + (is_norm_weight ? 1.0f : 0.0f);
            if (!strcmp(t[i].name, "model.shared.weight") && (int)(k / (size_t)s->d) == s->pad)
                v = 0.0f;
            if (!strcmp(t[i].name, "final_logits_bias") && (int)k == s->eos)
                v = 1.5f; /* sentences end */
            if (s->f16) {
                uint16_t hv = tiny_to_half(v);
                fwrite(&hv, 2, 1, f);
            } else {
                fwrite(&v, 4, 1, f);
            }
        }
    }
    fclose(f);
    free(header);
    free(t);
    return 0;
}

/* Copies from_dir/name to dir/name. Returns 0 or -1. */
static inline int tiny_model_copy_file(const char *from_dir, const char *dir, const char *name)
{
    char from[1024], to[1024], buf[1 << 16];
    snprintf(from, sizeof from, "%s/%s", from_dir, name);
    snprintf(to, sizeof to, "%s/%s", dir, name);
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    size_t n;
    int rc = in && out ? 0 : -1;
    while (!rc && (n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n)
            rc = -1;
    if (in)
        fclose(in);
    if (out && fclose(out))
        rc = -1;
    return rc;
}

/* A tiny model (d 8, one layer) over the real OPUS-MT tokenizer files of
 * tests/fixtures/opus-mt-tc-big-en-pt (54,776 pieces, eos 44670, pad 54775), so that
 * text goes through real SentencePiece. Returns 0 or -1. */
static inline int tiny_model_write_opus(const char *dir)
{
    char fixture[1024];
    opus_fixture_dir(fixture, sizeof fixture);
    tiny_model_spec s = tiny_model_default();
    s.d = 8;
    s.ffn = 16;
    s.layers = 1;
    s.vocab = 54776;
    s.eos = 44670;
    s.pad = 54775;
    static const char *const files[] = {"source.spm", "target.spm", "vocab.json", "tokenizer_config.json",
                                        "special_tokens_map.json"};
    if (tiny_model_write(dir, &s))
        return -1;
    for (size_t i = 0; i < sizeof files / sizeof *files; i++)
        if (tiny_model_copy_file(fixture, dir, files[i]))
            return -1;
    return 0;
}

#endif
