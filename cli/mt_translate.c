/* mt-translate: translates UTF-8 lines from stdin to stdout, one output line per input
 * line, in order; with --input html, the whole input is one HTML document; with a FILE,
 * a document through formats/ (mt_file.c). It only turns arguments into a service
 * request (the decoding flags come from the options table, include/mt/options.h) and
 * prints results: the translation service (include/mt/service.h) that mt-server uses
 * loads the model, resolves the options and runs the pipeline, batching the sentences of
 * a chunk of lines by length across --workers threads, so both always agree. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <jansson.h>

extern char **environ;

#include "config.h"
#include "cpus.h"
#include "models_dir.h"
#include "mt_file.h"
#include "service.h"

enum { CHUNK_LINES = 20000 }; /* lines translated together: sorted by length across the chunk */

/* One --help line per decoding option of the table (options.h). */
static void usage_options(FILE *f)
{
    fprintf(f, "Decoding options (CTranslate2's names; defaults change nothing):\n");
    for (int id = 0; id < MT_OPT_COUNT; id++) {
        const mt_option_desc *d = mt_option(id);
        if (!(d->where & MT_OPT_CLI)) continue;
        char lhs[64];
        snprintf(lhs, sizeof lhs, "%s%s%s%s%s", d->flag, d->arg ? " " : "", d->arg ? d->arg : "",
                 d->alias ? ", " : "", d->alias ? d->alias : "");
        if (strlen(lhs) < 23)
            fprintf(f, "  %-24s%s\n", lhs, d->help);
        else
            fprintf(f, "  %s\n  %-24s%s\n", lhs, "", d->help);
    }
    fprintf(f, "With --n-best N, each line's hypotheses are printed as 'INDEX ||| text ||| score'.\n");
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mt-translate --model DIR[:SRC:TGT] [options] < input > output\n"
            "       mt-translate --model DIR[:SRC:TGT] [options] FILE [--output-file OUT]\n"
            "       mt-translate --models-dir DIR --source-lang L --target-lang L [options] ...\n"
            "Exit status: 0 done, 1 failed (model, file, translation), 2 wrong command line.\n"
            "  FILE                    a .txt, .html, .srt, .docx or .odt file, translated into OUT\n"
            "                          (default: next to it, the target code before the extension:\n"
            "                          report.docx -> report.de.docx); a progress bar on a terminal\n"
            "  --output-file OUT       where FILE's translation goes\n"
            "  -m, --model DIR[:SRC:TGT]  model directory (Hugging Face MarianMT / OPUS-MT layout:\n"
            "                          models/en-de, or one from `mt-models list`); :SRC:TGT as\n"
            "                          --source-lang/--target-lang, as mt-server's --model takes it\n"
            "  --models-dir DIR        instead of --model: the model for --source-lang/--target-lang\n"
            "                          among the models in DIR (each subdirectory with a config.json,\n"
            "                          or an unpacked argos-translate package, used in place), as\n"
            "                          mt-server --models-dir serves them; `mt-models list`\n"
            "  -t, --threads N, --threads-per-worker N\n"
            "                          compute threads of each worker (default 1)\n"
            "  --workers N             translation worker threads, each running batches (default 0:\n"
            "                          one per CPU this process may use / threads, as mt-server)\n"
            "  --sentence-cache-mb N   answer repeated sentences from an LRU cache of N MiB (default 0: off)\n"
            "  --batch-size N, --batch-max-sentences N\n"
            "                          sentences per batch (default 32)\n"
            "  --input text|ids|html   ids: lines are space-separated source ids (eos appended);\n"
            "                          html: the whole input is one HTML document (markup kept,\n"
            "                          text translated), written back as it came, without --n-best\n"
            "  --output text|ids|json  ids: print generated target ids instead of text; json: one\n"
            "                          object per line: translation, score, and with --return-scores /\n"
            "                          --return-alignments token_scores, alignments, token_alignments\n"
            "  --target-prefix TEXT    every line's translation starts with TEXT\n"
            "  --target-prefix-ids IDS the same as target ids (\"12 7\")\n"
            "  --glossary FILE         DeepL glossary entries (TSV \"source<TAB>target\" lines, or CSV\n"
            "                          for a FILE named *.csv): each source term in the input comes\n"
            "                          out as its target term\n"
            "  --no-protect            translate URLs, e-mails, @mentions, #hashtags, paths,\n"
            "                          placeholders, emoji and characters the model cannot spell\n"
            "                          too (default: kept byte for byte)\n"
            "  --source-lang L, --target-lang L   override tokenizer_config.json's pair (with\n"
            "                          --models-dir: pick the model); also --source L, --target L\n"
            "  --compute-type T        float32 (exact), bfloat16, int8 or auto (the fastest measured at\n"
            "                          load on this CPU); default: MT_COMPUTE_TYPE, else what the model\n"
            "                          directory stores (float32; int8 for a quantized directory)\n"
            "  -v, --verbose           print the model, BLAS kernel and compute type in use to stderr\n"
            "  --version               print the version and exit\n"
            "  -h, --help              this help\n"
            "  -b N is --beam-size N, -n N is --n-best N.\n"
            "Environment: MT_COMPUTE_TYPE, MT_KERNELS, MT_CPU_HIDE, MT_SPLIT_MIN, MT_BLAS_CORETYPE\n"
            "(mt-server --help describes them).\n");
    usage_options(f);
}

static int parse_int(const char *name, const char *v, int min, int *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || *end || x < min || x > 1 << 20) {
        fprintf(stderr, "mt-translate: %s must be an integer >= %d, got '%s'\n", name, min, v);
        return -1;
    }
    *out = (int)x;
    return 0;
}

typedef struct {
    const char *model, *models_dir, *source_lang, *target_lang, *file, *output_file, *compute_type;
    int threads, workers, batch, input_ids, input_html, output_ids, output_json, verbose, cache_mb, no_protect;
    mt_decoding decoding; /* the decoding options given (options.h) */
    const char *prefix, *prefix_ids;
    const char *glossary; /* --glossary FILE */
} cli_args;

enum { OPT_TABLE = 2000 }; /* getopt codes OPT_TABLE + mt_option_id */

/* --model DIR:SRC:TGT, as mt-server reads it (config's parser): the pair fills
 * --source-lang/--target-lang where they are not given. 0, or -1 after a message. */
static int split_model_spec(cli_args *a)
{
    static mt_config_model spec; /* lives as long as the arguments */
    char err[300];
    if (mt_config_parse_model_spec(a->model, &spec, err, sizeof err)) {
        fprintf(stderr, "mt-translate: --model %s: %s\n", a->model, err);
        return -1;
    }
    a->model = spec.path;
    if (spec.source && !a->source_lang) a->source_lang = spec.source;
    if (spec.target && !a->target_lang) a->target_lang = spec.target;
    return 0;
}

static int parse_args(int argc, char **argv, cli_args *a)
{
    static const struct option fixed[] = {
        {"model", 1, 0, 'm'},          {"threads", 1, 0, 't'},        {"batch-size", 1, 0, 's'},
        {"input", 1, 0, 'i'},          {"output", 1, 0, 'o'},         {"source-lang", 1, 0, 'S'},
        {"target-lang", 1, 0, 'T'},    {"verbose", 0, 0, 'v'},        {"help", 0, 0, 'h'},
        {"workers", 1, 0, 'w'},        {"version", 0, 0, 'V'},        {"output-file", 1, 0, 'O'},
        {"target-prefix", 1, 0, 1007}, {"target-prefix-ids", 1, 0, 1008}, {"no-protect", 0, 0, 1013},
        {"sentence-cache-mb", 1, 0, 1014}, {"compute-type", 1, 0, 'C'}, {"glossary", 1, 0, 1015},
        {"models-dir", 1, 0, 1016},    {"source", 1, 0, 'S'},         {"target", 1, 0, 'T'},
        /* mt-server's names for the same settings */
        {"threads-per-worker", 1, 0, 't'}, {"batch-max-sentences", 1, 0, 's'}};
    enum { N_FIXED = sizeof fixed / sizeof fixed[0] };
    struct option longs[N_FIXED + 2 * MT_OPT_COUNT + 1];
    int n = 0;
    for (int i = 0; i < N_FIXED; i++) longs[n++] = fixed[i];
    for (int id = 0; id < MT_OPT_COUNT; id++) { /* the table's flags, and their older spellings */
        const mt_option_desc *d = mt_option(id);
        if (!(d->where & MT_OPT_CLI)) continue;
        longs[n++] = (struct option){d->flag + 2, d->arg ? 1 : 0, 0, OPT_TABLE + id};
        if (d->alias) longs[n++] = (struct option){d->alias + 2, d->arg ? 1 : 0, 0, OPT_TABLE + id};
    }
    longs[n] = (struct option){0, 0, 0, 0};
    int c, at = -1;
    char err[300], label[64];
    opterr = 0; /* one line of our own instead of getopt's message and the usage */
    while ((c = getopt_long(argc, argv, ":m:b:n:t:vh", longs, &at)) != -1) {
        int rc = 0;
        if (c == 'b' || c == 'n') /* -b N: --beam-size, -n N: --n-best */
            c = OPT_TABLE + (c == 'b' ? MT_OPT_BEAM_SIZE : MT_OPT_N_BEST);
        if (c >= OPT_TABLE && c < OPT_TABLE + MT_OPT_COUNT) {
            const mt_option_desc *d = mt_option(c - OPT_TABLE);
            /* named as given: --beam or --beam-size, -b */
            if (at >= 0 && longs[at].val == c) snprintf(label, sizeof label, "--%s", longs[at].name);
            else snprintf(label, sizeof label, "%s", d->flag);
            at = -1;
            if (mt_option_parse(&a->decoding, c - OPT_TABLE, d->arg ? optarg : "1", 0, label, err, sizeof err)) {
                fprintf(stderr, "mt-translate: %s, got '%s'\n", err, optarg ? optarg : "");
                return -1;
            }
            continue;
        }
        at = -1;
        switch (c) {
        case 'm': a->model = optarg; break;
        case 1016: a->models_dir = optarg; break;
        case 't': rc = parse_int("--threads", optarg, 1, &a->threads); break;
        case 'w': rc = parse_int("--workers", optarg, 0, &a->workers); break;
        case 's': rc = parse_int("--batch-size", optarg, 1, &a->batch); break;
        case 'S': a->source_lang = optarg; break;
        case 'O': a->output_file = optarg; break;
        case 'T': a->target_lang = optarg; break;
        case 'v': a->verbose = 1; break;
        case 1007: a->prefix = optarg; break;
        case 1008: a->prefix_ids = optarg; break;
        case 1013: a->no_protect = 1; break;
        case 1015: a->glossary = optarg; break;
        case 1014: rc = parse_int("--sentence-cache-mb", optarg, 0, &a->cache_mb); break;
        case 'C':
            if (!mt_config_compute_type_valid(optarg)) {
                fprintf(stderr, "mt-translate: --compute-type must be float32, bfloat16, int8, auto or default, "
                                "got '%s'\n", optarg);
                return -1;
            }
            a->compute_type = optarg;
            break;
        case 'i':
            a->input_ids = !strcmp(optarg, "ids");
            a->input_html = !strcmp(optarg, "html");
            if (!a->input_ids && !a->input_html && strcmp(optarg, "text")) {
                fprintf(stderr, "mt-translate: --input must be 'text', 'ids' or 'html', got '%s'\n", optarg);
                return -1;
            }
            break;
        case 'o':
            a->output_ids = !strcmp(optarg, "ids");
            a->output_json = !strcmp(optarg, "json");
            if (!a->output_ids && !a->output_json && strcmp(optarg, "text")) {
                fprintf(stderr, "mt-translate: --output must be 'text', 'ids' or 'json', got '%s'\n", optarg);
                return -1;
            }
            break;
        case 'h': usage(stdout); exit(0);
        case 'V': printf("mt-translate %s\n", MT_VERSION); exit(0);
        case ':': /* the option is argv[optind - 1] as given: "--model", "-m" */
            fprintf(stderr, "mt-translate: %s needs a value (try: mt-translate --help)\n", argv[optind - 1]);
            return -1;
        default:
            if (optopt && optopt < 256)
                fprintf(stderr, "mt-translate: unknown option '-%c' (try: mt-translate --help)\n", optopt);
            else
                fprintf(stderr, "mt-translate: unknown option '%s' (try: mt-translate --help)\n", argv[optind - 1]);
            return -1;
        }
        if (rc)
            return -1;
    }
    if (optind < argc) a->file = argv[optind++];
    if (optind < argc) {
        fprintf(stderr, "mt-translate: unexpected argument '%s' (one FILE at a time)\n", argv[optind]);
        return -1;
    }
    if (a->output_file && !a->file) {
        fprintf(stderr, "mt-translate: --output-file needs a FILE argument\n");
        return -1;
    }
    int n_best = (a->decoding.set & (1u << MT_OPT_N_BEST)) ? (int)a->decoding.v[MT_OPT_N_BEST] : 1;
    int alignments = (a->decoding.set & (1u << MT_OPT_RETURN_ALIGNMENTS)) && a->decoding.v[MT_OPT_RETURN_ALIGNMENTS] != 0;
    if (a->file && (n_best > 1 || a->output_ids || a->input_ids || a->input_html)) {
        fprintf(stderr, "mt-translate: a FILE is translated as a document: it takes none of --n-best, "
                        "--input, --output ids\n");
        return -1;
    }
    if (a->prefix && a->prefix_ids) {
        fprintf(stderr, "mt-translate: give --target-prefix or --target-prefix-ids, not both\n");
        return -1;
    }
    if (a->input_html && alignments) {
        fprintf(stderr, "mt-translate: --return-alignments is not available with --input html (HTML output "
                        "keeps markup)\n");
        return -1;
    }
    if (a->input_html && (n_best > 1 || a->output_ids || a->output_json)) {
        fprintf(stderr, "mt-translate: --input html translates one document: it takes neither --n-best "
                        "nor --output ids|json\n");
        return -1;
    }
    if (a->model && a->models_dir) {
        fprintf(stderr, "mt-translate: give --model or --models-dir, not both\n");
        return -1;
    }
    if (a->models_dir) return 0; /* the model is picked in main: a missing one is a runtime error */
    if (!a->model) {
        fprintf(stderr, "mt-translate: --model DIR is required (e.g. --model models/en-de; try: mt-translate "
                        "--help)\n");
        return -1;
    }
    return split_model_spec(a);
}

/* --models-dir DIR: the first model there (models_dir.h: the models mt-server --models-dir
 * serves, installed ones and unpacked argos-translate packages, in name order) whose pair
 * matches the languages given (either may be left out; with neither, DIR must hold one
 * model). Sets a->model, 0; -1 after a one-line message naming the pairs there. */
static int pick_model(cli_args *a)
{
    static char chosen[4096]; /* lives as long as the arguments */
    mt_models_entry *list;
    int n;
    char err[512];
    if (mt_models_dir_list(a->models_dir, &list, &n, err, sizeof err)) {
        fprintf(stderr, "mt-translate: --models-dir %s\n", err);
        return -1;
    }
    char pairs[1024] = "";
    size_t used = 0;
    int hit = -1;
    for (int i = 0; i < n; i++) {
        const char *src = list[i].source, *tgt = list[i].target;
        int ok = (!a->source_lang || !strcasecmp(src, a->source_lang)) &&
                 (!a->target_lang || !strcasecmp(tgt, a->target_lang));
        if (ok && hit < 0 && (a->source_lang || a->target_lang || n == 1)) hit = i;
        if (used < sizeof pairs)
            used += (size_t)snprintf(pairs + used, sizeof pairs - used, "%s%s (%s->%s%s)", i ? ", " : "",
                                     list[i].name, *src ? src : "?", *tgt ? tgt : "?",
                                     list[i].kind == MT_MODELS_ARGOS_PACKAGE ? ", argos package" : "");
    }
    int rc = 0;
    if (n == 0) {
        fprintf(stderr, "mt-translate: --models-dir %s: no model there (a directory with config.json, as mt-models "
                        "install puts them there, or an unpacked argos-translate package)\n", a->models_dir);
        rc = -1;
    } else if (hit < 0 && !a->source_lang && !a->target_lang) {
        fprintf(stderr, "mt-translate: --models-dir %s holds %d models; pick one with --source-lang/--target-lang: "
                        "%s\n", a->models_dir, n, pairs);
        rc = -1;
    } else if (hit < 0) {
        fprintf(stderr, "mt-translate: --models-dir %s has no model for %s -> %s; installed: %s\n", a->models_dir,
                a->source_lang ? a->source_lang : "any", a->target_lang ? a->target_lang : "any", pairs);
        rc = -1;
    } else {
        snprintf(chosen, sizeof chosen, "%s", list[hit].path);
        a->model = chosen;
    }
    mt_models_dir_free(list, n);
    return rc;
}

/* --input html: translates all of stdin as one document. */
static int translate_document(mt_service *svc, const mt_service_request *base)
{
    size_t len = 0, cap = 1 << 16, got;
    char *doc = malloc(cap), err[512];
    while (doc && (got = fread(doc + len, 1, cap - len, stdin)) > 0) {
        len += got;
        if (len == cap) {
            char *bigger = realloc(doc, cap *= 2);
            if (!bigger)
                free(doc);
            doc = bigger;
        }
    }
    if (!doc || ferror(stdin)) {
        fprintf(stderr, "mt-translate: %s\n", doc ? "cannot read stdin" : "out of memory");
        free(doc);
        return -1;
    }
    mt_translation out;
    const char *text = doc;
    mt_service_request rq = *base;
    rq.n = 1;
    rq.texts = &text;
    rq.lens = &len;
    int rc = mt_service_translate_request(svc, &rq, &out, err, sizeof err);
    free(doc);
    if (rc) {
        fprintf(stderr, "mt-translate: %s\n", err);
        return -1;
    }
    fputs(out.texts[0], stdout);
    mt_translation_clear(&out);
    return fflush(stdout) == 0 ? 0 : -1;
}

static json_t *pair_array(const int (*p)[2], int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_pack("[ii]", p[i][0], p[i][1]));
    return a;
}

/* --output json: one object per input line. */
static void print_json(const mt_translation *t)
{
    json_t *o = json_object();
    json_object_set_new(o, "translation", json_string(t->texts[0]));
    json_object_set_new(o, "score", json_real(t->scores[0]));
    if (t->n_best > 1) {
        json_t *alt = json_array(), *sc = json_array();
        for (int k = 0; k < t->n_best; k++) {
            json_array_append_new(alt, json_string(t->texts[k]));
            json_array_append_new(sc, json_real(t->scores[k]));
        }
        json_object_set_new(o, "n_best", alt);
        json_object_set_new(o, "n_best_scores", sc);
    }
    if (t->token_scores) {
        json_t *a = json_array();
        for (int q = 0; q < t->n_tokens; q++)
            json_array_append_new(a, json_real(t->token_scores[q]));
        json_object_set_new(o, "token_scores", a);
    }
    if (t->token_alignments) {
        json_object_set_new(o, "alignments", pair_array((const int(*)[2])t->alignments, t->n_alignments));
        json_object_set_new(o, "token_alignments", pair_array((const int(*)[2])t->token_alignments, t->n_tokens));
    }
    char *s = json_dumps(o, JSON_COMPACT);
    if (s)
        puts(s);
    free(s);
    json_decref(o);
}

static int output_json;
static int n_best_out; /* hypotheses printed per line */

/* Translates and prints lines[0, n). */
static int flush_lines(mt_service *svc, const mt_service_request *rq, char **lines, size_t *lens, int n,
                       long first_index)
{
    mt_translation *out = calloc((size_t)n + 1, sizeof *out);
    char err[512];
    if (!out) {
        fprintf(stderr, "mt-translate: out of memory\n");
        return -1;
    }
    mt_service_request r = *rq;
    r.n = n;
    r.texts = (const char *const *)lines;
    r.lens = lens;
    if (mt_service_translate_request(svc, &r, out, err, sizeof err)) {
        fprintf(stderr, "mt-translate: %s\n", err);
        free(out);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (output_json) {
            print_json(&out[i]);
        } else if (n_best_out == 1) {
            fputs(out[i].texts[0], stdout);
            fputc('\n', stdout);
        } else {
            for (int k = 0; k < out[i].n_best; k++)
                printf("%ld ||| %s ||| %.6f\n", first_index + i, out[i].texts[k], out[i].scores[k]);
        }
        mt_translation_clear(&out[i]);
    }
    free(out);
    return fflush(stdout) == 0 ? 0 : -1;
}

/* Translates and prints lines[0, n), the one --target-prefix applying to each. */
static int flush_chunk(mt_service *svc, const mt_service_request *rq, char **lines, size_t *lens, int n,
                       long first_index)
{
    const char **prefixes = NULL;
    mt_service_request o = *rq;
    if (rq->target_prefix) { /* one prefix for every line */
        prefixes = malloc(sizeof *prefixes * (size_t)n);
        if (!prefixes) {
            fprintf(stderr, "mt-translate: out of memory\n");
            return -1;
        }
        for (int i = 0; i < n; i++)
            prefixes[i] = rq->target_prefix[0];
        o.target_prefix = prefixes;
    }
    int rc = flush_lines(svc, &o, lines, lens, n, first_index);
    free(prefixes);
    return rc;
}

/* --glossary FILE: TSV, or CSV when its name ends in .csv (CSV language columns checked
 * against the model's pair); NULL after a message. */
static mt_glossary *read_glossary(const char *path, const char *source, const char *target)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "mt-translate: --glossary %s: %s\n", path, strerror(errno));
        return NULL;
    }
    char *text = NULL;
    size_t len = 0, cap = 0, got;
    do {
        if (len + 65536 > cap) {
            char *t = realloc(text, cap = 2 * cap + 65536);
            if (!t) {
                free(text);
                fclose(f);
                fprintf(stderr, "mt-translate: out of memory\n");
                return NULL;
            }
            text = t;
        }
        got = fread(text + len, 1, cap - len, f);
        len += got;
    } while (got > 0);
    int bad = ferror(f);
    fclose(f);
    size_t pl = strlen(path);
    mt_glossary_format fmt = pl > 4 && strcasecmp(path + pl - 4, ".csv") == 0 ? MT_GLOSSARY_CSV : MT_GLOSSARY_TSV;
    mt_glossary *g = NULL;
    char err[300];
    if (bad) snprintf(err, sizeof err, "cannot read the file");
    if (bad || mt_glossary_parse(text, len, fmt, source, target, &g, err, sizeof err))
        fprintf(stderr, "mt-translate: --glossary %s: %s\n", path, err);
    free(text);
    return g;
}

/* The command line's request (texts unset), checked as the service will resolve it (the
 * policy and ranges every front end gets; *opts: the result); 0, or -1 after a message. */
static int build_request(const mt_service *svc, const cli_args *a, mt_service_request *rq, mt_decoding *opts)
{
    mt_service_request_init(rq);
    rq->decoding = a->decoding;
    rq->input = a->input_ids ? MT_FORMAT_IDS : a->input_html ? MT_FORMAT_HTML : MT_FORMAT_TEXT;
    rq->output_ids = a->output_ids;
    if (a->no_protect)
        rq->protect = 0;
    static const char *prefix[1];
    prefix[0] = a->prefix ? a->prefix : a->prefix_ids;
    if (prefix[0]) {
        rq->target_prefix = prefix;
        rq->prefix_ids = a->prefix_ids != NULL;
    }
    char err[512];
    if (mt_service_resolve(svc, 0, rq, opts, err, sizeof err)) {
        fprintf(stderr, "mt-translate: %s\n", err);
        return -1;
    }
    return 0;
}

/* Reads stdin's lines and translates them CHUNK_LINES at a time. */
static int translate_lines(mt_service *svc, const mt_service_request *rq)
{
    char **lines = calloc(CHUNK_LINES, sizeof *lines);
    size_t *lens = calloc(CHUNK_LINES, sizeof *lens);
    int n = 0, rc = lines && lens ? 0 : 1;
    long done = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while (!rc && (len = getline(&line, &cap, stdin)) >= 0) {
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = 0;
        lines[n] = line;
        lens[n++] = (size_t)len;
        line = NULL;
        cap = 0;
        if (n == CHUNK_LINES) {
            rc = flush_chunk(svc, rq, lines, lens, n, done) ? 1 : 0;
            for (int i = 0; i < n; i++)
                free(lines[i]);
            done += n;
            n = 0;
        }
    }
    free(line);
    if (!rc && n)
        rc = flush_chunk(svc, rq, lines, lens, n, done) ? 1 : 0;
    for (int i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
    free(lens);
    return rc;
}

int main(int argc, char **argv)
{
    /* Process setup first (BLAS kernel choice, may re-exec) */
    mt_service_process_setup(argv, getenv("MT_BLAS_CORETYPE"));
    /* The engine's settings from the environment (MT_COMPUTE_TYPE, MT_KERNELS,
     * MT_CPU_HIDE, MT_SPLIT_MIN) as config reads them; the flags below win */
    char err[1024];
    mt_config engine;
    mt_config_init(&engine);
    if (mt_config_apply_engine_env(&engine, environ, err, sizeof err)) {
        fprintf(stderr, "mt-translate: %s\n", err);
        return 2;
    }
    cli_args a = {.threads = 1, .workers = 0, .batch = 32, .compute_type = engine.compute_type};
    if (parse_args(argc, argv, &a)) {
        mt_config_free(&engine);
        return 2;
    }
    if (a.workers <= 0) { /* as mt-server: the CPUs this process may use (affinity, cgroup quota) */
        a.workers = mt_available_cpus() / a.threads;
        if (a.workers < 1) a.workers = 1;
    }
    if (a.models_dir && pick_model(&a)) {
        mt_config_free(&engine);
        return 1;
    }
    struct stat st;
    if (stat(a.model, &st) != 0) {
        fprintf(stderr, "mt-translate: no model at %s (try: mt-models list, or ls models/)\n", a.model);
        mt_config_free(&engine);
        return 1;
    }
    output_json = a.output_json;
    mt_service_config cfg;
    mt_service_config_default(&cfg);
    cfg.workers = a.workers;
    cfg.threads_per_worker = a.threads;
    cfg.max_sentences = a.batch;
    cfg.cache_bytes = (size_t)a.cache_mb << 20;
    cfg.kernels = engine.kernels;
    cfg.cpu_hide = engine.cpu_hide;
    cfg.split_min = engine.split_min;
    mt_service_spec spec = {a.model, NULL, a.source_lang, a.target_lang, a.compute_type};
    mt_service *svc = mt_service_load(&spec, 1, &cfg, NULL, err, sizeof err);
    if (!svc) {
        fprintf(stderr, "mt-translate: %s\n", err);
        mt_config_free(&engine);
        return 1;
    }
    const mt_service_model *m = mt_service_model_info(svc, 0);
    mt_service_request rq;
    mt_decoding opts;
    int rc = 2;
    mt_glossary *glossary = NULL;
    if (a.glossary && !(glossary = read_glossary(a.glossary, m->source, m->target))) {
        mt_service_free(svc);
        mt_config_free(&engine);
        return 1;
    }
    if (build_request(svc, &a, &rq, &opts) == 0) {
        rq.glossary = glossary;
        n_best_out = (int)opts.v[MT_OPT_N_BEST];
        if (a.verbose)
            fprintf(stderr, "mt-translate: model %s (%s -> %s), beam %d, BLAS kernels %s, %d worker(s) x %d thread(s)\n",
                    m->name, m->source, m->target, (int)opts.v[MT_OPT_BEAM_SIZE], mt_service_blas_name(), a.workers,
                    a.threads);
        if (a.verbose)
            fprintf(stderr, "mt-translate: model compute type %s\n", m->compute_detail);
        if (a.file)
            rc = mt_cli_translate_file(svc, &rq, a.file, a.output_file, m->target);
        else
            rc = rq.input == MT_FORMAT_HTML ? (translate_document(svc, &rq) ? 1 : 0) : translate_lines(svc, &rq);
    }
    mt_glossary_free(glossary);
    mt_service_free(svc);
    mt_config_free(&engine);
    return rc;
}
