/* test_tokenizer.c: the tokenizer on the real OPUS-MT en-pt files (tests/fixtures), and its errors;
 * the same over a CTranslate2 vocabulary read in place (mt_tokenizer_load_ct2).
 *
 * Expected ids come from python3-sentencepiece + vocab.json with MarianTokenizer's rules
 * (tests/test_tokenizer_vs_python.py checks hundreds more). Broken model directories are
 * built in a temporary directory at test time from the fixture files.
 */
#include "check_main.h"
#include "fixture_dir.h"
#include "tokenizer.h"

#include <check.h>

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define EOS 44670
#define PAD 54775
#define UNK 52024
#define VOCAB 54776
#define POR 39141 /* >>por<< */
#define POB 38844 /* >>pob<< */

static char fixture[PATH_MAX];
static mt_tokenizer *tok;
static char err[1024];

static void find_fixture(void)
{
    opus_fixture_dir(fixture, sizeof fixture);
}

static void setup(void)
{
    find_fixture();
    tok = mt_tokenizer_load(fixture, err, sizeof err);
    ck_assert_msg(tok != NULL, "load %s: %s", fixture, err);
}

static void teardown(void)
{
    mt_tokenizer_free(tok);
    tok = NULL;
}

/* Encodes text and compares with want[0..nwant). */
static void check_encode(const char *text, const int32_t *want, int nwant)
{
    int32_t ids[512];
    int n = mt_tokenizer_encode(tok, text, strlen(text), ids, 512, err, sizeof err);
    ck_assert_msg(n >= 0, "encode \"%s\": %s", text, err);
    ck_assert_msg(n == nwant, "encode \"%s\": %d ids, want %d", text, n, nwant);
    for (int i = 0; i < n; i++)
        ck_assert_msg(ids[i] == want[i], "encode \"%s\": id[%d] = %d, want %d", text, i,
                      (int)ids[i], (int)want[i]);
}

#define CHECK_ENCODE(text, ...)                                                              \
    do {                                                                                     \
        static const int32_t want_[] = {__VA_ARGS__};                                        \
        check_encode(text, want_, (int)(sizeof want_ / sizeof want_[0]));                    \
    } while (0)

/* ---- load and queries ------------------------------------------------------------ */

START_TEST(test_language_tokens)
{
    ck_assert_int_eq(mt_tokenizer_language_token_count(tok), 2);
    ck_assert_str_eq(mt_tokenizer_language_token(tok, 0), ">>pob<<");
    ck_assert_str_eq(mt_tokenizer_language_token(tok, 1), ">>por<<");
    ck_assert_ptr_null(mt_tokenizer_language_token(tok, 2));
    ck_assert_ptr_null(mt_tokenizer_language_token(tok, -1));
    ck_assert_int_eq(mt_tokenizer_source_id(tok, ">>por<<"), POR);
    ck_assert_int_eq(mt_tokenizer_source_id(tok, ">>pob<<"), POB);
    ck_assert_int_eq(mt_tokenizer_source_id(tok, "</s>"), EOS);
    ck_assert_int_eq(mt_tokenizer_source_id(tok, "<pad>"), PAD);
    ck_assert_int_eq(mt_tokenizer_source_id(tok, "<unk>"), UNK);
    ck_assert_int_eq(mt_tokenizer_source_id(tok, ">>deu<<"), -1);
    ck_assert_int_eq(mt_tokenizer_source_id(tok, ""), -1);
}
END_TEST

/* ---- encode ---------------------------------------------------------------------- */

START_TEST(test_encode_known)
{
    CHECK_ENCODE("Hello world!", 25006, 54334, 15, EOS);
    CHECK_ENCODE("A man in an orange hat starring at something.", 1757, 31577, 26728, 4025,
                 36214, 24825, 47729, 5699, 47207, 28, EOS);
    CHECK_ENCODE("Two young, White males are outside near many bushes.", 51567, 54610, 9, 54060,
                 31536, 5057, 36608, 34403, 31728, 8404, 28, EOS);
    /* "ï" is unknown to source.spm; "—" is a source.spm piece missing from vocab.json. */
    CHECK_ENCODE("The café naïve résumé 123,456.78", 49850, 8563, 34107, UNK, 52650, 98, 41962,
                 48475, 17363, 396, 1146, 1395, 28, 1581, EOS);
    CHECK_ENCODE("a — b", 1755, UNK, 6417, EOS);
    CHECK_ENCODE("  leading and trailing  ", 29899, 4131, 50781, 27336, EOS);
    CHECK_ENCODE("Ελληνικά και 中文", 98, UNK, 98, UNK, 98, UNK, EOS);
}
END_TEST

START_TEST(test_encode_language_prefix)
{
    CHECK_ENCODE(">>por<< Hello world!", POR, 25006, 54334, 15, EOS);
    CHECK_ENCODE(">>pob<<Good morning", POB, 23937, 33616, EOS);
    CHECK_ENCODE(">>por<<", POR, EOS);
    /* Not in the vocabulary: encoded as ordinary text. */
    CHECK_ENCODE(">>xyz<< hi", 100, 54442, 54506, 54645, UNK, 25134, EOS);
    /* Only at the very start. */
    int32_t ids[64];
    int n = mt_tokenizer_encode(tok, "Hi >>por<<", 10, ids, 64, err, sizeof err);
    ck_assert_int_gt(n, 3);
    for (int i = 0; i < n; i++)
        ck_assert_int_ne(ids[i], POR);
}
END_TEST

START_TEST(test_encode_empty)
{
    CHECK_ENCODE("", EOS);
    CHECK_ENCODE("   \t ", EOS);
    int32_t id = -7;
    ck_assert_int_eq(mt_tokenizer_encode(tok, NULL, 0, &id, 1, err, sizeof err), 1);
    ck_assert_int_eq(id, EOS);
}
END_TEST

START_TEST(test_encode_invalid_utf8)
{
    static const struct {
        const char *text;
        const char *where;
    } bad[] = {
        {"abc\xff", "byte 3"},           /* never valid */
        {"\xc0\xaf", "byte 0"},          /* overlong '/' */
        {"ok \xed\xa0\x80 x", "byte 3"}, /* surrogate U+D800 */
        {"ab\xe2\x82", "byte 2"},        /* truncated */
        {"\xf4\x90\x80\x80", "byte 0"},  /* above U+10FFFF */
        {"caf\xc3\xa9 \x80", "byte 6"},  /* stray continuation after a valid 2-byte char */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int32_t ids[16];
        err[0] = '\0';
        int n = mt_tokenizer_encode(tok, bad[i].text, strlen(bad[i].text), ids, 16, err,
                                    sizeof err);
        ck_assert_int_eq(n, -1);
        ck_assert_msg(strstr(err, "invalid UTF-8") != NULL && strstr(err, bad[i].where) != NULL,
                      "case %zu: err \"%s\", want \"%s\"", i, err, bad[i].where);
    }
}
END_TEST

START_TEST(test_encode_small_buffer)
{
    const char *text = "Hello world!";
    int32_t ids[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    ck_assert_int_eq(mt_tokenizer_encode(tok, text, strlen(text), NULL, 0, err, sizeof err), 4);
    ck_assert_int_eq(mt_tokenizer_encode(tok, text, strlen(text), ids, 2, err, sizeof err), 4);
    ck_assert_int_eq(ids[0], 25006);
    ck_assert_int_eq(ids[1], 54334);
    ck_assert_int_eq(ids[2], -1); /* guard untouched */
    ck_assert_int_eq(mt_tokenizer_encode(tok, text, strlen(text), ids, 4, err, sizeof err), 4);
    ck_assert_int_eq(ids[3], EOS);
    ck_assert_int_eq(ids[4], -1);
}
END_TEST

START_TEST(test_encode_embedded_nul)
{
    /* len counts, not NUL: "x\0y" encodes the NUL (an unknown piece). */
    int32_t ids[16];
    int n = mt_tokenizer_encode(tok, "x\0y", 3, ids, 16, err, sizeof err);
    ck_assert_int_eq(n, 4);
    ck_assert_int_eq(ids[0], 54443);
    ck_assert_int_eq(ids[1], UNK);
    ck_assert_int_eq(ids[2], 54506);
    ck_assert_int_eq(ids[3], EOS);
}
END_TEST

/* ---- decode ---------------------------------------------------------------------- */

static void check_roundtrip(const char *text)
{
    int32_t ids[512];
    char out[2048];
    int n = mt_tokenizer_encode(tok, text, strlen(text), ids, 512, err, sizeof err);
    ck_assert_msg(n > 0 && n <= 512, "encode \"%s\": %s", text, err);
    int len = mt_tokenizer_decode(tok, ids, n, out, sizeof out, err, sizeof err);
    ck_assert_msg(len >= 0, "decode \"%s\": %s", text, err);
    ck_assert_int_eq(len, (int)strlen(out));
    ck_assert_str_eq(out, text);
}

START_TEST(test_decode_roundtrip)
{
    check_roundtrip("Hello world!");
    check_roundtrip("A man in an orange hat starring at something.");
    check_roundtrip("Two young, White males are outside near many bushes.");
    check_roundtrip("Olá, mundo! Como você está?");
    check_roundtrip("O cão preto corre na relva, às 10h30.");
    check_roundtrip("Uma criança de 3 anos come pão (quente) e 2 bolos.");
}
END_TEST

START_TEST(test_decode_drops_specials)
{
    int32_t ola[64];
    int n = mt_tokenizer_encode(tok, "Olá, mundo!", strlen("Olá, mundo!"), ola, 64, err, sizeof err);
    ck_assert_int_gt(n, 2);
    n--; /* drop eos */
    int32_t ids[80];
    int k = 0;
    ids[k++] = PAD;
    ids[k++] = POR;
    for (int i = 0; i < n; i++) {
        ids[k++] = ola[i];
        if (i == 1) {
            ids[k++] = UNK;
            ids[k++] = POB;
        }
    }
    ids[k++] = EOS;
    ids[k++] = PAD;
    char out[256];
    int len = mt_tokenizer_decode(tok, ids, k, out, sizeof out, err, sizeof err);
    ck_assert_msg(len >= 0, "decode: %s", err);
    ck_assert_str_eq(out, "Olá, mundo!");

    static const int32_t only[] = {PAD, EOS, UNK, POR};
    strcpy(out, "junk");
    ck_assert_int_eq(mt_tokenizer_decode(tok, only, 4, out, sizeof out, err, sizeof err), 0);
    ck_assert_str_eq(out, "");
    strcpy(out, "junk");
    ck_assert_int_eq(mt_tokenizer_decode(tok, NULL, 0, out, sizeof out, err, sizeof err), 0);
    ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(test_decode_out_of_range)
{
    char out[64];
    static const int32_t big[] = {25006, VOCAB};
    ck_assert_int_eq(mt_tokenizer_decode(tok, big, 2, out, sizeof out, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "54776") != NULL && strstr(err, "position 1") != NULL, "%s", err);
    static const int32_t neg[] = {-1};
    ck_assert_int_eq(mt_tokenizer_decode(tok, neg, 1, out, sizeof out, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "-1") != NULL, "%s", err);
}
END_TEST

START_TEST(test_decode_small_buffer)
{
    static const int32_t ids[] = {25006, 54334, 15, EOS}; /* "Hello world!" */
    char out[8];
    memset(out, 'x', sizeof out);
    ck_assert_int_eq(mt_tokenizer_decode(tok, ids, 4, out, 5, err, sizeof err), 12);
    ck_assert_str_eq(out, "Hell");
    ck_assert_int_eq(out[5], 'x'); /* guard untouched */
    ck_assert_int_eq(mt_tokenizer_decode(tok, ids, 4, NULL, 0, err, sizeof err), 12);
    char full[13];
    ck_assert_int_eq(mt_tokenizer_decode(tok, ids, 4, full, sizeof full, err, sizeof err), 12);
    ck_assert_str_eq(full, "Hello world!");
}
END_TEST

/* ---- threads --------------------------------------------------------------------- */

static const char *thread_texts[] = {
    "Hello world!", "A man in an orange hat starring at something.",
    "Olá, mundo! Como você está?", ">>por<< Two dogs play in the snow.", "",
};

static void *thread_main(void *arg)
{
    long bad = 0;
    (void)arg;
    for (int round = 0; round < 200; round++) {
        for (size_t t = 0; t < sizeof thread_texts / sizeof thread_texts[0]; t++) {
            int32_t ids[128];
            char out[512], e[256];
            const char *text = thread_texts[t];
            int n = mt_tokenizer_encode(tok, text, strlen(text), ids, 128, e, sizeof e);
            if (n <= 0 || n > 128) {
                bad++;
                continue;
            }
            int len = mt_tokenizer_decode(tok, ids, n, out, sizeof out, e, sizeof e);
            const char *want = strncmp(text, ">>por<< ", 8) == 0 ? text + 8 : text;
            if (len < 0 || strcmp(out, want) != 0)
                bad++;
        }
    }
    return (void *)bad;
}

START_TEST(test_threads)
{
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, thread_main, NULL), 0);
    for (int i = 0; i < 4; i++) {
        void *bad;
        pthread_join(th[i], &bad);
        ck_assert_int_eq((long)bad, 0);
    }
}
END_TEST

/* ---- broken model directories ---------------------------------------------------- */

static char tmpdir[PATH_MAX];

static const char *const files[] = {"config.json", "tokenizer_config.json", "vocab.json",
                                    "source.spm", "target.spm"};

/* A fresh directory with links to every fixture file. */
static void bad_setup(void)
{
    find_fixture();
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/mt-tok-XXXXXX", base != NULL ? base : "/tmp");
    ck_assert_msg(mkdtemp(tmpdir) != NULL, "mkdtemp: %s", strerror(errno));
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char src[PATH_MAX + 64], dst[PATH_MAX + 64];
        snprintf(src, sizeof src, "%s/%s", fixture, files[i]);
        snprintf(dst, sizeof dst, "%s/%s", tmpdir, files[i]);
        ck_assert_msg(symlink(src, dst) == 0, "symlink %s: %s", dst, strerror(errno));
    }
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void bad_teardown(void)
{
    nftw(tmpdir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static void put_file(const char *name, const void *data, size_t len)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    unlink(path);
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "fopen %s: %s", path, strerror(errno));
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    fclose(f);
}

static void put_text(const char *name, const char *text)
{
    put_file(name, text, strlen(text));
}

static void drop_file(const char *name)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    ck_assert_int_eq(unlink(path), 0);
}

/* Loading tmpdir must fail with an error naming file and containing what. */
static void expect_load_error(const char *file, const char *what)
{
    err[0] = '\0';
    mt_tokenizer *t = mt_tokenizer_load(tmpdir, err, sizeof err);
    if (t != NULL)
        mt_tokenizer_free(t);
    ck_assert_msg(t == NULL, "loaded although %s is broken", file);
    ck_assert_msg(strstr(err, file) != NULL, "error \"%s\" does not name %s", err, file);
    ck_assert_msg(strstr(err, what) != NULL, "error \"%s\" does not say \"%s\"", err, what);
}

/* A small vocabulary (the loader validates it before opening the spm files). */
static const char small_config[] = "{\"eos_token_id\": 0}";

START_TEST(test_links_load)
{
    mt_tokenizer *t = mt_tokenizer_load(tmpdir, err, sizeof err);
    ck_assert_msg(t != NULL, "%s", err);
    mt_tokenizer_free(t);
}
END_TEST

START_TEST(test_missing_files)
{
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        drop_file(files[i]);
        expect_load_error(files[i], "missing");
        char src[PATH_MAX + 64], dst[PATH_MAX + 64];
        snprintf(src, sizeof src, "%s/%s", fixture, files[i]);
        snprintf(dst, sizeof dst, "%s/%s", tmpdir, files[i]);
        ck_assert_int_eq(symlink(src, dst), 0);
    }
    err[0] = '\0';
    ck_assert_ptr_null(mt_tokenizer_load("/nonexistent/model", err, sizeof err));
    ck_assert_msg(strstr(err, "/nonexistent/model/") != NULL, "%s", err);
    ck_assert_ptr_null(mt_tokenizer_load(NULL, err, sizeof err));
    ck_assert_ptr_null(mt_tokenizer_load("/nonexistent", NULL, 0)); /* no err buffer: no crash */
}
END_TEST

START_TEST(test_bad_vocab)
{
    put_text("config.json", small_config);
    static const struct {
        const char *json, *what;
    } bad[] = {
        {"{\"</s>\": 0, \"<unk>\": 1,", "invalid JSON at line 1"},
        {"[\"</s>\", \"<unk>\"]", "expected a JSON object"},
        {"{}", "empty"},
        {"{\"</s>\": 0, \"<unk>\": \"1\"}", "\"<unk>\" is not an integer"},
        {"{\"</s>\": 0, \"<unk>\": 1.0}", "\"<unk>\" is not an integer"},
        {"{\"</s>\": 0, \"<unk>\": -1}", "negative id -1"},
        {"{\"</s>\": 0, \"<unk>\": 7}", "id 7, not below the vocabulary size 2 (the number"},
        {"{\"</s>\": 0, \"<unk>\": 0}", "both have id 0"},
        {"{\"</s>\": 0, \"<unk>\": 1, \"</s>\": 1}", "duplicate"},
        {"{\"</s>\": 0, \"<pad>\": 1}", "\"<unk>\" not found"},
        {"{\"</s>\": 1, \"<unk>\": 0}", "eos_token_id is 0 but"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        put_text("vocab.json", bad[i].json);
        expect_load_error("vocab.json", bad[i].what);
    }
    /* Ids above config.json's vocab_size. */
    put_text("config.json", "{\"eos_token_id\": 0, \"vocab_size\": 2}");
    put_text("vocab.json", "{\"</s>\": 0, \"<unk>\": 1, \"x\": 2}");
    expect_load_error("vocab.json", "vocab_size");
}
END_TEST

START_TEST(test_bad_configs)
{
    put_text("config.json", "{\"eos_token_id\": \"</s>\"}");
    expect_load_error("config.json", "eos_token_id");
    put_text("config.json", "{\"eos_token_id\": 99999999}");
    expect_load_error("config.json", "not below the vocabulary size");
    put_text("config.json", "{\"eos_token_id\": 1}");
    expect_load_error("config.json", "eos_token_id is 1 but");
    put_text("config.json", "not json");
    expect_load_error("config.json", "invalid JSON at line 1");
    put_text("config.json", "{}"); /* eos from vocab.json then */
    put_text("tokenizer_config.json", "{\"separate_vocabs\": \"yes\"}");
    expect_load_error("tokenizer_config.json", "separate_vocabs");
    put_text("tokenizer_config.json", "{\"unk_token\": 3}");
    expect_load_error("tokenizer_config.json", "unk_token");
    put_text("tokenizer_config.json", "{\"unk_token\": \"<nope>\"}");
    expect_load_error("vocab.json", "\"<nope>\" not found");
    put_text("tokenizer_config.json", "{\"separate_vocabs\": true}");
    expect_load_error("target_vocab.json", "missing");
}
END_TEST

START_TEST(test_bad_spm)
{
    /* Garbage (not a protobuf). */
    static const char garbage[] = "this is not a sentencepiece model\n\xff\xfe\x01\x02";
    put_file("source.spm", garbage, sizeof garbage - 1);
    expect_load_error("source.spm", "not a valid SentencePiece model");
    drop_file("source.spm");
    char src[PATH_MAX + 64], dst[PATH_MAX + 64];
    snprintf(src, sizeof src, "%s/source.spm", fixture);
    snprintf(dst, sizeof dst, "%s/source.spm", tmpdir);
    ck_assert_int_eq(symlink(src, dst), 0);

    /* The first 4 KiB of the real target.spm (truncated), then an empty file. */
    static char head[4096];
    snprintf(src, sizeof src, "%s/target.spm", fixture);
    FILE *f = fopen(src, "rb");
    ck_assert_ptr_nonnull(f);
    size_t got = fread(head, 1, sizeof head, f);
    fclose(f);
    ck_assert_uint_eq(got, sizeof head);
    put_file("target.spm", head, got);
    expect_load_error("target.spm", "not a valid SentencePiece model");
    put_file("target.spm", "", 0);
    expect_load_error("target.spm", "SentencePiece");
}
END_TEST

START_TEST(test_separate_vocabs)
{
    /* target_vocab.json: a 5-piece target vocabulary; decode goes through it. */
    put_text("tokenizer_config.json", "{\"separate_vocabs\": true}");
    put_text("config.json", "{\"eos_token_id\": 44670, \"pad_token_id\": 4}");
    put_text("target_vocab.json",
             "{\"</s>\": 0, \"<unk>\": 1, \"\\u2581Ol\\u00e1\": 2, \",\": 3, \"<pad>\": 4}");
    mt_tokenizer *t = mt_tokenizer_load(tmpdir, err, sizeof err);
    ck_assert_msg(t != NULL, "%s", err);
    static const int32_t ids[] = {4, 2, 3, 1, 2, 0};
    char out[64];
    ck_assert_int_eq(mt_tokenizer_decode(t, ids, 6, out, sizeof out, err, sizeof err), 10);
    ck_assert_str_eq(out, "Olá, Olá");
    static const int32_t big[] = {5};
    ck_assert_int_eq(mt_tokenizer_decode(t, big, 1, out, sizeof out, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "size 5") != NULL, "%s", err);
    /* Encoding still uses vocab.json. */
    int32_t e[8];
    ck_assert_int_eq(mt_tokenizer_encode(t, "Hello world!", 12, e, 8, err, sizeof err), 4);
    ck_assert_int_eq(e[0], 25006);
    ck_assert_int_eq(e[3], EOS);
    mt_tokenizer_free(t);
}
END_TEST

/* ---- a CTranslate2 vocabulary read in place (mt_tokenizer_load_ct2) ------------------ */

/* tmpdir as a CTranslate2 directory: its vocabulary text (one token a line), config.json,
 * and the fixture's source.spm for both sides. */
static mt_tokenizer *load_ct2(const char *vocab_txt, const char *config, char *e, size_t elen)
{
    put_text("shared_vocabulary.txt", vocab_txt);
    if (config)
        put_text("config.json", config);
    else
        drop_file("config.json");
    mt_ct2_layout l = {.kind = MT_CT2_DIRECTORY};
    snprintf(l.model_dir, sizeof l.model_dir, "%s", tmpdir);
    ck_assert_int_lt(snprintf(l.source_spm, sizeof l.source_spm, "%s/source.spm", fixture), (int)sizeof l.source_spm);
    ck_assert_int_lt(snprintf(l.target_spm, sizeof l.target_spm, "%s/source.spm", fixture), (int)sizeof l.target_spm);
    return mt_tokenizer_load_ct2(&l, e, elen);
}

/* The contract: pieces -> ids by string (the first id of a piece listed twice), unknown
 * pieces -> config.json's unk_token, eos (config.json's eos_token) appended, decoding drops
 * eos, unk, <pad> and >>xx<< but decodes a duplicate's other id; CTranslate2's defaults
 * without config.json. */
START_TEST(test_ct2_vocabulary)
{
    static const char vocab[] = "[UNK]\n<s>\n[EOS]\n\xe2\x96\x81Hello\n\xe2\x96\x81world\n!\n"
                                "\xe2\x96\x81Hello\n>>por<<\n<pad>\n";
    mt_tokenizer *t = load_ct2(vocab, "{\"eos_token\": \"[EOS]\", \"unk_token\": \"[UNK]\"}", err, sizeof err);
    ck_assert_msg(t != NULL, "%s", err);
    int32_t e[8];
    ck_assert_int_eq(mt_tokenizer_encode(t, "Hello world!", 12, e, 8, err, sizeof err), 4);
    ck_assert_int_eq(e[0], 3); /* the first of the two ids of "\u2581Hello" */
    ck_assert_int_eq(e[1], 4);
    ck_assert_int_eq(e[2], 5);
    ck_assert_int_eq(e[3], 2); /* [EOS] */
    ck_assert_int_eq(mt_tokenizer_encode(t, "Hello there", 11, e, 8, err, sizeof err), 3);
    ck_assert_int_eq(e[1], 0); /* "\u2581there" is not listed: [UNK] */
    ck_assert_int_eq(mt_tokenizer_unk_id(t), 0);
    ck_assert_int_eq(mt_tokenizer_source_id(t, ">>por<<"), 7);
    ck_assert_int_eq(mt_tokenizer_language_token_count(t), 1);
    static const int32_t ids[] = {3, 0, 6, 7, 8, 5, 2};
    char out[64];
    ck_assert_int_eq(mt_tokenizer_decode(t, ids, 7, out, sizeof out, err, sizeof err), 12);
    ck_assert_str_eq(out, "Hello Hello!");
    static const int32_t big[] = {9};
    ck_assert_int_eq(mt_tokenizer_decode(t, big, 1, out, sizeof out, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "size 9") != NULL, "%s", err);
    mt_tokenizer_free(t);

    /* no config.json (CTranslate2 before 3.0): </s> and <unk> */
    t = load_ct2("<unk>\n<s>\n</s>\n\xe2\x96\x81Hello\n", NULL, err, sizeof err);
    ck_assert_msg(t != NULL, "%s", err);
    ck_assert_int_eq(mt_tokenizer_encode(t, "Hello world", 11, e, 8, err, sizeof err), 3);
    ck_assert_int_eq(e[0], 3);
    ck_assert_int_eq(e[1], 0);
    ck_assert_int_eq(e[2], 2);
    mt_tokenizer_free(t);
}
END_TEST

START_TEST(test_ct2_errors_name_the_file)
{
    char path[PATH_MAX + 64];
    ck_assert_ptr_null(load_ct2("<unk>\n<s>\n\xe2\x96\x81Hello\n", "{}", err, sizeof err));
    snprintf(path, sizeof path, "%s/shared_vocabulary.txt", tmpdir);
    ck_assert_msg(strstr(err, path) && strstr(err, "\"</s>\" not found"), "%s", err);
    ck_assert_ptr_null(load_ct2("<s>\n</s>\n", "{}", err, sizeof err));
    ck_assert_msg(strstr(err, path) && strstr(err, "\"<unk>\" not found"), "%s", err);
    ck_assert_ptr_null(load_ct2("", "{}", err, sizeof err));
    ck_assert_msg(strstr(err, path) && strstr(err, "is empty"), "%s", err);
    ck_assert_ptr_null(load_ct2("<unk>\n</s>\n", "{\"eos_token\": 3}", err, sizeof err));
    snprintf(path, sizeof path, "%s/config.json", tmpdir);
    ck_assert_msg(strstr(err, path) && strstr(err, "\"eos_token\" must be a token"), "%s", err);
    put_text("config.json", "{}");
    drop_file("shared_vocabulary.txt");
    mt_ct2_layout l = {.kind = MT_CT2_DIRECTORY};
    snprintf(l.model_dir, sizeof l.model_dir, "%s", tmpdir);
    ck_assert_int_lt(snprintf(l.source_spm, sizeof l.source_spm, "%s/source.spm", fixture), (int)sizeof l.source_spm);
    /* not a SentencePiece model: */
    ck_assert_int_lt(snprintf(l.target_spm, sizeof l.target_spm, "%s/config.json", fixture), (int)sizeof l.target_spm);
    ck_assert_ptr_null(mt_tokenizer_load_ct2(&l, err, sizeof err));
    ck_assert_msg(strstr(err, "has no shared_vocabulary.json (or .txt)"), "%s", err);
    put_text("shared_vocabulary.json", "[\"<unk>\", \"</s>\"]");
    ck_assert_ptr_null(mt_tokenizer_load_ct2(&l, err, sizeof err));
    ck_assert_msg(strstr(err, l.target_spm) && strstr(err, "not a valid SentencePiece model"), "%s", err);
    ck_assert_ptr_null(mt_tokenizer_load_ct2(NULL, err, sizeof err));
}
END_TEST

static Suite *tokenizer_suite(void)
{
    Suite *s = suite_create("tokenizer");
    TCase *tc = tcase_create("opus-mt-en-pt");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_language_tokens);
    tcase_add_test(tc, test_encode_known);
    tcase_add_test(tc, test_encode_language_prefix);
    tcase_add_test(tc, test_encode_empty);
    tcase_add_test(tc, test_encode_invalid_utf8);
    tcase_add_test(tc, test_encode_small_buffer);
    tcase_add_test(tc, test_encode_embedded_nul);
    tcase_add_test(tc, test_decode_roundtrip);
    tcase_add_test(tc, test_decode_drops_specials);
    tcase_add_test(tc, test_decode_out_of_range);
    tcase_add_test(tc, test_decode_small_buffer);
    tcase_add_test(tc, test_threads);
    suite_add_tcase(s, tc);

    TCase *bad = tcase_create("broken-dirs");
    tcase_add_checked_fixture(bad, bad_setup, bad_teardown);
    tcase_add_test(bad, test_links_load);
    tcase_add_test(bad, test_missing_files);
    tcase_add_test(bad, test_bad_vocab);
    tcase_add_test(bad, test_bad_configs);
    tcase_add_test(bad, test_bad_spm);
    tcase_add_test(bad, test_separate_vocabs);
    tcase_add_test(bad, test_ct2_vocabulary);
    tcase_add_test(bad, test_ct2_errors_name_the_file);
    suite_add_tcase(s, bad);
    return s;
}

int main(void)
{
    return mt_check_run(srunner_create(tokenizer_suite()));
}
