/* langs.c: routes (source, target) -> model, and language names. */
#include "langs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct mt_langs {
    mt_route *routes;
    int n, cap;
};

mt_langs *mt_langs_create(void) { return calloc(1, sizeof(mt_langs)); }

void mt_langs_free(mt_langs *l)
{
    if (!l) return;
    free(l->routes);
    free(l);
}

int mt_langs_count(const mt_langs *l) { return l->n; }
const mt_route *mt_langs_get(const mt_langs *l, int i) { return &l->routes[i]; }

static int add_route(mt_langs *l, const char *source, const char *target, int model, int by_token, int hop1,
                     int hop2)
{
    if (strlen(source) > 32 || strlen(target) > 32) return -1;
    for (int i = 0; i < l->n; i++)
        if (strcasecmp(l->routes[i].source, source) == 0 &&
            strcasecmp(l->routes[i].target, target) == 0)
            return 0;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 8;
        mt_route *r = realloc(l->routes, (size_t)cap * sizeof *r);
        if (!r) return -1;
        l->routes = r;
        l->cap = cap;
    }
    mt_route *r = &l->routes[l->n++];
    memset(r, 0, sizeof *r);
    snprintf(r->source, sizeof r->source, "%s", source);
    snprintf(r->target, sizeof r->target, "%s", target);
    r->model = model;
    r->by_token = by_token;
    r->hop1 = hop1;
    r->hop2 = hop2;
    return 0;
}

int mt_langs_add(mt_langs *l, const char *source, const char *target, int model, int by_token)
{
    return add_route(l, source, target, model, by_token, -1, -1);
}

int mt_langs_add_pivot(mt_langs *l, const char *source, const char *target, int model, int hop1, int hop2)
{
    return add_route(l, source, target, model, 0, hop1, hop2);
}

/* "en-de, de-en" into buf. */
static void list_pairs(const mt_langs *l, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < l->n && n + 1 < cap; i++) {
        int w = snprintf(buf + n, cap - n, "%s%s-%s", i ? ", " : "", l->routes[i].source,
                         l->routes[i].target);
        if (w < 0) break;
        n += (size_t)w;
        if (n >= cap) {
            if (cap > 4) memcpy(buf + cap - 4, "...", 4);
            break;
        }
    }
}

int mt_langs_resolve(const mt_langs *l, const char *source, const char *target, int *detected,
                     char *err, size_t errlen)
{
    char pairs[1024];
    list_pairs(l, pairs, sizeof pairs);
    *detected = 0;
    if (!source && !target && l->n > 0)
        return 0; /* a request that names no language: the first model listed, the default */
    int is_auto = !source || strcasecmp(source, "auto") == 0;
    int found = -1, count = 0;
    for (int pivot = 0; pivot < 2 && count == 0; pivot++) /* direct routes first */
        for (int i = 0; i < l->n; i++) {
            const mt_route *r = &l->routes[i];
            if ((r->hop1 >= 0) != pivot) continue;
            if (target && strcasecmp(r->target, target) != 0) continue;
            if (!is_auto && strcasecmp(r->source, source) != 0) continue;
            if (found < 0) found = i;
            count++;
        }
    if (count == 1) {
        *detected = is_auto && source != NULL;
        return found;
    }
    if (count == 0) {
        if (!target)
            snprintf(err, errlen, "no model translates from '%s'; supported pairs: %s", source, pairs);
        else if (is_auto)
            snprintf(err, errlen, "no model translates into '%s'; supported pairs: %s", target, pairs);
        else
            snprintf(err, errlen, "unsupported language pair %s-%s; supported pairs: %s", source,
                     target, pairs);
        return -1;
    }
    if (!target)
        snprintf(err, errlen, "missing field 'target': several language pairs are served (%s)", pairs);
    else
        snprintf(err, errlen, "source \"auto\" needs exactly one model translating into '%s', "
                 "but %d do (%s): give the source language", target, count, pairs);
    return -1;
}

static int cmp_str(const void *a, const void *b)
{
    return strcasecmp(*(const char *const *)a, *(const char *const *)b);
}

json_t *mt_langs_json(const mt_langs *l)
{
    /* Every code that appears as a source or a target, once, sorted. */
    const char **codes = calloc((size_t)(2 * l->n + 1), sizeof *codes);
    json_t *out = json_array();
    if (!codes || !out) {
        free(codes);
        json_decref(out);
        return NULL;
    }
    int n = 0;
    for (int i = 0; i < l->n; i++) {
        const char *c[2] = {l->routes[i].source, l->routes[i].target};
        for (int k = 0; k < 2; k++) {
            int seen = 0;
            for (int j = 0; j < n && !seen; j++) seen = strcasecmp(codes[j], c[k]) == 0;
            if (!seen) codes[n++] = c[k];
        }
    }
    qsort(codes, (size_t)n, sizeof *codes, cmp_str);
    for (int j = 0; j < n; j++) {
        json_t *targets = json_array();
        for (int i = 0; targets && i < l->n; i++)
            if (strcasecmp(l->routes[i].source, codes[j]) == 0)
                json_array_append_new(targets, json_string(l->routes[i].target));
        json_t *e = json_pack("{s:s, s:s, s:o}", "code", codes[j], "name", mt_lang_name(codes[j]),
                              "targets", targets ? targets : json_array());
        if (e) json_array_append_new(out, e);
    }
    free(codes);
    return out;
}

static const char *const NAMES[][2] = {
    {"af", "Afrikaans"}, {"am", "Amharic"}, {"ar", "Arabic"}, {"az", "Azerbaijani"},
    {"be", "Belarusian"}, {"bg", "Bulgarian"}, {"bn", "Bengali"}, {"bs", "Bosnian"},
    {"ca", "Catalan"}, {"cs", "Czech"}, {"cy", "Welsh"}, {"da", "Danish"}, {"de", "German"},
    {"el", "Greek"}, {"en", "English"}, {"eo", "Esperanto"}, {"es", "Spanish"},
    {"et", "Estonian"}, {"eu", "Basque"}, {"fa", "Persian"}, {"fi", "Finnish"},
    {"fr", "French"}, {"ga", "Irish"}, {"gl", "Galician"}, {"gu", "Gujarati"}, {"he", "Hebrew"},
    {"hi", "Hindi"}, {"hr", "Croatian"}, {"hu", "Hungarian"}, {"hy", "Armenian"},
    {"id", "Indonesian"}, {"is", "Icelandic"}, {"it", "Italian"}, {"ja", "Japanese"},
    {"ka", "Georgian"}, {"kk", "Kazakh"}, {"km", "Khmer"}, {"kn", "Kannada"}, {"ko", "Korean"},
    {"ky", "Kyrgyz"}, {"la", "Latin"}, {"lt", "Lithuanian"}, {"lv", "Latvian"},
    {"mk", "Macedonian"}, {"ml", "Malayalam"}, {"mn", "Mongolian"}, {"mr", "Marathi"},
    {"ms", "Malay"}, {"mt", "Maltese"}, {"my", "Burmese"}, {"nb", "Norwegian Bokmål"},
    {"ne", "Nepali"}, {"nl", "Dutch"}, {"nn", "Norwegian Nynorsk"}, {"no", "Norwegian"},
    {"pa", "Punjabi"}, {"pl", "Polish"}, {"pt", "Portuguese"}, {"ro", "Romanian"},
    {"ru", "Russian"}, {"si", "Sinhala"}, {"sk", "Slovak"}, {"sl", "Slovenian"},
    {"sq", "Albanian"}, {"sr", "Serbian"}, {"sv", "Swedish"}, {"sw", "Swahili"},
    {"ta", "Tamil"}, {"te", "Telugu"}, {"th", "Thai"}, {"tl", "Tagalog"}, {"tr", "Turkish"},
    {"uk", "Ukrainian"}, {"ur", "Urdu"}, {"uz", "Uzbek"}, {"vi", "Vietnamese"},
    {"zh", "Chinese"}, {"zt", "Chinese (traditional)"}, {"zh-Hans", "Chinese (simplified)"},
    {"zh-Hant", "Chinese (traditional)"}, {"pt-BR", "Portuguese (Brazil)"},
    /* ISO 639-3, as multilingual OPUS-MT models name their targets (>>deu<<) */
    {"deu", "German"}, {"eng", "English"}, {"fra", "French"}, {"spa", "Spanish"},
    {"por", "Portuguese"}, {"pob", "Portuguese (Brazil)"}, {"ita", "Italian"},
    {"nld", "Dutch"}, {"rus", "Russian"}, {"pol", "Polish"}, {"ces", "Czech"},
    {"swe", "Swedish"}, {"fin", "Finnish"}, {"dan", "Danish"}, {"nob", "Norwegian Bokmål"},
    {"ron", "Romanian"}, {"hun", "Hungarian"}, {"ell", "Greek"}, {"tur", "Turkish"},
    {"ukr", "Ukrainian"}, {"bul", "Bulgarian"}, {"cat", "Catalan"}, {"glg", "Galician"},
    {"zho", "Chinese"}, {"cmn", "Chinese (Mandarin)"}, {"jpn", "Japanese"}, {"kor", "Korean"},
    {"ara", "Arabic"}, {"heb", "Hebrew"}, {"hin", "Hindi"}, {"vie", "Vietnamese"},
    {"ind", "Indonesian"}, {"tha", "Thai"}, {"fas", "Persian"}, {"lat", "Latin"},
};

const char *mt_lang_name(const char *code)
{
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++)
        if (strcasecmp(NAMES[i][0], code) == 0) return NAMES[i][1];
    return code;
}
