/* render.c: response rendering: a finished translation task as the answer of either
 * request form (native: translations, scores, n-best lists, model, languages, timings,
 * token scores and alignments; LibreTranslate: translatedText, alternatives,
 * detectedLanguage), and detection results. */
#include "deepl.h"
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double round3(double x) { return floor(x * 1000.0 + 0.5) / 1000.0; }

/* Text t's detectedLanguage: the language of the route it took, and how sure detection was. */
static json_t *detected_json(const mt_service_task *task, int t)
{
    double conf = (double)(long)(mt_service_task_confidence(task, t) * 10 + 0.5) / 10.0;
    return json_pack("{s:f, s:s}", "confidence", conf, "language", mt_service_task_route(task, t)->source);
}

/* The translations as the response's arrays: texts and scores (best), n-best lists
 * (native) and alternatives (LibreTranslate), one detectedLanguage entry per text. */
typedef struct {
    json_t *texts, *scores, *nbest, *alts, *detected;
} answer_parts;

static void parts_free(answer_parts *p)
{
    json_decref(p->texts), json_decref(p->scores), json_decref(p->nbest);
    json_decref(p->alts), json_decref(p->detected);
}

static int build_parts(req_ctx *c, const mt_translation *res, int n_texts, answer_parts *p)
{
    *p = (answer_parts){json_array(), json_array(), json_array(), json_array(), json_array()};
    if (!p->texts || !p->scores || !p->nbest || !p->alts || !p->detected) return -1;
    for (int t = 0; t < n_texts; t++) {
        json_t *list = json_array(), *alt = json_array();
        for (int k = 0; list && alt && k < res[t].n_best; k++) {
            const char *str = res[t].texts[k];
            float score = res[t].scores[k];
            if (k == 0) {
                json_array_append_new(p->texts, json_string(str));
                json_array_append_new(p->scores, json_real(score));
            } else {
                json_array_append_new(alt, json_string(str));
            }
            json_array_append_new(list, json_pack("{s:s, s:f}", "text", str, "score", (double)score));
        }
        json_array_append_new(p->nbest, list);
        json_array_append_new(p->alts, alt);
        json_array_append_new(p->detected, detected_json(c->task, t));
    }
    return 0;
}

/* LibreTranslate's answer: translatedText (and alternatives, detectedLanguage), a string
 * or an array as the request's q was. Takes the parts. */
static json_t *libre_body(req_ctx *c, int n_best, answer_parts *p)
{
    json_t *body;
    int detected = mt_service_task_detected(c->task);
    if (c->req.text_is_array) {
        body = json_pack("{s:o}", "translatedText", p->texts);
        if (n_best > 1) json_object_set_new(body, "alternatives", p->alts);
        else json_decref(p->alts);
        if (detected) json_object_set_new(body, "detectedLanguage", p->detected);
        else json_decref(p->detected);
    } else {
        body = json_pack("{s:O}", "translatedText", json_array_get(p->texts, 0));
        if (n_best > 1) json_object_set(body, "alternatives", json_array_get(p->alts, 0));
        if (detected) json_object_set(body, "detectedLanguage", json_array_get(p->detected, 0));
        json_decref(p->texts), json_decref(p->alts), json_decref(p->detected);
    }
    json_decref(p->scores);
    json_decref(p->nbest);
    return body;
}

static json_t *pairs_json(const int (*p)[2], int n)
{
    json_t *a = json_array();
    for (int i = 0; a && i < n; i++) json_array_append_new(a, json_pack("[ii]", p[i][0], p[i][1]));
    return a;
}

/* return_scores / return_alignments: per text, of the best translation. */
static void add_extras(json_t *body, const mt_request *rq, const mt_translation *res)
{
    unsigned set = rq->decoding.set;
    if ((set & (1u << MT_OPT_RETURN_SCORES)) && rq->decoding.v[MT_OPT_RETURN_SCORES] != 0) {
        json_t *all = json_array();
        for (int t = 0; t < rq->n_texts; t++) {
            json_t *a = json_array();
            for (int q = 0; res[t].token_scores && q < res[t].n_tokens; q++)
                json_array_append_new(a, json_real(res[t].token_scores[q]));
            json_array_append_new(all, a);
        }
        json_object_set_new(body, "token_scores", all);
    }
    if ((set & (1u << MT_OPT_RETURN_ALIGNMENTS)) && rq->decoding.v[MT_OPT_RETURN_ALIGNMENTS] != 0) {
        json_t *words = json_array(), *tokens = json_array();
        for (int t = 0; t < rq->n_texts; t++) {
            json_array_append_new(words, pairs_json((const int(*)[2])res[t].alignments, res[t].n_alignments));
            json_array_append_new(tokens, pairs_json((const int(*)[2])res[t].token_alignments,
                                                     res[t].token_alignments ? res[t].n_tokens : 0));
        }
        json_object_set_new(body, "alignments", words);
        json_object_set_new(body, "token_alignments", tokens);
    }
}

/* The native answer: translations, scores, model, languages, timings (of every part),
 * n_best. Takes the parts. */
static json_t *native_body(mt_server *s, req_ctx *c, int n_best, const mt_translation *res, answer_parts *p)
{
    const mt_route *route = mt_service_task_route(c->task, 0);
    mt_service_stats st;
    mt_service_task_stats(c->task, &st);
    double now = mt_now();
    double queue_ms = st.t_started > 0 ? (st.t_started - st.t_submitted) * 1e3 : 0;
    double translate_ms = st.t_started > 0 && st.t_done > 0 ? (st.t_done - st.t_started) * 1e3 : 0;
    json_t *body = json_pack("{s:o, s:o, s:s, s:s, s:s, s:{s:f, s:f, s:f}}", "translations", p->texts,
                             "scores", p->scores, "model", mt_service_model_info(s->svc, route->model)->name,
                             "source", route->source, "target", route->target, "timing_ms", "queue",
                             round3(queue_ms), "translate", round3(translate_ms), "total",
                             round3((now - c->t_start) * 1e3));
    if (body && route->hop1 >= 0) { /* through a pivot language: both steps' models */
        const mt_route *a = mt_langs_get(mt_service_langs(s->svc), route->hop1);
        const mt_route *b = mt_langs_get(mt_service_langs(s->svc), route->hop2);
        json_object_set_new(body, "pivot", json_pack("{s:s, s:[s, s]}", "via", a->target, "models",
                                                     mt_service_model_info(s->svc, a->model)->name,
                                                     mt_service_model_info(s->svc, b->model)->name));
    }
    if (body && n_best > 1) json_object_set_new(body, "n_best", p->nbest);
    else json_decref(p->nbest);
    if (body) add_extras(body, &c->req, res);
    if (body && mt_service_task_detected(c->task)) {
        if (mt_service_task_detected(c->task) == 2) json_object_set(body, "detectedLanguage", p->detected);
        else json_object_set_new(body, "detectedLanguage", detected_json(c->task, 0));
    }
    json_decref(p->alts);
    json_decref(p->detected);
    return body;
}

json_t *srv_render_translation(mt_server *s, req_ctx *c)
{
    if (c->req.form == MT_FORM_DEEPL) return srv_deepl_render(s, c);
    const mt_translation *res = mt_service_task_results(c->task);
    int n_best = c->req.n_texts > 0 ? res[0].n_best : 1;
    answer_parts p;
    if (build_parts(c, res, c->req.n_texts, &p)) {
        parts_free(&p);
        return NULL;
    }
    return c->req.form == MT_FORM_LIBRE ? libre_body(c, n_best, &p) : native_body(s, c, n_best, res, &p);
}

json_t *srv_render_detection(const mt_detect_result *res, int n)
{
    json_t *arr = json_array();
    for (int i = 0; arr && i < n; i++)
        json_array_append_new(arr, json_pack("{s:f, s:s}", "confidence",
                                             (double)(long)(res[i].confidence * 10 + 0.5) / 10.0,
                                             "language", res[i].code));
    return arr;
}
