/* registry.c: the service's models: loading them from specs (compute type, kernels),
 * naming them, the routes they serve (langs.h), the language detector over their source
 * languages, and starting and stopping the workers over them. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"
#include "pivot.h"
#include "status.h"
#include "service_impl.h"

void mt_service_config_default(mt_service_config *cfg)
{
    *cfg = (mt_service_config){.workers = 1, .threads_per_worker = 1, .capacity = 16, .max_sentences = 32,
                               .max_tokens = INT_MAX / 2, .max_wait_ms = 0, .split_min = -1};
}

void mt_service_process_setup(char **argv, const char *blas_coretype) { mt_process_setup(argv, blas_coretype); }

const char *mt_service_blas_name(void) { return mt_translator_blas_name(); }

static void note(const mt_service *svc, int warning, const char *event, const char *fmt, const char *a,
                 const char *b)
{
    if (!svc->obs.note) return;
    char text[512];
    snprintf(text, sizeof text, fmt, a, b);
    svc->obs.note(svc->obs.user, warning, event, text);
}

static const char *keep(mt_service *svc, const char *s)
{
    char **more = realloc(svc->strings, sizeof *more * (size_t)(svc->n_strings + 1));
    if (!more) return NULL;
    svc->strings = more;
    char *d = strdup(s ? s : "");
    if (d) svc->strings[svc->n_strings++] = d;
    return d;
}

/* Model i's description and routes: its own pair, and for a multilingual model one per
 * target language token. 0 or -1 with a message. */
static int add_model(mt_service *svc, int i, const char *name, const char *path, double load_ms, char *err,
                     size_t errlen)
{
    const mt_translator *tr = svc->trs[i];
    const mt_model_info *in = mt_translator_model_info(tr);
    const mt_model *m = mt_translator_model(tr);
    mt_service_model *d = &svc->info[i];
    d->name = keep(svc, name ? name : mt_translator_name(tr));
    d->path = keep(svc, path ? path : "");
    d->source = mt_translator_source_lang(tr);
    d->target = mt_translator_target_lang(tr);
    d->compute_type = mt_compute_type_name(mt_model_compute_type(m));
    d->compute_detail = keep(svc, mt_model_compute_detail(m));
    d->format = mt_translator_format(tr);
    d->language_tokens = mt_translator_target_count(tr);
    d->d_model = in->d_model;
    d->encoder_layers = in->encoder_layers;
    d->decoder_layers = in->decoder_layers;
    d->default_beam_size = in->default_beam_size;
    d->default_max_length = in->default_max_length;
    d->load_ms = load_ms;
    if (!d->name || !d->path || !d->compute_detail) return mt_error(-1, err, errlen, "out of memory");
    if (mt_langs_add(svc->langs, d->source, d->target, i, 0))
        return mt_error(-1, err, errlen, "model %s: invalid language pair %s-%s", d->path, d->source, d->target);
    for (int k = 0; k < mt_translator_target_count(tr); k++) {
        char code[33];
        if (mt_translator_target_code(tr, k, code, sizeof code)) continue;
        if (mt_langs_add(svc->langs, d->source, code, i, 1)) return mt_error(-1, err, errlen, "out of memory");
    }
    if (svc->obs.loaded) svc->obs.loaded(svc->obs.user, i, d);
    return 0;
}

/* The detector over the routes' distinct languages, sources and targets, that libexttextcat
 * has fingerprints for (the others are noted and left out): a text already in a target
 * language is recognised as such, not forced onto a source (none: no detector); and the
 * wide one over every language it knows. */
static int start_detector(mt_service *svc, char *err, size_t errlen)
{
    const char *codes[64];
    int n = 0;
    for (int i = 0; i < 2 * mt_langs_count(svc->langs); i++) {
        const mt_route *rt = mt_langs_get(svc->langs, i / 2);
        const char *src = i % 2 ? rt->target : rt->source;
        int seen = 0;
        for (int k = 0; k < n; k++) seen |= strcasecmp(codes[k], src) == 0;
        if (seen || n == 64) continue;
        char e[256];
        mt_detector *d = mt_detector_create(&src, 1, NULL, e, sizeof e);
        if (d) {
            codes[n++] = src;
            mt_detector_free(d);
        } else {
            note(svc, 1, "detect", "lang=%s msg=\"not detectable: %s\"", src, e);
        }
    }
    if (n == 0) return 0;
    svc->detector = mt_detector_create(codes, n, NULL, err, errlen);
    if (!svc->detector) return -1;
    /* The wide detector: LibreTranslate's languages that libexttextcat has fingerprints
     * for, and ours. Not all 163 of them: rare ones and dialects win on plain English
     * ("A man in a blue shirt is riding a bicycle." is Scots among all of them). */
    static const char *const common[] = {"ar", "az", "bg", "bn", "ca", "cs", "da", "de", "el", "en", "eo", "es",
                                         "et", "eu", "fa", "fi", "fr", "ga", "gl", "he", "hi", "hu", "id", "it",
                                         "ja", "ko", "lt", "lv", "ms", "nb", "nl", "pl", "pt", "ro", "ru", "sk",
                                         "sl", "sq", "sv", "th", "tl", "tr", "uk", "ur", "vi"};
    enum { N_COMMON = sizeof common / sizeof *common };
    const char *wide[N_COMMON + 64];
    int m = 0;
    for (int i = 0; i < N_COMMON; i++) wide[m++] = common[i];
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int k = 0; k < N_COMMON; k++) seen |= strcasecmp(common[k], codes[i]) == 0;
        if (!seen) wide[m++] = codes[i];
    }
    svc->wide = mt_detector_create(wide, m, NULL, err, errlen);
    if (!svc->wide) return -1;
    char count[16];
    snprintf(count, sizeof count, "%d", n);
    note(svc, 0, "detect", "languages=%s%s", count, "");
    return 0;
}

/* The service around svc->trs[0, n): descriptions, routes, detector, workers. */
static mt_service *start(mt_service *svc, const mt_service_spec *specs, const double *load_ms,
                         const mt_service_config *cfg, char *err, size_t errlen)
{
    int n = svc->n;
    svc->models = calloc((size_t)n + 1, sizeof *svc->models);
    svc->info = calloc((size_t)n + 1, sizeof *svc->info);
    svc->langs = mt_langs_create();
    if (!svc->models || !svc->info || !svc->langs) {
        mt_error(-1, err, errlen, "out of memory");
        mt_service_free(svc);
        return NULL;
    }
    svc->defaults = cfg->defaults;
    for (int i = 0; i < n; i++) {
        svc->models[i] = mt_translator_model(svc->trs[i]);
        if (add_model(svc, i, specs ? specs[i].name : NULL, specs ? specs[i].path : NULL,
                      load_ms ? load_ms[i] : 0, err, errlen)) {
            mt_service_free(svc);
            return NULL;
        }
    }
    int pivots = mt_pivot_add_routes(svc->langs, "en"); /* after the direct routes: they win */
    if (pivots < 0) {
        mt_error(-1, err, errlen, "out of memory");
        mt_service_free(svc);
        return NULL;
    }
    if (pivots > 0) {
        char count[16];
        snprintf(count, sizeof count, "%d", pivots);
        note(svc, 0, "pivot", "routes=%s via=en%s", count, "");
    }
    if (cfg->detect && start_detector(svc, err, errlen)) {
        mt_service_free(svc);
        return NULL;
    }
    mt_batcher_config bc = {cfg->workers,       cfg->threads_per_worker, cfg->capacity,
                            cfg->max_sentences, cfg->max_tokens,         cfg->max_wait_ms,
                            cfg->cache_bytes};
    mt_batcher_observer bo = {svc->obs.batch, svc->obs.queue_wait, svc->obs.cancelled, svc->obs.user};
    svc->batcher = mt_batcher_create(svc->models, n, &bc, &bo, err, errlen);
    if (!svc->batcher) {
        mt_service_free(svc);
        return NULL;
    }
    return svc;
}

static mt_service *new_service(int n, const mt_service_observer *obs, char *err, size_t errlen)
{
    mt_service *svc = calloc(1, sizeof *svc);
    if (svc) svc->trs = calloc((size_t)n + 1, sizeof *svc->trs);
    if (!svc || !svc->trs) {
        mt_error(-1, err, errlen, "out of memory");
        if (svc) free(svc);
        return NULL;
    }
    if (obs) svc->obs = *obs;
    return svc;
}

mt_service *mt_service_create(mt_translator *const *trs, int n, const mt_service_config *cfg,
                              const mt_service_observer *obs, char *err, size_t errlen)
{
    mt_service *svc = new_service(n, obs, err, errlen);
    if (!svc) return NULL;
    svc->n = n;
    for (int i = 0; i < n; i++) svc->trs[i] = trs[i];
    return start(svc, NULL, NULL, cfg, err, errlen);
}

mt_service *mt_service_load(const mt_service_spec *specs, int n, const mt_service_config *cfg,
                            const mt_service_observer *obs, char *err, size_t errlen)
{
    mt_service *svc = new_service(n, obs, err, errlen);
    double *ms = calloc((size_t)n + 1, sizeof *ms);
    if (!svc || !ms) {
        free(ms);
        mt_service_free(svc);
        return NULL;
    }
    svc->owned = 1;
    for (int i = 0; i < n; i++) {
        const mt_service_spec *sp = &specs[i];
        mt_model_options mo;
        mt_model_options_default(&mo);
        if (mt_compute_type_parse(sp->compute_type ? sp->compute_type : "default", &mo.compute_type)) {
            mt_error(-1, err, errlen, "model %s: unknown compute type '%s'", sp->path, sp->compute_type);
            break;
        }
        mo.kernels = cfg->kernels;
        mo.cpu_hide = cfg->cpu_hide;
        mo.split_min = cfg->split_min;
        double t0 = mt_now();
        char e[512];
        svc->trs[i] = mt_translator_load_ex(sp->path, sp->source, sp->target, &mo, e, sizeof e);
        if (!svc->trs[i]) {
            mt_error(-1, err, errlen, "cannot load model %s: %s", sp->path, e);
            break;
        }
        svc->n = i + 1;
        ms[i] = (mt_now() - t0) * 1e3;
    }
    if (svc->n < n) {
        free(ms);
        mt_service_free(svc);
        return NULL;
    }
    svc = start(svc, specs, ms, cfg, err, errlen);
    free(ms);
    return svc;
}

void mt_service_free(mt_service *svc)
{
    if (!svc) return;
    mt_batcher_free(svc->batcher);
    mt_detector_free(svc->detector);
    mt_detector_free(svc->wide);
    mt_langs_free(svc->langs);
    if (svc->owned)
        for (int i = 0; i < svc->n; i++) mt_translator_free(svc->trs[i]);
    for (int i = 0; i < svc->n_strings; i++) free(svc->strings[i]);
    free(svc->strings);
    free(svc->info);
    free(svc->models);
    free(svc->trs);
    free(svc);
}

int mt_service_model_count(const mt_service *svc) { return svc->n; }
const mt_service_model *mt_service_model_info(const mt_service *svc, int model) { return &svc->info[model]; }
const mt_langs *mt_service_langs(const mt_service *svc) { return svc->langs; }
