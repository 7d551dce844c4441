/* test_service.c: the service's request layer (translator/submit.c, registry.c) and the
 * decoding options table (translator/options.c), on tiny random models that use the real
 * OPUS-MT tokenizer files from tests/fixtures: routing, "auto" fan-out with results and
 * stats merged over the parts, a glossary's masked copies run only where needed, options
 * merged over the service's defaults, the policy between them, and the table's checks. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "service_engine.h"
#include "tiny_model.h"

static char dir_en[256], dir_fr[256];

/* A tiny en->pt model, and a copy labelled fr->pt. */
static void setup(void)
{
    snprintf(dir_en, sizeof dir_en, "/tmp/mt-test-service-en-XXXXXX");
    snprintf(dir_fr, sizeof dir_fr, "/tmp/mt-test-service-fr-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir_en));
    ck_assert_ptr_nonnull(mkdtemp(dir_fr));
    ck_assert_int_eq(tiny_model_write_opus(dir_en), 0);
    char cmd[1200];
    snprintf(cmd, sizeof cmd,
             "cp -r '%s'/. '%s'/ && sed -i 's/\"source_lang\": \"en\"/\"source_lang\": \"fr\"/' "
             "'%s/tokenizer_config.json'",
             dir_en, dir_fr, dir_fr);
    ck_assert_int_eq(system(cmd), 0);
}

static void teardown(void)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", dir_en, dir_fr);
    ck_assert_int_eq(system(cmd), 0);
}

typedef struct {
    long sentences[2];
    int parts;
} counts;

static void on_translated(void *user, int model, long sentences, long src, long tgt)
{
    (void)src, (void)tgt;
    counts *c = user;
    c->sentences[model] += sentences;
    c->parts++;
}

static mt_service *load(int n, const mt_decoding *defaults, counts *seen)
{
    mt_service_spec specs[2] = {{dir_en, "en-pt", NULL, NULL, NULL}, {dir_fr, "fr-pt", NULL, NULL, NULL}};
    mt_service_config cfg;
    mt_service_config_default(&cfg);
    cfg.workers = 2;
    cfg.detect = 1;
    if (defaults) cfg.defaults = *defaults;
    mt_service_observer obs = {0};
    obs.translated = on_translated;
    obs.user = seen;
    char err[512];
    mt_service *svc = mt_service_load(specs, n, &cfg, seen ? &obs : NULL, err, sizeof err);
    ck_assert_msg(svc != NULL, "%s", err);
    return svc;
}

static const char *EN = "A man in a blue shirt is riding a bicycle down the street. He is fast.";
static const char *FR = "Un homme en chemise bleue fait du vélo dans la rue.";
static const char *EN2 = "Two dogs are playing in the snow near the old house.";

/* A plain-text request for texts[0, n) from source into "pt"; lens[0, n) is filled. */
static mt_service_request into_pt(const char *source, int n, const char *const *texts, size_t *lens)
{
    for (int i = 0; i < n; i++) lens[i] = strlen(texts[i]);
    mt_service_request rq;
    mt_service_request_init(&rq);
    rq.source = source;
    rq.target = "pt";
    rq.n = n;
    rq.texts = texts;
    rq.lens = lens;
    return rq;
}

/* The translations of texts through one request with this source. */
static void translate(mt_service *svc, const char *source, int n, const char **texts, mt_translation *out)
{
    size_t lens[8];
    mt_service_request rq = into_pt(source, n, texts, lens);
    char err[512];
    ck_assert_msg(mt_service_translate_request(svc, &rq, out, err, sizeof err) == MT_SERVICE_OK, "%s", err);
}

START_TEST(auto_fans_out_and_merges_results_and_stats)
{
    counts seen = {{0, 0}, 0};
    mt_service *svc = load(2, NULL, &seen);
    ck_assert(mt_service_can_detect(svc));
    const char *texts[3] = {EN, FR, EN2};
    size_t lens[3];
    mt_service_request rq = into_pt("auto", 3, texts, lens);
    mt_service_task *task;
    char err[512];
    ck_assert_msg(mt_service_submit(svc, &rq, &task, err, sizeof err) == MT_SERVICE_OK, "%s", err);
    ck_assert_msg(mt_service_task_run(task, err, sizeof err) == MT_SERVICE_OK, "%s", err);
    ck_assert_int_eq(mt_service_task_outcome(task, NULL), MT_SERVICE_OK);
    /* each text went to its language's model, in request order */
    ck_assert_int_eq(mt_service_task_detected(task), 2);
    ck_assert_str_eq(mt_service_task_route(task, 0)->source, "en");
    ck_assert_str_eq(mt_service_task_route(task, 1)->source, "fr");
    ck_assert_str_eq(mt_service_task_route(task, 2)->source, "en");
    ck_assert_int_eq(mt_service_task_route(task, 1)->model, 1);
    ck_assert(mt_service_task_confidence(task, 0) > 0);
    /* stats of every part: sentences and tokens of both parts, timing from the first
     * part's submission to the last part's end; the metrics observer heard of each part
     * for its own model */
    mt_service_stats st;
    mt_service_task_stats(task, &st);
    ck_assert_int_eq(st.texts, 3);
    ck_assert_int_eq(seen.parts, 2);
    ck_assert(seen.sentences[0] >= 2 && seen.sentences[1] >= 1);
    ck_assert_int_eq(st.sentences, seen.sentences[0] + seen.sentences[1]);
    ck_assert(st.source_tokens > 0 && st.target_tokens > 0);
    ck_assert(st.t_submitted > 0 && st.t_started >= st.t_submitted && st.t_done >= st.t_started);
    /* the same translations, and the same sentence counts, as requests that name the source */
    counts parts = seen;
    mt_translation en[2], fr[1];
    const char *en_texts[2] = {EN, EN2}, *fr_texts[1] = {FR};
    translate(svc, "en", 2, en_texts, en);
    translate(svc, "fr", 1, fr_texts, fr);
    const mt_translation *res = mt_service_task_results(task);
    ck_assert_str_eq(res[0].texts[0], en[0].texts[0]);
    ck_assert_str_eq(res[1].texts[0], fr[0].texts[0]);
    ck_assert_str_eq(res[2].texts[0], en[1].texts[0]);
    ck_assert_int_eq(seen.sentences[0], 2 * parts.sentences[0]);
    ck_assert_int_eq(seen.sentences[1], 2 * parts.sentences[1]);
    mt_service_task_free(task);
    for (int i = 0; i < 2; i++) mt_translation_clear(&en[i]);
    mt_translation_clear(&fr[0]);
    mt_service_free(svc);
}
END_TEST

/* A glossary: the masked copy of a text is translated only where the plain translation
 * lacks a target term. Here "man" asks for a word the plain translation of EN already
 * holds and "dogs" for one no translation holds: the service translates both texts, then
 * EN2's masked copy alone (before, every copy ran beside its text). */
START_TEST(glossary_masks_only_texts_that_lack_a_term)
{
    counts seen = {{0, 0}, 0};
    mt_service *svc = load(1, NULL, &seen);
    const char *texts[2] = {EN, EN2}, *second[1] = {EN2};
    mt_translation plain[2], alone[1];
    translate(svc, "en", 2, texts, plain);
    long both = seen.sentences[0];
    translate(svc, "en", 1, second, alone);
    long masked = seen.sentences[0] - both;
    char word[128], tsv[300];
    const char *p = plain[0].texts[0];
    size_t n = strcspn(p, " ");
    ck_assert(n > 0 && n < sizeof word);
    memcpy(word, p, n), word[n] = 0;
    snprintf(tsv, sizeof tsv, "man\t%s\ndogs\tXyzzyq\n", word);
    mt_glossary *g = NULL;
    char err[512];
    ck_assert_msg(mt_glossary_parse(tsv, strlen(tsv), MT_GLOSSARY_TSV, "en", "pt", &g, err, sizeof err) == 0, "%s",
                  err);
    size_t lens[2];
    mt_service_request rq = into_pt("en", 2, texts, lens);
    rq.glossary = g;
    mt_service_task *task;
    ck_assert_msg(mt_service_submit(svc, &rq, &task, err, sizeof err) == MT_SERVICE_OK, "%s", err);
    long before = seen.sentences[0];
    ck_assert_msg(mt_service_task_run(task, err, sizeof err) == MT_SERVICE_OK, "%s", err);
    ck_assert_int_eq(mt_service_task_outcome(task, NULL), MT_SERVICE_OK);
    const mt_translation *res = mt_service_task_results(task);
    ck_assert_str_eq(res[0].texts[0], plain[0].texts[0]);
    ck_assert_msg(strstr(res[1].texts[0], "Xyzzyq") != NULL, "%s", res[1].texts[0]);
    mt_service_stats st;
    mt_service_task_stats(task, &st);
    ck_assert_int_eq(st.texts, 2);
    ck_assert_int_eq(seen.sentences[0] - before, both + masked);
    ck_assert_int_eq(st.sentences, both + masked);
    mt_service_task_free(task);
    for (int i = 0; i < 2; i++) mt_translation_clear(&plain[i]);
    mt_translation_clear(&alone[0]);
    mt_glossary_free(g);
    mt_service_free(svc);
}
END_TEST

/* mt_service_translate_texts (what a file's units go through): each text's best
 * translation as a string of its own, the same as the full results; a refused request
 * leaves every string NULL and says why. */
START_TEST(texts_are_the_best_translations)
{
    mt_service *svc = load(1, NULL, NULL);
    const char *texts[2] = {EN, EN2};
    mt_translation full[2];
    translate(svc, "en", 2, texts, full);
    size_t lens[2];
    mt_service_request rq = into_pt("en", 2, texts, lens);
    char *out[2], err[512];
    ck_assert_msg(mt_service_translate_texts(svc, &rq, out, err, sizeof err) == MT_SERVICE_OK, "%s", err);
    for (int i = 0; i < 2; i++) {
        ck_assert_str_eq(out[i], full[i].texts[0]);
        free(out[i]);
        mt_translation_clear(&full[i]);
    }
    rq.source = "de";
    ck_assert_int_eq(mt_service_translate_texts(svc, &rq, out, err, sizeof err), MT_SERVICE_INVALID);
    ck_assert(out[0] == NULL && out[1] == NULL);
    ck_assert_msg(strstr(err, "de-pt") != NULL, "%s", err);
    mt_service_free(svc);
}
END_TEST

/* After mt_service_abort(MT_SERVICE_SHUTDOWN) nothing more is admitted: a file job that was
 * between two chunks when the server began to stop gets its next chunk refused at once
 * instead of keeping the workers (and the shutdown) busy chunk after chunk. */
START_TEST(shutdown_abort_admits_nothing_more)
{
    mt_service *svc = load(1, NULL, NULL);
    const char *texts[1] = {EN};
    size_t lens[1];
    mt_service_request rq = into_pt("en", 1, texts, lens);
    char *out[1], err[512];
    mt_service_abort(svc, MT_SERVICE_CLIENT_GONE); /* one request's worth: not for good */
    ck_assert_msg(mt_service_translate_texts(svc, &rq, out, err, sizeof err) == MT_SERVICE_OK, "%s", err);
    free(out[0]);
    mt_service_abort(svc, MT_SERVICE_SHUTDOWN);
    ck_assert_int_eq(mt_service_translate_texts(svc, &rq, out, err, sizeof err), MT_SERVICE_SHUTDOWN);
    ck_assert(out[0] == NULL);
    mt_service_free(svc);
}
END_TEST

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int done;
} done_flag;

static void note_done(mt_service_task *t, void *user)
{
    (void)t;
    done_flag *d = user;
    pthread_mutex_lock(&d->mu);
    d->done = 1;
    pthread_cond_broadcast(&d->cond);
    pthread_mutex_unlock(&d->mu);
}

/* A refusal says which it is: a full queue (retry later) or a service shut down for good
 * (a file job's chunk refused during a SIGTERM drain was logged "the translation queue is
 * full", and an HTTP client told to retry here in a few seconds). The queue holds one
 * request, kept waiting (not run) by a batch that waits for an announced arrival. */
START_TEST(refusals_say_full_or_shutting_down)
{
    mt_service_spec spec = {dir_en, "en-pt", NULL, NULL, NULL};
    mt_service_config cfg;
    mt_service_config_default(&cfg);
    cfg.capacity = 1;
    cfg.max_wait_ms = 600000; /* the held request's batch waits for the arrival below */
    char err[512];
    mt_service *svc = mt_service_load(&spec, 1, &cfg, NULL, err, sizeof err);
    ck_assert_msg(svc != NULL, "%s", err);
    const char *texts[1] = {EN};
    size_t lens[1];
    mt_service_request rq = into_pt("en", 1, texts, lens);
    mt_service_arriving(svc, 1);
    mt_service_task *held;
    done_flag d = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    ck_assert_msg(mt_service_submit(svc, &rq, &held, err, sizeof err) == MT_SERVICE_OK, "%s", err);
    ck_assert_int_eq(mt_service_task_start(held, note_done, &d), MT_SERVICE_OK);

    char *out[1];
    ck_assert_int_eq(mt_service_translate_texts(svc, &rq, out, err, sizeof err), MT_SERVICE_BUSY);
    ck_assert_msg(strstr(err, "queue is full") != NULL, "%s", err);
    ck_assert(out[0] == NULL);

    /* the shutdown cancels the held request and refuses every later one, saying so */
    mt_service_abort(svc, MT_SERVICE_SHUTDOWN);
    pthread_mutex_lock(&d.mu);
    while (!d.done) pthread_cond_wait(&d.cond, &d.mu);
    pthread_mutex_unlock(&d.mu);
    ck_assert_int_eq(mt_service_task_outcome(held, NULL), MT_SERVICE_SHUTDOWN);
    mt_service_task_free(held);
    ck_assert_int_eq(mt_service_translate_texts(svc, &rq, out, err, sizeof err), MT_SERVICE_SHUTDOWN);
    ck_assert_msg(strstr(err, "shutting down") != NULL && strstr(err, "full") == NULL, "%s", err);
    ck_assert(out[0] == NULL);
    mt_translation tr[1];
    ck_assert_int_eq(mt_service_translate_request(svc, &rq, tr, err, sizeof err), MT_SERVICE_SHUTDOWN);
    ck_assert_msg(strstr(err, "shutting down") != NULL, "%s", err);
    /* the asynchronous start says it too (the server answers 503 "shutting down" on it) */
    mt_service_task *late;
    ck_assert_msg(mt_service_submit(svc, &rq, &late, err, sizeof err) == MT_SERVICE_OK, "%s", err);
    ck_assert_int_eq(mt_service_task_start(late, note_done, &d), MT_SERVICE_SHUTDOWN);
    mt_service_task_free(late);
    /* and the engine layer's blocking call (mt_service_run refused) */
    mt_service_options o;
    mt_service_options_default(svc, 0, &o);
    ck_assert_int_eq(mt_service_translate(svc, 0, &o, 1, texts, lens, tr, err, sizeof err), MT_SERVICE_SHUTDOWN);
    ck_assert_msg(strstr(err, "shutting down") != NULL, "%s", err);
    mt_service_arriving(svc, -1);
    mt_service_free(svc);
    pthread_cond_destroy(&d.cond);
    pthread_mutex_destroy(&d.mu);
}
END_TEST

START_TEST(routing_errors_name_the_pairs)
{
    mt_service *svc = load(2, NULL, NULL);
    const char *text = EN;
    size_t len;
    mt_service_request rq = into_pt("de", 1, &text, &len);
    mt_service_task *task;
    char err[512];
    ck_assert_int_eq(mt_service_submit(svc, &rq, &task, err, sizeof err), MT_SERVICE_INVALID);
    ck_assert_ptr_null(task);
    ck_assert_msg(strstr(err, "unsupported language pair de-pt; supported pairs: en-pt, ") && strstr(err, "fr-pt"), "%s",
                  err);
    int detected;
    int r = mt_service_route(svc, "fr", "pt", &detected, err, sizeof err);
    ck_assert_int_ge(r, 0);
    ck_assert_int_eq(mt_langs_get(mt_service_langs(svc), r)->model, 1);
    ck_assert_int_eq(mt_service_route(svc, NULL, NULL, &detected, err, sizeof err), 0); /* the default */
    ck_assert_str_eq(mt_service_model_info(svc, 1)->name, "fr-pt");
    mt_service_free(svc);
}
END_TEST

/* one_sentence (DeepL's split_sentences=0): a two-sentence text, and each HTML block, is
 * one sentence; without it the text is two. A text longer than the model reads at once
 * (this tiny model: 16 tokens) is split as usual. */
static int sentences_of(mt_service *svc, const char *text, mt_format input, int one_sentence)
{
    size_t len;
    mt_service_request rq = into_pt("en", 1, &text, &len);
    rq.input = input;
    rq.one_sentence = one_sentence;
    mt_service_task *task;
    char err[512];
    ck_assert_msg(mt_service_submit(svc, &rq, &task, err, sizeof err) == MT_SERVICE_OK, "%s", err);
    mt_service_stats st;
    mt_service_task_stats(task, &st);
    mt_service_task_free(task);
    return st.sentences;
}

START_TEST(one_sentence_keeps_each_text_whole)
{
    mt_service *svc = load(1, NULL, NULL);
    const char *two = "He is here. She is there.";
    ck_assert_int_eq(sentences_of(svc, two, MT_FORMAT_TEXT, 0), 2);
    ck_assert_int_eq(sentences_of(svc, two, MT_FORMAT_TEXT, 1), 1);
    ck_assert_int_eq(sentences_of(svc, EN, MT_FORMAT_TEXT, 1), 2); /* too long to read whole */
    ck_assert_int_eq(sentences_of(svc, "He is here.\nShe is there.", MT_FORMAT_TEXT, 1), 1);
    const char *html = "<p>He is here. She is there.</p><p>It is late. Go home.</p>";
    ck_assert_int_eq(sentences_of(svc, html, MT_FORMAT_HTML, 0), 4);
    ck_assert_int_eq(sentences_of(svc, html, MT_FORMAT_HTML, 1), 2);
    /* and it translates: one line out, the edges kept */
    const char *text = "  He is here.\nShe is there. ";
    size_t len;
    mt_service_request rq = into_pt("en", 1, &text, &len);
    rq.one_sentence = 1;
    mt_translation out;
    char err[512];
    ck_assert_msg(mt_service_translate_request(svc, &rq, &out, err, sizeof err) == MT_SERVICE_OK, "%s", err);
    ck_assert_ptr_null(strchr(out.texts[0], '\n'));
    ck_assert(strncmp(out.texts[0], "  ", 2) == 0);
    mt_translation_clear(&out);
    mt_service_free(svc);
}
END_TEST

/* The options a request with `set` gets from a service with `defaults`. */
static int resolve(mt_service *svc, const mt_decoding *given, mt_service_options *o, char *err, size_t errlen)
{
    mt_service_request rq;
    mt_service_request_init(&rq);
    rq.decoding = *given;
    return mt_service_resolve_options(svc, 0, &rq, o, err, errlen);
}

static mt_decoding with(int id, double x)
{
    mt_decoding d = {0};
    char err[256];
    ck_assert_msg(mt_option_set(&d, id, x, 0, "x", err, sizeof err) == 0, "%s", err);
    return d;
}

START_TEST(options_merge_defaults_and_policy)
{
    mt_decoding defaults = with(MT_OPT_BEAM_SIZE, 3);
    char err[256];
    mt_option_set(&defaults, MT_OPT_NO_REPEAT_NGRAM_SIZE, 2, 0, "x", err, sizeof err);
    mt_service *svc = load(1, &defaults, NULL);
    mt_service_options o;
    mt_decoding none = {0};
    /* the service's defaults over the model's */
    ck_assert_int_eq(resolve(svc, &none, &o, err, sizeof err), MT_SERVICE_OK);
    ck_assert_int_eq(o.search.beam_size, 3);
    ck_assert_int_eq(o.search.no_repeat_ngram_size, 2);
    ck_assert_int_eq(o.search.n_best, 1);
    /* the request's over the service's */
    mt_decoding d = with(MT_OPT_BEAM_SIZE, 2);
    ck_assert_int_eq(resolve(svc, &d, &o, err, sizeof err), MT_SERVICE_OK);
    ck_assert_int_eq(o.search.beam_size, 2);
    /* n_best without a beam size widens the beam */
    d = with(MT_OPT_N_BEST, 5);
    ck_assert_int_eq(resolve(svc, &d, &o, err, sizeof err), MT_SERVICE_OK);
    ck_assert_int_eq(o.search.beam_size, 5);
    ck_assert_int_eq(o.search.n_best, 5);
    /* with one, n_best may not exceed it */
    mt_option_set(&d, MT_OPT_BEAM_SIZE, 2, 0, "x", err, sizeof err);
    ck_assert_int_eq(resolve(svc, &d, &o, err, sizeof err), MT_SERVICE_INVALID);
    ck_assert_str_eq(err, "n_best (5) must not exceed beam_size (2)");
    /* sampling without a beam size draws one hypothesis */
    d = with(MT_OPT_SAMPLING_TOPK, 0);
    ck_assert_int_eq(resolve(svc, &d, &o, err, sizeof err), MT_SERVICE_OK);
    ck_assert_int_eq(o.search.beam_size, 1);
    mt_service_free(svc);
}
END_TEST

START_TEST(options_table_checks_and_keys)
{
    char err[256];
    mt_decoding d = {0};
    /* a temperature so small the scaled logits overflow is refused (it gave "") */
    ck_assert_int_eq(mt_option_set(&d, MT_OPT_SAMPLING_TEMPERATURE, 1e-38, 0, "field 'sampling_temperature'", err,
                                   sizeof err),
                     -1);
    ck_assert_str_eq(err, "field 'sampling_temperature' must be a number between 1e-06 and 1000");
    ck_assert_int_eq(d.set, 0);
    ck_assert_int_eq(mt_option_parse(&d, MT_OPT_SAMPLING_TOPP, "0", 0, "--sampling-topp", err, sizeof err), -1);
    ck_assert_str_eq(err, "--sampling-topp must be a number in (0, 1]");
    ck_assert_int_eq(mt_option_parse(&d, MT_OPT_BEAM_SIZE, "9", 8, "field 'beam_size'", err, sizeof err), -1);
    ck_assert_str_eq(err, "field 'beam_size' must be an integer between 1 and 8");
    ck_assert_int_eq(mt_option_parse(&d, MT_OPT_RETURN_SCORES, "yes", 0, "x", err, sizeof err), -1);
    ck_assert_int_eq(mt_option_parse(&d, MT_OPT_RETURN_SCORES, "true", 0, "x", err, sizeof err), 0);
    ck_assert(d.v[MT_OPT_RETURN_SCORES] == 1);
    ck_assert_int_eq(mt_option_parse(&d, MT_OPT_SEED, "12345678901", 0, "x", err, sizeof err), 0);
    ck_assert(d.v[MT_OPT_SEED] == 12345678901.0);
    ck_assert_uint_eq(d.set, (1u << MT_OPT_RETURN_SCORES) | (1u << MT_OPT_SEED));
    /* names and flags */
    ck_assert_int_eq(mt_option_by_name("no_repeat_ngram_size"), MT_OPT_NO_REPEAT_NGRAM_SIZE);
    ck_assert_int_eq(mt_option_by_flag("--beam"), MT_OPT_BEAM_SIZE);
    ck_assert_int_eq(mt_option_by_flag("--beam-size"), MT_OPT_BEAM_SIZE);
    ck_assert_int_eq(mt_option_by_name("nope"), -1);
    /* every batch-key option separates batches; cache keys differ with a cache-key option */
    mt_search_options a, b;
    memset(&a, 0, sizeof a);
    for (int id = 0; id < MT_OPT_COUNT; id++) {
        b = a;
        mt_decoding m = {{0}, 0};
        const mt_option_desc *row = mt_option(id);
        mt_option_set(&m, id, row->type == MT_OPT_BOOL ? 1 : row->max, 0, "x", err, sizeof err);
        mt_decoding_apply(&m, &b);
        if (row->batch_key) ck_assert_msg(!mt_options_same_batch(&a, &b), "%s", row->name);
        unsigned char ka[256], kb[256];
        ck_assert(mt_options_key_size() <= sizeof ka);
        mt_options_key(&a, ka);
        mt_options_key(&b, kb);
        if (row->cache_key) ck_assert_msg(memcmp(ka, kb, mt_options_key_size()) != 0, "%s", row->name);
        else ck_assert_msg(memcmp(ka, kb, mt_options_key_size()) == 0, "%s", row->name);
    }
    ck_assert(mt_options_same_batch(&a, &a));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("service");
    TCase *tc = tcase_create("requests");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, auto_fans_out_and_merges_results_and_stats);
    tcase_add_test(tc, routing_errors_name_the_pairs);
    tcase_add_test(tc, glossary_masks_only_texts_that_lack_a_term);
    tcase_add_test(tc, texts_are_the_best_translations);
    tcase_add_test(tc, shutdown_abort_admits_nothing_more);
    tcase_add_test(tc, refusals_say_full_or_shutting_down);
    tcase_add_test(tc, one_sentence_keeps_each_text_whole);
    tcase_add_test(tc, options_merge_defaults_and_policy);
    suite_add_tcase(s, tc);
    TCase *tt = tcase_create("options");
    tcase_add_test(tt, options_table_checks_and_keys);
    suite_add_tcase(s, tt);
    return mt_check_run(srunner_create(s));
}
