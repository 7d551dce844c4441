/* test_translator.c: segmentation rules and the text pipeline, on a tiny random model
 * that uses the real OPUS-MT tokenizer files from tests/fixtures. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "tiny_model.h"
#include "service_engine.h"

static char dir[256];
static mt_translator *tr;

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/mt-test-translator-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(tiny_model_write_opus(dir), 0);
    char err[512];
    tr = mt_translator_load(dir, NULL, NULL, err, sizeof err);
    ck_assert_msg(tr != NULL, "%s", err);
}

static void teardown(void)
{
    mt_translator_free(tr);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Segments text; checks the pieces concatenate back to it; returns the translatable pieces
 * joined by '|' and the verbatim ones shown as [..] (static buffer). */
static const char *segments_as(int html, const char *text, int max_tokens)
{
    static char out[8192];
    mt_segment *segs;
    char err[256];
    int n = (html ? mt_translator_segment_html : mt_translator_segment)(tr, text, strlen(text), max_tokens,
                                                                       &segs, err, sizeof err);
    ck_assert_msg(n >= 0, "%s", err);
    char joined[8192] = "";
    out[0] = 0;
    for (int i = 0; i < n; i++) {
        strncat(joined, text + segs[i].start, segs[i].len);
        if (segs[i].translate) {
            if (out[0] && out[strlen(out) - 1] != ']')
                strcat(out, "|");
            strncat(out, text + segs[i].start, segs[i].len);
        } else {
            strcat(out, "[");
            strncat(out, text + segs[i].start, segs[i].len);
            strcat(out, "]");
        }
    }
    free(segs);
    ck_assert_str_eq(joined, text);
    return out;
}

static const char *segments(const char *text, int max_tokens) { return segments_as(0, text, max_tokens); }
static const char *html_segments(const char *text) { return segments_as(1, text, 200); }

START_TEST(splits_sentences_by_rule)
{
    ck_assert_str_eq(segments("A dog runs. A cat sleeps.", 200), "A dog runs.[ ]A cat sleeps.");
    ck_assert_str_eq(segments("Mr. Smith met Dr. Jones. They talked.", 200), "Mr. Smith met Dr. Jones.[ ]They talked.");
    ck_assert_str_eq(segments("It costs 3.50 euros. Really?", 200), "It costs 3.50 euros.[ ]Really?");
    ck_assert_str_eq(segments("He said \"Stop.\" Then he left.", 200), "He said \"Stop.\"[ ]Then he left.");
    ck_assert_str_eq(segments("Wait... what? Yes!", 200), "Wait... what?[ ]Yes!");
    ck_assert_str_eq(segments("Use e.g. this one. Or i.e. that.", 200), "Use e.g. this one.[ ]Or i.e. that.");
    ck_assert_str_eq(segments("J. R. Tolkien wrote it.", 200), "J. R. Tolkien wrote it.");
    ck_assert_str_eq(segments("A sign says E.S.E. Electronics. It is red.", 200),
                     "A sign says E.S.E. Electronics.[ ]It is red.");
    ck_assert_str_eq(segments("Am 3. Oktober kam er.", 200), "Am 3. Oktober kam er.");
    /* German and French quotes close a sentence too */
    ck_assert_str_eq(segments("Er sagte: \xe2\x80\x9eKomm her.\xe2\x80\x9c Dann ging er.", 200),
                     "Er sagte: \xe2\x80\x9eKomm her.\xe2\x80\x9c[ ]Dann ging er.");
    ck_assert_str_eq(segments("Il dit \xc2\xab Viens. \xc2\xbb Puis \xc2\xbbNein.\xc2\xab Ja.", 200),
                     "Il dit \xc2\xab Viens. \xc2\xbb[ ]Puis \xc2\xbbNein.\xc2\xab[ ]Ja.");
    ck_assert_str_eq(segments("Il part. \xc2\xab Viens \xc2\xbb, dit-il.", 200),
                     "Il part.[ ]\xc2\xab Viens \xc2\xbb, dit-il.");
    ck_assert_str_eq(segments("version 2.0 is out. see notes", 200), "version 2.0 is out. see notes");
    ck_assert_str_eq(segments("\xe4\xbd\xa0\xe5\xa5\xbd\xe3\x80\x82\xe4\xb8\x96\xe7\x95\x8c\xe3\x80\x82", 200),
                     "\xe4\xbd\xa0\xe5\xa5\xbd\xe3\x80\x82|\xe4\xb8\x96\xe7\x95\x8c\xe3\x80\x82");
}
END_TEST

START_TEST(spaced_abbreviations_never_end_a_sentence)
{
    /* "z. B.", "d. h.", "u. a.", "e. g.", "p. ex." ...: neither period ends a sentence */
    ck_assert_str_eq(segments("Das ist z. B. ein Test. Und d. h. hier.", 200),
                     "Das ist z. B. ein Test.[ ]Und d. h. hier.");
    ck_assert_str_eq(segments("Obst, z. B. Birnen. Gut.", 200), "Obst, z. B. Birnen.[ ]Gut.");
    ck_assert_str_eq(segments("Er kam u. a. mit Dr. Meier. Dann ging er.", 200),
                     "Er kam u. a. mit Dr. Meier.[ ]Dann ging er.");
    ck_assert_str_eq(segments("Z. B. Berlin. Oder d. h. Bonn.", 200), "Z. B. Berlin.[ ]Oder d. h. Bonn.");
    ck_assert_str_eq(segments("Use e. g. Linux. Or i. e. Debian.", 200), "Use e. g. Linux.[ ]Or i. e. Debian.");
    ck_assert_str_eq(segments("Prenez p. ex. Paris. Puis c.-\xc3\xa0-d. Lyon. Fin.", 200),
                     "Prenez p. ex. Paris.[ ]Puis c.-\xc3\xa0-d. Lyon.[ ]Fin.");
    ck_assert_str_eq(segments("Das war 50 v. Chr. Danach kam mehr.", 200), "Das war 50 v. Chr. Danach kam mehr.");
    /* a letter alone still ends a sentence: "vitamin e. Then" */
    ck_assert_str_eq(segments("Take vitamin e. Then go.", 200), "Take vitamin e.[ ]Then go.");
    ck_assert_str_eq(segments("Ask z. Then go.", 200), "Ask z.[ ]Then go.");
    ck_assert_str_eq(segments("Am 3. Oktober kam er. Gut.", 200), "Am 3. Oktober kam er.[ ]Gut.");
}
END_TEST

START_TEST(keeps_lines_and_spacing_verbatim)
{
    ck_assert_str_eq(segments("One.\nTwo.\n\n", 200), "One.[\n]Two.[\n\n]");
    ck_assert_str_eq(segments("  padded line \t", 200), "[  ]padded line[ \t]");
    ck_assert_str_eq(segments("a\r\nb", 200), "a[\r\n]b");
    ck_assert_str_eq(segments("", 200), "");
    ck_assert_str_eq(segments(" \n ", 200), "[ \n ]");
}
END_TEST

START_TEST(long_sentences_are_cut_on_safe_boundaries)
{
    const char *text = "The quick brown fox jumps over the lazy dog, and then it runs into the forest; "
                       "there it meets another fox, which is sleeping under a very large tree near the river";
    const char *s = segments(text, 16);
    ck_assert_msg(strchr(s, '|') || strchr(s, '['), "not split: %s", s);
    /* every piece fits */
    mt_segment *segs;
    char err[256];
    int n = mt_translator_segment(tr, text, strlen(text), 16, &segs, err, sizeof err);
    ck_assert_int_gt(n, 2);
    for (int i = 0; i < n; i++) {
        if (!segs[i].translate)
            continue;
        int32_t *ids;
        int len = mt_translator_encode(tr, text + segs[i].start, segs[i].len, &ids, err, sizeof err);
        ck_assert_int_le(len, 16);
        free(ids);
    }
    free(segs);
    /* punctuation cuts are preferred: the first cut comes after ';' or ',' */
    ck_assert_msg(strstr(s, ";[ ]") || strstr(s, ",[ ]"), "%s", s);
    /* no spaces at all still splits, between characters */
    char word[400];
    memset(word, 'x', sizeof word - 1);
    word[sizeof word - 1] = 0;
    segments(word, 16);
}
END_TEST

/* mt_translator_segment_whole (DeepL's split_sentences=0): one sentence, line breaks read
 * as spaces, edges verbatim; too long to encode whole: the usual segmentation, text kept. */
START_TEST(whole_text_is_one_sentence_unless_too_long)
{
    char text[] = " Hello world. The house is small.\nBye.  ";
    mt_segment *segs;
    char err[256];
    int n = mt_translator_segment_whole(tr, text, strlen(text), 200, &segs, err, sizeof err);
    ck_assert_msg(n == 3, "%d segments (%s)", n, err);
    ck_assert_str_eq(text, " Hello world. The house is small. Bye.  ");
    ck_assert(!segs[0].translate && segs[0].len == 1);
    ck_assert(segs[1].translate && segs[1].start == 1 && segs[1].len == strlen(text) - 3);
    ck_assert(!segs[2].translate && segs[2].len == 2);
    free(segs);

    char longer[] = "Hello world. The house is small.\nThe quick brown fox jumps over the lazy dog.";
    char copy[sizeof longer];
    memcpy(copy, longer, sizeof longer);
    n = mt_translator_segment_whole(tr, longer, strlen(longer), 8, &segs, err, sizeof err);
    ck_assert_msg(n > 3, "%d segments (%s)", n, err);
    ck_assert_str_eq(longer, copy); /* not rewritten: the newline stays a line break */
    int sentences = 0;
    for (int i = 0; i < n; i++) sentences += segs[i].translate;
    ck_assert_int_ge(sentences, 3);
    free(segs);

    char blank[] = " \n ";
    n = mt_translator_segment_whole(tr, blank, strlen(blank), 200, &segs, err, sizeof err);
    ck_assert_int_eq(n, 1);
    ck_assert(!segs[0].translate);
    free(segs);
    ck_assert_int_eq(mt_translator_segment_whole(tr, (char[]){"ok \xc3\x28"}, 5, 200, &segs, err, sizeof err), -1);
}
END_TEST

START_TEST(invalid_utf8_is_rejected_with_position)
{
    mt_segment *segs;
    char err[256];
    ck_assert_int_eq(mt_translator_segment(tr, "ok \xc3\x28 bad", 9, 200, &segs, err, sizeof err), -1);
    ck_assert_str_eq(err, "invalid UTF-8 at byte 3");
    ck_assert_int_eq(mt_utf8_valid("\xed\xa0\x80", 3, err, sizeof err), 0); /* surrogate */
    ck_assert_int_eq(mt_utf8_valid("\xf0\x9f\x98\x80", 4, err, sizeof err), 1); /* emoji */
}
END_TEST

static mt_service *service(int workers, int max_sentences)
{
    char err[512];
    mt_service_config cfg;
    mt_service_config_default(&cfg);
    cfg.workers = workers;
    cfg.max_sentences = max_sentences;
    mt_service *svc = mt_service_create(&tr, 1, &cfg, NULL, err, sizeof err);
    ck_assert_msg(svc != NULL, "%s", err);
    return svc;
}

START_TEST(pipeline_keeps_order_lines_and_n_best)
{
    char err[512];
    mt_service *svc = service(1, 2);
    mt_service_options o;
    mt_service_options_default(svc, 0, &o);
    o.search.beam_size = 3;
    o.search.n_best = 2;
    o.search.max_length = 6;
    const char *texts[] = {"A dog runs. A cat sleeps.", "", "Line one\nLine two", "Hello"};
    size_t lens[4];
    for (int i = 0; i < 4; i++)
        lens[i] = strlen(texts[i]);
    mt_translation out[4];
    ck_assert_msg(mt_service_translate(svc, 0, &o, 4, texts, lens, out, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(out[0].n_best, 2);
    ck_assert_str_eq(out[1].texts[0], "");
    ck_assert_ptr_nonnull(strchr(out[2].texts[0], '\n')); /* the line break survives */
    ck_assert_ptr_null(strchr(out[3].texts[0], '\n'));
    ck_assert_float_le(out[3].scores[1], out[3].scores[0]);
    /* the same sentence alone gives the same result as inside the batch */
    mt_translation single;
    ck_assert_int_eq(mt_service_translate(svc, 0, &o, 1, &texts[3], &lens[3], &single, err, sizeof err), 0);
    ck_assert_str_eq(single.texts[0], out[3].texts[0]);
    mt_translation_clear(&single);
    /* ids in, ids out */
    o.input = MT_FORMAT_IDS;
    o.output_ids = 1;
    o.search.n_best = 1;
    const char *ids_text = "100 200 300";
    size_t ids_len = strlen(ids_text);
    ck_assert_int_eq(mt_service_translate(svc, 0, &o, 1, &ids_text, &ids_len, &single, err, sizeof err), 0);
    for (const char *p = single.texts[0]; *p; p++)
        ck_assert_msg((*p >= '0' && *p <= '9') || *p == ' ', "not ids: %s", single.texts[0]);
    mt_translation_clear(&single);
    const char *bad_ids = "100 x";
    size_t bad_len = strlen(bad_ids);
    ck_assert_int_eq(mt_service_translate(svc, 0, &o, 1, &bad_ids, &bad_len, &single, err, sizeof err),
                     MT_SERVICE_INVALID);
    ck_assert_ptr_nonnull(strstr(err, "bad source id at byte 4"));
    for (int i = 0; i < 4; i++)
        mt_translation_clear(&out[i]);
    mt_service_free(svc);
}
END_TEST

/* Texts through two workers and batches of 3 give what one worker gives. */
START_TEST(service_workers_agree_with_one_worker)
{
    char err[512], buf[12][64];
    const char *texts[12];
    size_t lens[12];
    for (int i = 0; i < 12; i++) {
        snprintf(buf[i], sizeof buf[i], "Sentence %d has %s words. Then %d more.", i, i % 3 ? "some" : "many", i * 7);
        texts[i] = buf[i];
        lens[i] = strlen(buf[i]);
    }
    mt_translation one[12], two[12];
    mt_service *svc = service(1, 3);
    mt_service_options o;
    mt_service_options_default(svc, 0, &o);
    o.search.max_length = 6;
    ck_assert_msg(mt_service_translate(svc, 0, &o, 12, texts, lens, one, err, sizeof err) == 0, "%s", err);
    mt_service_free(svc);
    svc = service(2, 3);
    ck_assert_msg(mt_service_translate(svc, 0, &o, 12, texts, lens, two, err, sizeof err) == 0, "%s", err);
    for (int i = 0; i < 12; i++) {
        ck_assert_str_eq(one[i].texts[0], two[i].texts[0]);
        ck_assert_float_eq(one[i].scores[0], two[i].scores[0]);
        mt_translation_clear(&one[i]);
        mt_translation_clear(&two[i]);
    }
    mt_service_free(svc);
}
END_TEST

static void note_done(mt_service_job *job, void *user)
{
    (void)job;
    *(int *)user += 1;
}

/* A past deadline, a cancelled job, a full queue, a bad max_length: each reported as such. */
START_TEST(service_reports_deadline_cancel_busy_and_bad_options)
{
    char err[512];
    mt_service *svc = service(1, 4);
    mt_service_options o;
    mt_service_options_default(svc, 0, &o);
    const char *text = "A dog runs.";
    size_t len = strlen(text);
    mt_translation out;
    o.deadline = mt_now() - 1;
    ck_assert_int_eq(mt_service_translate(svc, 0, &o, 1, &text, &len, &out, err, sizeof err), MT_SERVICE_DEADLINE);
    ck_assert_msg(strstr(err, "deadline") != NULL, "the message names the deadline: %s", err);
    o.deadline = 0;
    mt_service_job *job;
    ck_assert_int_eq(mt_service_prepare(svc, 0, &o, 1, &text, &len, &job, err, sizeof err), MT_SERVICE_OK);
    ck_assert_int_eq(mt_service_job_cancel(job, MT_SERVICE_CLIENT_GONE), 1);
    ck_assert_int_eq(mt_service_job_cancel(job, MT_SERVICE_SHUTDOWN), 0); /* the first reason stays */
    int done = 0;
    ck_assert_int_eq(mt_service_run(svc, job, note_done, &done), MT_SERVICE_OK);
    mt_service_purge(svc);
    mt_service_free(svc); /* joins the workers: the callback has run */
    ck_assert_int_eq(done, 1);
    ck_assert_int_eq(mt_service_job_outcome(job, NULL), MT_SERVICE_CLIENT_GONE);
    mt_service_job_free(job);
    o.search.max_length = 1 << 20;
    svc = service(1, 4);
    ck_assert_int_eq(mt_service_prepare(svc, 0, &o, 1, &text, &len, &job, err, sizeof err), MT_SERVICE_INVALID);
    ck_assert_ptr_nonnull(strstr(err, "exceeds the model's limit"));
    mt_service_free(svc);
}
END_TEST

/* The target-language token is chosen per request and prepended in one place. */
START_TEST(service_selects_the_requested_target_token)
{
    char err[512];
    int32_t por = mt_translator_target_token(tr, "por"), pob = mt_translator_target_token(tr, "pob");
    ck_assert_int_ge(por, 0);
    ck_assert_int_ge(pob, 0);
    ck_assert_int_eq(mt_translator_target_token(tr, "xyz"), -1);
    int32_t *ids;
    int n = mt_translator_encode_to(tr, pob, 0, "Hello", 5, &ids, err, sizeof err);
    ck_assert_int_ge(n, 2);
    ck_assert_int_eq(ids[0], pob);
    free(ids);
    int found = 0;
    for (int k = 0; k < mt_translator_target_count(tr); k++) {
        char code[33];
        if (mt_translator_target_code(tr, k, code, sizeof code) == 0)
            found += !strcmp(code, "por") + !strcmp(code, "pob");
    }
    ck_assert_int_eq(found, 2);
    /* through the service: the request's target selects the token, hence the input */
    mt_service *svc = service(1, 4);
    mt_service_options o;
    mt_service_options_default(svc, 0, &o);
    o.search.max_length = 6;
    const char *text = "A dog runs.";
    size_t len = strlen(text);
    mt_translation a, b;
    o.target_lang = "por";
    ck_assert_msg(mt_service_translate(svc, 0, &o, 1, &text, &len, &a, err, sizeof err) == 0, "%s", err);
    o.target_lang = "pob";
    ck_assert_msg(mt_service_translate(svc, 0, &o, 1, &text, &len, &b, err, sizeof err) == 0, "%s", err);
    ck_assert_float_ne(a.scores[0], b.scores[0]);
    mt_translation_clear(&a);
    mt_translation_clear(&b);
    mt_service_free(svc);
}
END_TEST

START_TEST(language_pair_and_name_come_from_the_directory)
{
    ck_assert_str_eq(mt_translator_source_lang(tr), "en");
    ck_assert_str_eq(mt_translator_target_lang(tr), "pt");
    ck_assert_str_eq(mt_translator_name(tr), strrchr(dir, '/') + 1);
    /* multilingual: this vocabulary has >>por<< and >>pob<< */
    char err[512];
    mt_translator *por = mt_translator_load(dir, "en", "por", err, sizeof err);
    ck_assert_msg(por != NULL, "%s", err);
    int32_t *ids;
    int n = mt_translator_encode(por, "Hello", 5, &ids, err, sizeof err);
    ck_assert_int_ge(n, 2);
    ck_assert_int_eq(ids[0], mt_tokenizer_source_id(mt_translator_tokenizer(por), ">>por<<"));
    free(ids);
    mt_translator_free(por);
    ck_assert_ptr_null(mt_translator_load(dir, "en", "xyz", err, sizeof err));
    ck_assert_str_eq(err, "target language 'xyz' is not offered by this model; valid targets: pob, por");
}
END_TEST

START_TEST(join_uses_the_kth_hypothesis_or_the_last_and_the_mean_score)
{
    /* "One. Two.\n" -> [One.][ ][Two.][\n]; the first sentence has 2 hypotheses, the
     * second 1, so its only one stands in the second-best translation too. */
    const char *text = "One. Two.\n";
    mt_segment segs[] = {{0, 4, 1}, {4, 1, 0}, {5, 4, 1}, {9, 1, 0}};
    char *a[] = {"Eins.", "Ein."}, *b[] = {"Zwei."};
    float sa[] = {-0.5f, -1.5f}, sb[] = {-0.25f};
    mt_sentence_hyps hyps[] = {{a, sa, 2}, {b, sb, 1}};
    float score;
    char *out = mt_translator_join(text, segs, 4, hyps, 0, MT_JOIN_TEXT, &score);
    ck_assert_str_eq(out, "Eins. Zwei.\n");
    ck_assert_float_eq_tol(score, -0.375f, 1e-6f);
    free(out);
    out = mt_translator_join(text, segs, 4, hyps, 1, MT_JOIN_TEXT, &score);
    ck_assert_str_eq(out, "Ein. Zwei.\n");
    ck_assert_float_eq_tol(score, -0.875f, 1e-6f);
    free(out);
    /* ids output: verbatim segments are dropped, sentences joined by the separator */
    out = mt_translator_join(text, segs, 4, hyps, 0, MT_JOIN_IDS, &score);
    ck_assert_str_eq(out, "Eins. Zwei.");
    free(out);
    /* a sentence without hypotheses contributes nothing, not even to the score */
    hyps[1].n = 0;
    out = mt_translator_join(text, segs, 4, hyps, 0, MT_JOIN_TEXT, &score);
    ck_assert_str_eq(out, "Eins. \n");
    ck_assert_float_eq_tol(score, -0.5f, 1e-6f);
    free(out);
    /* only verbatim segments: the text comes back as it was, score 0 */
    out = mt_translator_join("\n\n", (mt_segment[]){{0, 2, 0}}, 1, NULL, 0, MT_JOIN_TEXT, &score);
    ck_assert_str_eq(out, "\n\n");
    ck_assert_float_eq(score, 0.0f);
    free(out);
}
END_TEST

START_TEST(html_keeps_markup_and_translates_text_nodes)
{
    ck_assert_str_eq(html_segments("<p>A dog runs. A cat sleeps.</p>"), "[<p>]A dog runs.[ ]A cat sleeps.[</p>]");
    /* inline markup separates text nodes; spacing around them stays verbatim */
    ck_assert_str_eq(html_segments("<li>A <b>big</b> dog.</li>"), "[<li>]A[ <b>]big[</b> ]dog.[</li>]");
    /* a newline inside a text node is a space, not a line break */
    ck_assert_str_eq(html_segments("<p>\n  A dog\n  runs. It\nsleeps.\n</p>"),
                     "[<p>\n  ]A dog\n  runs.[ ]It\nsleeps.[\n</p>]");
    /* quoted attributes may hold '>'; void and self-closing elements have no content */
    ck_assert_str_eq(html_segments("<a title=\"x > y\" href=/z>Link.</a><img src=a.png alt=\"A dog.\"/><br>Next"),
                     "[<a title=\"x > y\" href=/z>]Link.[</a><img src=a.png alt=\"A dog.\"/><br>]Next");
    /* comments, declarations, CDATA and processing instructions are markup */
    ck_assert_str_eq(html_segments("<!DOCTYPE html><!-- A <b>note</b>. -->Hi.<![CDATA[ x ]]><?xml v?>"),
                     "[<!DOCTYPE html><!-- A <b>note</b>. -->]Hi.[<![CDATA[ x ]]><?xml v?>]");
    /* raw text elements and translate="no" / notranslate content are never translated */
    ck_assert_str_eq(html_segments("<SCRIPT>var a = \"<p>No.</p>\";</script>Yes."),
                     "[<SCRIPT>var a = \"<p>No.</p>\";</script>]Yes.");
    ck_assert_str_eq(html_segments("<style>p { x: 1 }</style><textarea>Keep.</textarea>Go."),
                     "[<style>p { x: 1 }</style><textarea>Keep.</textarea>]Go.");
    ck_assert_str_eq(html_segments("<span translate=\"no\">Brand <span>Name</span> here</span> sells."),
                     "[<span translate=\"no\">Brand <span>Name</span> here</span> ]sells.");
    ck_assert_str_eq(html_segments("<div class='big notranslate'>Keep <div>it</div></div>Go."),
                     "[<div class='big notranslate'>Keep <div>it</div></div>]Go.");
    ck_assert_str_eq(html_segments("<span translate=\"yes\">Go.</span>"), "[<span translate=\"yes\">]Go.[</span>]");
    /* a '<' that cannot start a tag is text; an unterminated tag is kept to the end */
    ck_assert_str_eq(html_segments("a < b is true. <b"), "a < b is true.[ <b]");
    /* nodes without words are layout */
    ck_assert_str_eq(html_segments("<td>&nbsp;|&nbsp;</td><td> \xc2\xbb </td><td>&amp;</td>"),
                     "[<td>&nbsp;|&nbsp;</td><td> \xc2\xbb </td><td>&amp;</td>]");
    ck_assert_str_eq(html_segments("<td>Tom &amp; Jerry</td>"), "[<td>]Tom &amp; Jerry[</td>]");
    ck_assert_str_eq(html_segments(""), "");
    mt_segment *segs;
    char err[256];
    ck_assert_int_eq(mt_translator_segment_html(tr, "<p>\xc3\x28</p>", 8, 200, &segs, err, sizeof err), -1);
    ck_assert_str_eq(err, "invalid UTF-8 at byte 3");
}
END_TEST

START_TEST(html_text_is_decoded_for_encoding_and_escaped_when_joined)
{
    char err[256];
    int32_t *a, *b;
    const char *html = "Tom &amp; Jerry &lt;3 &#233;&#xE9;&eacute; &euro; &bogus; &#; &amp";
    const char *plain = "Tom & Jerry <3 \xc3\xa9\xc3\xa9\xc3\xa9 \xe2\x82\xac &bogus; &#; &amp";
    int na = mt_translator_encode_html(tr, html, strlen(html), &a, err, sizeof err);
    int nb = mt_translator_encode(tr, plain, strlen(plain), &b, err, sizeof err);
    ck_assert_int_eq(na, nb);
    ck_assert_int_eq(memcmp(a, b, sizeof *a * (size_t)na), 0);
    free(a);
    free(b);
    /* invalid code points decode to U+FFFD, as browsers do */
    na = mt_translator_encode_html(tr, "&#0;&#xD800;&#99999999;", 23, &a, err, sizeof err);
    nb = mt_translator_encode(tr, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 9, &b, err, sizeof err);
    ck_assert_int_eq(na, nb);
    ck_assert_int_eq(memcmp(a, b, sizeof *a * (size_t)na), 0);
    free(a);
    free(b);

    const char *text = "<b>x</b>";
    mt_segment segs[] = {{0, 3, 0}, {3, 1, 1}, {4, 4, 0}};
    char *h[] = {"a < b & c > d"};
    float sc[] = {-1.0f}, score;
    mt_sentence_hyps hyps[] = {{h, sc, 1}};
    char *out = mt_translator_join(text, segs, 3, hyps, 0, MT_JOIN_HTML, &score);
    ck_assert_str_eq(out, "<b>a &lt; b &amp; c &gt; d</b>");
    free(out);
}
END_TEST

START_TEST(html_pipeline_translates_each_text_node_as_plain_text_would)
{
    char err[512];
    mt_service *svc = service(1, 32);
    mt_service_options o;
    mt_service_options_default(svc, 0, &o);
    o.search.max_length = 6;
    const char *nodes[] = {"A dog runs.", "It & a cat sleep.", "Hello"};
    size_t lens[3];
    for (int i = 0; i < 3; i++)
        lens[i] = strlen(nodes[i]);
    mt_translation plain[3];
    ck_assert_msg(mt_service_translate(svc, 0, &o, 3, nodes, lens, plain, err, sizeof err) == 0, "%s", err);
    char want[2048];
    size_t n = 0;
    n += (size_t)snprintf(want + n, sizeof want - n, "<p class=\"x\">");
    for (int i = 0; i < 2; i++) { /* the two sentences of the paragraph, escaped */
        for (const char *p = plain[i].texts[0]; *p; p++)
            n += (size_t)snprintf(want + n, sizeof want - n, "%s",
                                  *p == '&' ? "&amp;" : *p == '<' ? "&lt;" : *p == '>' ? "&gt;" : (char[]){*p, 0});
        n += (size_t)snprintf(want + n, sizeof want - n, i == 0 ? " " : "</p>\n<code translate=no>A dog.</code> ");
    }
    snprintf(want + n, sizeof want - n, "%s<br/>", plain[2].texts[0]);
    const char *html = "<p class=\"x\">A dog runs. It &amp; a cat sleep.</p>\n<code translate=no>A dog.</code> Hello<br/>";
    size_t html_len = strlen(html);
    o.input = MT_FORMAT_HTML;
    mt_translation got;
    ck_assert_msg(mt_service_translate(svc, 0, &o, 1, &html, &html_len, &got, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(got.texts[0], want);
    mt_translation_clear(&got);
    for (int i = 0; i < 3; i++)
        mt_translation_clear(&plain[i]);
    mt_service_free(svc);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("translator");
    TCase *tc = tcase_create("pipeline");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, splits_sentences_by_rule);
    tcase_add_test(tc, spaced_abbreviations_never_end_a_sentence);
    tcase_add_test(tc, keeps_lines_and_spacing_verbatim);
    tcase_add_test(tc, long_sentences_are_cut_on_safe_boundaries);
    tcase_add_test(tc, whole_text_is_one_sentence_unless_too_long);
    tcase_add_test(tc, invalid_utf8_is_rejected_with_position);
    tcase_add_test(tc, pipeline_keeps_order_lines_and_n_best);
    tcase_add_test(tc, service_workers_agree_with_one_worker);
    tcase_add_test(tc, service_reports_deadline_cancel_busy_and_bad_options);
    tcase_add_test(tc, service_selects_the_requested_target_token);
    tcase_add_test(tc, language_pair_and_name_come_from_the_directory);
    tcase_add_test(tc, join_uses_the_kth_hypothesis_or_the_last_and_the_mean_score);
    tcase_add_test(tc, html_keeps_markup_and_translates_text_nodes);
    tcase_add_test(tc, html_text_is_decoded_for_encoding_and_escaped_when_joined);
    tcase_add_test(tc, html_pipeline_translates_each_text_node_as_plain_text_would);
    suite_add_tcase(s, tc);
    return mt_check_run(srunner_create(s));
}
