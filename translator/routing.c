/* routing.c: where a request's texts go. The service's routes (mt_service_route), language
 * detection among the languages the models read or write (mt_service_detect), and for
 * source "auto" each text's own route (mt_service_detect_routes, used by submit.c): a text
 * already in the target language answered unchanged, one in a language no model here
 * translates refused, texts without evidence on the request's language. Everything here
 * reads the service (its routes and detectors, fixed once loaded) and writes only the
 * caller's arrays: safe from any thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "status.h"
#include "service_impl.h"

/* MIN_FOREIGN_LETTERS: the wide detector's verdict is taken only on texts
 * this long, and only when it names one language: on Multi30k val (1,000 captions each)
 * that refuses no English or German caption and 86% of the French ones, where 20 letters
 * or a tie of up to three languages refused 3 to 9 English ones; shorter texts get
 * confident nonsense ("OK" is Slovenian). */
enum { MAX_DETECT = 8, MIN_FOREIGN_LETTERS = 30 };

int mt_service_route(const mt_service *svc, const char *source, const char *target, int *detected, char *err,
                     size_t errlen)
{
    return mt_langs_resolve(svc->langs, source, target, detected, err, errlen);
}

int mt_service_can_detect(const mt_service *svc) { return svc->detector != NULL; }

/* The route from `code` into target, or -1. */
static int route_from(const mt_service *svc, const char *code, const char *target)
{
    for (int r = 0; r < mt_langs_count(svc->langs); r++) {
        const mt_route *rt = mt_langs_get(svc->langs, r);
        if (strcasecmp(rt->source, code) == 0 && strcasecmp(rt->target, target) == 0) return r;
    }
    return -1;
}

int mt_service_detect(const mt_service *svc, const char *text, size_t len, const char *target,
                      mt_detect_result *out, int max)
{
    if (!svc->detector) return -1;
    mt_detect_result all[MAX_DETECT];
    int n = mt_detect(svc->detector, text, len, all, MAX_DETECT);
    if (n <= 0) return n;
    int k = 0;
    for (int i = 0; i < n && k < max; i++)
        if (!target || route_from(svc, all[i].code, target) >= 0) out[k++] = all[i];
    return k;
}

/* The route of texts with no evidence of their own: what the request's texts taken
 * together are in, else the first model into target; *conf its confidence. -1: none
 * translates into target, or no memory. */
static int fallback_route(const mt_service *svc, const mt_service_request *rq, double *conf)
{
    size_t total = 0;
    for (int i = 0; i < rq->n; i++) total += rq->lens[i] + 1;
    char *all = malloc(total + 1);
    if (!all) return -1;
    size_t off = 0;
    for (int i = 0; i < rq->n; i++) {
        memcpy(all + off, rq->texts[i], rq->lens[i]);
        off += rq->lens[i];
        all[off++] = '\n';
    }
    mt_detect_result res[1];
    int m = mt_service_detect(svc, all, off, rq->target, res, 1);
    free(all);
    *conf = 0;
    if (m > 0) {
        *conf = res[0].confidence;
        return route_from(svc, res[0].code, rq->target);
    }
    int det;
    char e[256];
    int r = mt_langs_resolve(svc->langs, "auto", rq->target, &det, e, sizeof e);
    for (int i = 0; r < 0 && i < mt_langs_count(svc->langs); i++)
        if (strcasecmp(mt_langs_get(svc->langs, i)->target, rq->target) == 0) r = i;
    return r;
}

/* 1 when one of the models reads or writes language code. */
static int served(const mt_service *svc, const char *code)
{
    for (int r = 0; r < mt_langs_count(svc->langs); r++) {
        const mt_route *rt = mt_langs_get(svc->langs, r);
        if (strcasecmp(rt->source, code) == 0 || strcasecmp(rt->target, code) == 0) return 1;
    }
    return 0;
}

/* Letters in text: ASCII letters and the first bytes of other UTF-8 characters. */
static int letters(const char *s, size_t n)
{
    int k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        k += (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0xc0;
    }
    return k;
}

/* A text in a language none of the models reads: the wide detector names one language,
 * not ours (the narrow one would have forced it onto one of ours, "Bonjour tout le monde"
 * becoming English). Its code goes to out; 1 when so. */
static int foreign(const mt_service *svc, const char *text, size_t len, char *out, size_t size)
{
    if (!svc->wide || letters(text, len) < MIN_FOREIGN_LETTERS) return 0;
    mt_detect_result r[MAX_DETECT];
    if (mt_detect(svc->wide, text, len, r, MAX_DETECT) != 1 || served(svc, r[0].code)) return 0;
    snprintf(out, size, "%s", r[0].code);
    return 1;
}

/* The languages the models read, for messages: "de, en". */
static void sources(const mt_service *svc, char *out, size_t size)
{
    size_t used = 0;
    out[0] = 0;
    for (int r = 0; r < mt_langs_count(svc->langs) && used < size; r++) {
        const char *src = mt_langs_get(svc->langs, r)->source;
        int seen = 0;
        for (int q = 0; q < r; q++) seen |= strcasecmp(mt_langs_get(svc->langs, q)->source, src) == 0;
        if (!seen) used += (size_t)snprintf(out + used, size - used, "%s%s", used ? ", " : "", src);
    }
}

/* source "auto" with a detector: each text's route (route_of, conf). Detection runs
 * among every language the models read or write: a text already in the target language
 * is MT_ROUTE_SAME (answered unchanged); one in a language with no model into target, or in
 * a language no model reads at all, is refused naming it (MT_SERVICE_INVALID, message in
 * err), where translating it with the wrong model would make nonsense. Texts without
 * evidence (a name, a number) take the request's language, else the first model into
 * target. 1 when done, 0 when the request is not one for detection (or nothing
 * translates into target: the plain resolution says so), -1 out of memory, -2 refused. */
int mt_service_detect_routes(const mt_service *svc, const mt_service_request *rq, int *route_of, double *conf,
                             mt_route *same_route, char ***same, char *err, size_t errlen)
{
    if (!svc->detector || !rq->source || strcasecmp(rq->source, "auto") != 0 || !rq->target || rq->n == 0)
        return 0;
    int into = -1;
    for (int r = 0; r < mt_langs_count(svc->langs) && into < 0; r++)
        if (strcasecmp(mt_langs_get(svc->langs, r)->target, rq->target) == 0) into = r;
    if (into < 0) return 0;
    /* ids in or out: no text to give back, nor to detect in; the old rule holds */
    int by_text = rq->input != MT_FORMAT_IDS && !rq->output_ids;
    int fallback = -2, any_same = 0;
    double fallback_conf = 0;
    char codes[64], known[256];
    for (int i = 0; i < rq->n; i++) {
        const char *at = rq->n > 1 ? " " : "";
        char index[24] = "";
        if (rq->n > 1) snprintf(index, sizeof index, "%d", i);
        if (by_text && foreign(svc, rq->texts[i], rq->lens[i], codes, sizeof codes)) {
            sources(svc, known, sizeof known);
            mt_error(MT_SERVICE_INVALID, err, errlen, "text%s%s is in a language no model here translates "
                     "(detected: %s); source languages: %s", at, index, codes, known);
            return -2;
        }
        /* A clear answer is one language; several are within 3% of each other (a tie: "A
         * woman walks her dog." is de 50.1, en 49.9), and the best of them with a model
         * into target is taken, as before. */
        mt_detect_result res[MAX_DETECT];
        int n = mt_detect(svc->detector, rq->texts[i], rq->lens[i], res, MAX_DETECT);
        int clear = n == 1 && by_text;
        route_of[i] = -1;
        conf[i] = 0;
        if (clear && strcasecmp(res[0].code, rq->target) == 0) {
            route_of[i] = MT_ROUTE_SAME;
            conf[i] = res[0].confidence;
            any_same = 1;
            continue;
        }
        for (int k = 0; k < n && route_of[i] < 0; k++)
            if ((route_of[i] = route_from(svc, res[k].code, rq->target)) >= 0) conf[i] = res[k].confidence;
        if (route_of[i] >= 0) continue;
        if (clear) {
            sources(svc, known, sizeof known);
            mt_error(MT_SERVICE_INVALID, err, errlen, "text%s%s is in %s (detected), and no model here translates "
                     "%s into %s; source languages: %s", at, index, res[0].code, res[0].code, rq->target, known);
            return -2;
        }
        if (fallback == -2) fallback = fallback_route(svc, rq, &fallback_conf);
        if (fallback < 0) return 0;
        route_of[i] = fallback;
        conf[i] = fallback_conf;
    }
    if (!any_same) return 1;
    *same_route = *mt_langs_get(svc->langs, into);
    snprintf(same_route->source, sizeof same_route->source, "%s", same_route->target);
    if (!(*same = calloc((size_t)rq->n + 1, sizeof **same))) return -1;
    for (int i = 0; i < rq->n; i++)
        if (route_of[i] == MT_ROUTE_SAME && !((*same)[i] = strndup(rq->texts[i], rq->lens[i]))) return -1;
    return 1;
}
