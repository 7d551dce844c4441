/* service_impl.h: what the files of the service share (service.c: the registry and the
 * per-model layer; submit.c: the request layer; routing.c: its routes and detection;
 * rejoin.c: decoding and rejoining). */
#ifndef MT_TRANSLATOR_SERVICE_IMPL_H
#define MT_TRANSLATOR_SERVICE_IMPL_H

#include "batcher.h"
#include "markup.h"
#include "service_engine.h"

struct mt_service {
    mt_translator **trs;
    int owned;               /* 1: loaded by mt_service_load (freed with the service) */
    const mt_model **models; /* the batcher's view of trs (kept for it) */
    int n;
    mt_service_model *info;  /* per model */
    char **strings;          /* what info points to (names, paths) */
    int n_strings;
    mt_langs *langs;
    mt_detector *detector;   /* the languages the models read or write; NULL: no detection */
    mt_detector *wide;       /* every language libexttextcat knows: tells a text in a language
                              * no model serves from one the narrow detector forces onto ours */
    mt_decoding defaults;
    mt_service_observer obs;
    mt_batcher *batcher;
};

struct mt_service_job {
    mt_service *svc;
    mt_job job;                /* the batcher's view: items in queue order (longest first) */
    int model;
    mt_service_options opts;   /* target_lang: not kept (borrowed; used by prepare only) */
    int n_texts, n_units, n_sents;
    int *first_unit;           /* per text (n_texts + 1): its units [first_unit[t], first_unit[t+1]) */
    char **texts;              /* per unit: what is segmented (copies; verbatim units: their bytes) */
    size_t *lens;
    int *verbatim;             /* per unit: 1 = copied to the output as is (HTML block tags) */
    mt_protect **prot;         /* per unit: protected spans cut out (text), or NULL */
    mt_markup **mk;            /* per unit: an HTML block's inline markup, or NULL */
    mt_segment **segs;         /* per unit */
    int *n_segs;
    int html_nodes;            /* HTML translated text node by text node (output_ids) */
    int32_t **ids;             /* per sentence, in text order */
    int *src_lens;
    int32_t **prefix;          /* per sentence: target_prefix ids, or NULL */
    int *prefix_len;
    int *item_of;              /* sentence (text order) -> index in job.items */
    mt_translation *results;   /* per text, once done */
    int outcome;
    char message[256];
    long target_tokens;
    void (*done)(mt_service_job *, void *);
    void *user;
    struct mt_pivot *pivot;    /* a two-step job through a pivot language (pivot.c), else NULL */
};

/* rejoin.c: the batcher finished j (worker thread, or purge/abort): outcome, results,
 * then j's callback. */
void mt_service_job_finished(mt_job *job, void *user);

/* service.c: the message of an outcome or refusal that has none of its own (a full queue,
 * shutting down, cancelled), for the blocking calls. A static string. */
const char *mt_service_outcome_text(int outcome);

/* A text already in the target language, answered as it came (LibreTranslate does the
 * same): its route_of entry. */
enum { MT_ROUTE_SAME = -2 };

/* routing.c: source "auto" with a detector: each text's route (route_of, conf: rq->n
 * each, the caller's). Detection runs among every language the models read or write: a
 * text already in the target language is MT_ROUTE_SAME (answered unchanged: *same gets
 * rq->n + 1 entries, each such text's copy, else NULL; *same_route what they report); one
 * in a language with no model into target, or in a language no model reads at all, is
 * refused naming it (MT_SERVICE_INVALID, message in err). 1 when done, 0 when the request
 * is not one for detection (or nothing translates into target), -1 out of memory (*same
 * may hold copies: the caller frees them), -2 refused. */
int mt_service_detect_routes(const mt_service *svc, const mt_service_request *rq, int *route_of, double *conf,
                             mt_route *same_route, char ***same, char *err, size_t errlen);

#endif
