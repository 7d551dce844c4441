/* langs.h: the language table, where a model is picked: which loaded model serves which
 * (source, target) pair, "auto" source resolution, language names, and the
 * LibreTranslate /languages list. The service (registry.c) fills it as it loads the
 * models and routes every request through it (submit.c); front ends only read it.
 *
 * A route is one pair served by one model. A plain bilingual model gives one route; a
 * multilingual model (source vocabulary with ">>xxx<<" tokens) gives one more route per
 * target token: the service prepends that token for the route's target.
 *
 * Thread-safety: filled once at load, then read-only and shared by all threads.
 */
#ifndef MT_TRANSLATOR_LANGS_H
#define MT_TRANSLATOR_LANGS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    char source[33], target[33]; /* language codes as configured */
    int model;                   /* index of the serving model */
    int by_token;                /* 1: the target is selected by the model's ">>target<<" token */
    int hop1, hop2;              /* a pivot route (pivot.h): the routes of its two steps, source ->
                                  * pivot and pivot -> target (model is hop1's); -1: a direct one */
} mt_route;

typedef struct mt_langs mt_langs;

mt_langs *mt_langs_create(void);
void mt_langs_free(mt_langs *l);

/* Adds a route; a pair already routed keeps its first model. Returns 0 or -1 (no memory). */
int mt_langs_add(mt_langs *l, const char *source, const char *target, int model, int by_token);
/* Adds a pivot route through routes hop1 and hop2 (pivot.c), under the same rule. */
int mt_langs_add_pivot(mt_langs *l, const char *source, const char *target, int model, int hop1, int hop2);

int mt_langs_count(const mt_langs *l);
const mt_route *mt_langs_get(const mt_langs *l, int i);

/* Finds the route for a request. Neither language given: route 0, the first model
 * listed (the default). source NULL or "auto": the one route into target (if exactly
 * one), *detected = 1. target NULL: allowed when only one route exists from the given
 * source. Direct routes are preferred: a pivot route counts only where no direct one
 * matches. Codes compare case-insensitively. Returns the route index, or
 * -1 with a 400 message that lists the supported pairs. */
int mt_langs_resolve(const mt_langs *l, const char *source, const char *target, int *detected,
                     char *err, size_t errlen);

/* LibreTranslate's GET /languages: [{"code", "name", "targets"}], one entry for every
 * language that is a source or a target, sorted by code. New reference. */
json_t *mt_langs_json(const mt_langs *l);

/* English name of an ISO 639-1/639-3 code ("de" -> "German"), or the code itself. */
const char *mt_lang_name(const char *code);

#endif
