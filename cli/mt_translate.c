/* mt-translate: translates UTF-8 lines from stdin to stdout, one output line per input
 * line, in order; with --input html, the whole input is one HTML document. It only turns
 * arguments into service options and prints results: the translation service
 * (translator/service.h) that mt-server uses runs the pipeline, batching the sentences of
 * a chunk of lines by length across --workers threads, so both always agree. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "mt_file.h"
#include "service.h"

enum { CHUNK_LINES = 20000 }; /* lines translated together: sorted by length across the chunk */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mt-translate --model DIR [options] < input > output\n"
            "       mt-translate --model DIR [options] FILE [--output-file OUT]\n"
            "  FILE                    a .txt, .html, .srt, .docx or .odt file, translated into OUT\n"
            "                          (default: next to it, the target code before the extension:\n"
            "                          report.docx -> report.de.docx); a progress bar on a terminal\n"
            "  --output-file OUT       where FILE's translation goes\n"
            "  --model DIR             model directory (Hugging Face MarianMT / OPUS-MT layout)\n"
            "  --beam N                beam size (default: the model's num_beams, else 4; 1 = greedy)\n"
            "  --length-penalty A      score = sum(log p) / length^A (default: the model's, else 1.0)\n"
            "  --max-length N          at most N decoding steps, eos included (default: the model's, else 256)\n"
            "  --max-length-factor F   also at most F * source length + 10 steps (default 0: off)\n"
            "  --n-best N              print N hypotheses per line as 'INDEX ||| text ||| score'\n"
            "  --threads N             compute threads of each worker (default 1)\n"
            "  --workers N             translation worker threads, each running batches (default 1)\n"
            "  --sentence-cache-mb N   answer repeated sentences from an LRU cache of N MiB (default 0: off)\n"
            "  --batch-size N          sentences per batch (default 32)\n"
            "  --input text|ids|html   ids: lines are space-separated source ids (eos appended);\n"
            "                          html: the whole input is one HTML document (markup kept,\n"
            "                          text translated), written back as it came, without --n-best\n"
            "  --output text|ids|json  ids: print generated target ids instead of text; json: one\n"
            "                          object per line: translation, score, and with the options\n"
            "                          below token_scores, alignments, token_alignments\n"
            "Decoding controls (CTranslate2's names; defaults change nothing):\n"
            "  --sampling-topk K       sample from the K most likely (0: all; default 1: no sampling;\n"
            "                          sampling without --beam uses beam 1)\n"
            "  --sampling-topp P       sample from the smallest set of mass >= P, in (0, 1] (default 1)\n"
            "  --sampling-temperature T  divide logits by T > 0 before sampling (default 1)\n"
            "  --seed N                sampling seed (default 0): same seed and input, same output\n"
            "  --no-repeat-ngram-size N  no n-gram of size N occurs twice (default 0: off)\n"
            "  --repetition-penalty R  penalise generated tokens, R >= 1 (default 1: off)\n"
            "  --min-length N          no end of sentence before N tokens (default 0)\n"
            "  --target-prefix TEXT    every line's translation starts with TEXT\n"
            "  --target-prefix-ids IDS the same as target ids (\"12 7\")\n"
            "  --return-scores         per-token log-probabilities (with --output json)\n"
            "  --return-alignments     word and token alignments (with --output json)\n"
            "  --alignment-layer N     decoder layer that aligns, < 0 from the end (default -1)\n"
            "  --replace-unknowns      an <unk> in the output becomes its aligned source token\n"
            "  --no-protect            translate URLs, e-mails, @mentions, #hashtags and\n"
            "                          placeholders too (default: kept byte for byte)\n"
            "  --source-lang L, --target-lang L   override tokenizer_config.json's pair\n"
            "  --compute-type T        float32 (exact), bfloat16, int8 or auto (the fastest measured at\n"
            "                          load on this CPU); default: MT_COMPUTE_TYPE, else what the model\n"
            "                          directory stores (float32; int8 for a quantized directory)\n"
            "  --verbose               print the model, BLAS kernel and compute type in use to stderr\n"
            "  --version               print the version and exit\n");
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

static int parse_float(const char *name, const char *v, float *out)
{
    char *end;
    errno = 0;
    float x = strtof(v, &end);
    if (errno || *end || x != x) {
        fprintf(stderr, "mt-translate: %s must be a number, got '%s'\n", name, v);
        return -1;
    }
    *out = x;
    return 0;
}

typedef struct {
    const char *model, *source_lang, *target_lang, *file, *output_file;
    int beam, n_best, max_length, threads, workers, batch, input_ids, input_html, output_ids, verbose;
    int cache_mb;
    float length_penalty, max_length_factor;
    int have_lp, have_factor;
    int output_json, topk, have_topk, seed_set, no_repeat, min_length, return_scores, return_alignments;
    int alignment_layer, have_layer, replace_unknowns, no_protect;
    long long seed;
    float topp, temperature, repetition_penalty;
    int have_topp, have_temperature, have_rp;
    const char *prefix, *prefix_ids;
    mt_model_options model_opts;
} cli_args;

static int parse_args(int argc, char **argv, cli_args *a)
{
    static const struct option longs[] = {
        {"model", 1, 0, 'm'},          {"beam", 1, 0, 'b'},        {"length-penalty", 1, 0, 'l'},
        {"max-length", 1, 0, 'L'},     {"max-length-factor", 1, 0, 'F'}, {"n-best", 1, 0, 'n'},
        {"threads", 1, 0, 't'},        {"batch-size", 1, 0, 's'},  {"input", 1, 0, 'i'},
        {"output", 1, 0, 'o'},         {"source-lang", 1, 0, 'S'}, {"target-lang", 1, 0, 'T'},
        {"verbose", 0, 0, 'v'},        {"help", 0, 0, 'h'},        {"workers", 1, 0, 'w'},
        {"version", 0, 0, 'V'},        {"output-file", 1, 0, 'O'},  {"sampling-topk", 1, 0, 1000}, {"sampling-topp", 1, 0, 1001},
        {"sampling-temperature", 1, 0, 1002}, {"seed", 1, 0, 1003}, {"no-repeat-ngram-size", 1, 0, 1004},
        {"repetition-penalty", 1, 0, 1005}, {"min-length", 1, 0, 1006}, {"target-prefix", 1, 0, 1007},
        {"target-prefix-ids", 1, 0, 1008}, {"return-scores", 0, 0, 1009}, {"return-alignments", 0, 0, 1010},
        {"alignment-layer", 1, 0, 1011}, {"replace-unknowns", 0, 0, 1012}, {"no-protect", 0, 0, 1013}, {"sentence-cache-mb", 1, 0, 1014},
        {"compute-type", 1, 0, 'C'},
        {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "m:b:n:t:vh", longs, NULL)) != -1) {
        int rc = 0;
        switch (c) {
        case 'm': a->model = optarg; break;
        case 'b': rc = parse_int("--beam", optarg, 1, &a->beam); break;
        case 'l': rc = parse_float("--length-penalty", optarg, &a->length_penalty); a->have_lp = 1; break;
        case 'L': rc = parse_int("--max-length", optarg, 1, &a->max_length); break;
        case 'F': rc = parse_float("--max-length-factor", optarg, &a->max_length_factor); a->have_factor = 1; break;
        case 'n': rc = parse_int("--n-best", optarg, 1, &a->n_best); break;
        case 't': rc = parse_int("--threads", optarg, 1, &a->threads); break;
        case 'w': rc = parse_int("--workers", optarg, 1, &a->workers); break;
        case 's': rc = parse_int("--batch-size", optarg, 1, &a->batch); break;
        case 'S': a->source_lang = optarg; break;
        case 'O': a->output_file = optarg; break;
        case 'T': a->target_lang = optarg; break;
        case 'v': a->verbose = 1; break;
        case 1000: rc = parse_int("--sampling-topk", optarg, 0, &a->topk); a->have_topk = 1; break;
        case 1001: rc = parse_float("--sampling-topp", optarg, &a->topp); a->have_topp = 1; break;
        case 1002: rc = parse_float("--sampling-temperature", optarg, &a->temperature); a->have_temperature = 1; break;
        case 1003: {
            char *end;
            errno = 0;
            a->seed = strtoll(optarg, &end, 10);
            if (errno || *end || !*optarg || a->seed < 0) {
                fprintf(stderr, "mt-translate: --seed must be an integer >= 0, got '%s'\n", optarg);
                rc = -1;
            }
            break;
        }
        case 1004: rc = parse_int("--no-repeat-ngram-size", optarg, 0, &a->no_repeat); break;
        case 1005: rc = parse_float("--repetition-penalty", optarg, &a->repetition_penalty); a->have_rp = 1; break;
        case 1006: rc = parse_int("--min-length", optarg, 0, &a->min_length); break;
        case 1007: a->prefix = optarg; break;
        case 1008: a->prefix_ids = optarg; break;
        case 1009: a->return_scores = 1; break;
        case 1010: a->return_alignments = 1; break;
        case 1011: rc = parse_int("--alignment-layer", optarg, -(1 << 20), &a->alignment_layer); a->have_layer = 1; break;
        case 1012: a->replace_unknowns = 1; break;
        case 1013: a->no_protect = 1; break;
        case 1014: rc = parse_int("--sentence-cache-mb", optarg, 0, &a->cache_mb); break;
        case 'C':
            if (mt_compute_type_parse(optarg, &a->model_opts.compute_type)) {
                fprintf(stderr, "mt-translate: --compute-type must be float32, bfloat16, int8, auto or default, "
                                "got '%s'\n", optarg);
                return -1;
            }
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
        default: usage(stderr); return -1;
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
    if (a->file && (a->n_best > 1 || a->output_ids || a->input_ids || a->input_html)) {
        fprintf(stderr, "mt-translate: a FILE is translated as a document: it takes none of --n-best, "
                        "--input, --output ids\n");
        return -1;
    }
    if (a->prefix && a->prefix_ids) {
        fprintf(stderr, "mt-translate: give --target-prefix or --target-prefix-ids, not both\n");
        return -1;
    }
    if (a->input_html && a->return_alignments) {
        fprintf(stderr, "mt-translate: --return-alignments is not available with --input html (HTML output "
                        "keeps markup)\n");
        return -1;
    }
    if (a->input_html && (a->n_best > 1 || a->output_ids || a->output_json)) {
        fprintf(stderr, "mt-translate: --input html translates one document: it takes neither --n-best "
                        "nor --output ids|json\n");
        return -1;
    }
    if (!a->model) {
        fprintf(stderr, "mt-translate: --model DIR is required\n");
        usage(stderr);
        return -1;
    }
    return 0;
}

/* --input html: translates all of stdin as one document. */
static int translate_document(mt_service *svc, const mt_service_options *opts)
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
    int rc = mt_service_translate(svc, 0, opts, 1, &text, &len, &out, err, sizeof err);
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

/* Translates and prints lines[0, n). */
static int flush_lines(mt_service *svc, const mt_service_options *opts, char **lines, size_t *lens, int n,
                       long first_index)
{
    mt_translation *out = calloc((size_t)n + 1, sizeof *out);
    char err[512];
    if (!out) {
        fprintf(stderr, "mt-translate: out of memory\n");
        return -1;
    }
    if (mt_service_translate(svc, 0, opts, n, (const char *const *)lines, lens, out, err, sizeof err)) {
        fprintf(stderr, "mt-translate: %s\n", err);
        free(out);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (output_json) {
            print_json(&out[i]);
        } else if (opts->search.n_best == 1) {
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
static int flush_chunk(mt_service *svc, const mt_service_options *opts, char **lines, size_t *lens, int n,
                       long first_index)
{
    const char **prefixes = NULL;
    mt_service_options o = *opts;
    if (opts->target_prefix) { /* one prefix for every line */
        prefixes = malloc(sizeof *prefixes * (size_t)n);
        if (!prefixes) {
            fprintf(stderr, "mt-translate: out of memory\n");
            return -1;
        }
        for (int i = 0; i < n; i++)
            prefixes[i] = opts->target_prefix[0];
        o.target_prefix = prefixes;
    }
    int rc = flush_lines(svc, &o, lines, lens, n, first_index);
    free(prefixes);
    return rc;
}

/* The service options from the command line; 0, or -1 after a message. */
static int build_options(const mt_service *svc, const cli_args *a, mt_service_options *opts)
{
    mt_service_options_default(svc, 0, opts);
    if (a->beam)
        opts->search.beam_size = a->beam;
    if (a->have_lp)
        opts->search.length_penalty = a->length_penalty;
    if (a->max_length)
        opts->search.max_length = a->max_length;
    if (a->have_factor)
        opts->search.max_length_factor = a->max_length_factor;
    opts->search.n_best = a->n_best ? a->n_best : 1;
    opts->input = a->input_ids ? MT_FORMAT_IDS : a->input_html ? MT_FORMAT_HTML : MT_FORMAT_TEXT;
    opts->output_ids = a->output_ids;
    if (a->have_topk)
        opts->search.sampling_topk = a->topk;
    if (a->have_topp)
        opts->search.sampling_topp = a->topp;
    if (a->have_temperature)
        opts->search.sampling_temperature = a->temperature;
    opts->search.seed = (uint64_t)a->seed;
    opts->search.no_repeat_ngram_size = a->no_repeat;
    if (a->have_rp)
        opts->search.repetition_penalty = a->repetition_penalty;
    opts->search.min_length = a->min_length;
    opts->search.return_scores = a->return_scores;
    opts->search.return_alignments = a->return_alignments;
    if (a->have_layer)
        opts->search.alignment_layer = a->alignment_layer;
    opts->search.replace_unknowns = a->replace_unknowns;
    if (a->no_protect)
        opts->protect = 0;
    if (opts->search.sampling_topk != 1 && !a->beam)
        opts->search.beam_size = 1; /* sampling draws one hypothesis */
    static const char *prefix[1];
    prefix[0] = a->prefix ? a->prefix : a->prefix_ids;
    if (prefix[0]) {
        opts->target_prefix = prefix;
        opts->prefix_ids = a->prefix_ids != NULL;
    }
    char err[512];
    if (mt_service_check_options(svc, 0, opts, err, sizeof err)) {
        fprintf(stderr, "mt-translate: %s\n", err);
        return -1;
    }
    if (opts->search.n_best > opts->search.beam_size) {
        fprintf(stderr, "mt-translate: --n-best %d is larger than the beam size %d\n", opts->search.n_best,
                opts->search.beam_size);
        return -1;
    }
    return 0;
}

/* Reads stdin's lines and translates them CHUNK_LINES at a time. */
static int translate_lines(mt_service *svc, const mt_service_options *opts)
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
            rc = flush_chunk(svc, opts, lines, lens, n, done) ? 1 : 0;
            for (int i = 0; i < n; i++)
                free(lines[i]);
            done += n;
            n = 0;
        }
    }
    free(line);
    if (!rc && n)
        rc = flush_chunk(svc, opts, lines, lens, n, done) ? 1 : 0;
    for (int i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
    free(lens);
    return rc;
}

int main(int argc, char **argv)
{
    /* Process setup (BLAS kernel choice, may re-exec): to become the model's explicit
     * process-setup call once model.h offers one. */
    mt_process_setup(argv);
    cli_args a = {.threads = 1, .workers = 1, .batch = 32};
    mt_model_options_default(&a.model_opts);
    if (parse_args(argc, argv, &a))
        return 2;
    output_json = a.output_json;
    char err[1024];
    mt_translator *tr = mt_translator_load_ex(a.model, a.source_lang, a.target_lang, &a.model_opts, err, sizeof err);
    if (!tr) {
        fprintf(stderr, "mt-translate: cannot load model: %s\n", err);
        return 1;
    }
    mt_service_config cfg;
    mt_service_config_default(&cfg);
    cfg.workers = a.workers;
    cfg.threads_per_worker = a.threads;
    cfg.max_sentences = a.batch;
    cfg.cache_bytes = (size_t)a.cache_mb << 20;
    mt_service *svc = mt_service_create(&tr, 1, &cfg, NULL, err, sizeof err);
    if (!svc) {
        fprintf(stderr, "mt-translate: %s\n", err);
        mt_translator_free(tr);
        return 1;
    }
    mt_service_options opts;
    int rc = 2;
    if (build_options(svc, &a, &opts) == 0) {
        if (a.verbose)
            fprintf(stderr, "mt-translate: model %s (%s -> %s), beam %d, BLAS kernels %s, %d worker(s) x %d thread(s)\n",
                    mt_translator_name(tr), mt_translator_source_lang(tr), mt_translator_target_lang(tr),
                    opts.search.beam_size, mt_blas_core_name(), a.workers, a.threads);
        if (a.verbose)
            fprintf(stderr, "mt-translate: model compute type %s\n",
                    mt_model_compute_detail(mt_translator_model(tr)));
        if (a.file)
            rc = mt_cli_translate_file(svc, &opts, a.file, a.output_file, mt_translator_target_lang(tr));
        else
        rc = opts.input == MT_FORMAT_HTML ? (translate_document(svc, &opts) ? 1 : 0) : translate_lines(svc, &opts);
    }
    mt_service_free(svc);
    mt_translator_free(tr);
    return rc;
}
