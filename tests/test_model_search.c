/* test_model_search.c: the search's invariants: batch, thread and split independence,
 * shared pools, n-best order, greedy = beam 1, cancellation, invalid inputs, limits. */
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

static Suite *model_suite(void)
{
    Suite *s = suite_create("model-search");
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
    return s;
}

int main(void)
{
    mt_process_setup(NULL, NULL);
    return mt_check_run(srunner_create(model_suite()));
}
