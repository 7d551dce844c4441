/* latency-tool: one sentence at a time through the translation service, timed one by one
 * (bench/bench_peers.py's batch-1 rows: latency percentiles). A benchmark helper, not
 * part of the product.
 *
 *   latency-tool MODEL_DIR COMPUTE_TYPE THREADS BEAM MAX_LENGTH < lines > translations
 *
 * Prints each translation on stdout and, at the end, one JSON line on stderr:
 * {"load_s": ..., "latency_ms": [per line, in input order]}. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "service_engine.h"

extern char **environ;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    mt_process_setup(argv, getenv("MT_BLAS_CORETYPE"));
    if (argc != 6) {
        fprintf(stderr, "usage: latency-tool MODEL_DIR COMPUTE_TYPE THREADS BEAM MAX_LENGTH < lines\n");
        return 2;
    }
    char err[1024];
    mt_config engine; /* MT_KERNELS, MT_CPU_HIDE, MT_SPLIT_MIN, as mt-translate reads them */
    mt_config_init(&engine);
    if (mt_config_apply_engine_env(&engine, environ, err, sizeof err)) {
        fprintf(stderr, "latency-tool: %s\n", err);
        return 2;
    }
    mt_model_options mo;
    mt_model_options_default(&mo);
    mo.kernels = engine.kernels;
    mo.cpu_hide = engine.cpu_hide;
    mo.split_min = engine.split_min;
    if (mt_compute_type_parse(argv[2], &mo.compute_type)) {
        fprintf(stderr, "latency-tool: unknown compute type '%s'\n", argv[2]);
        return 2;
    }
    double t0 = now_s();
    mt_translator *tr = mt_translator_load_ex(argv[1], NULL, NULL, &mo, err, sizeof err);
    if (!tr) {
        fprintf(stderr, "latency-tool: %s\n", err);
        return 1;
    }
    mt_service_config cfg;
    mt_service_config_default(&cfg);
    cfg.workers = 1;
    cfg.threads_per_worker = atoi(argv[3]) > 0 ? atoi(argv[3]) : 1;
    cfg.max_sentences = 1;
    mt_service *svc = mt_service_create(&tr, 1, &cfg, NULL, err, sizeof err);
    if (!svc) {
        fprintf(stderr, "latency-tool: %s\n", err);
        mt_translator_free(tr);
        return 1;
    }
    double load = now_s() - t0;
    mt_service_options opts;
    mt_service_options_default(svc, 0, &opts);
    opts.search.beam_size = atoi(argv[4]) > 0 ? atoi(argv[4]) : opts.search.beam_size;
    opts.search.max_length = atoi(argv[5]) > 0 ? atoi(argv[5]) : opts.search.max_length;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int rc = 0;
    fprintf(stderr, "{\"load_s\": %.4f, \"latency_ms\": [", load);
    for (int n = 0; (len = getline(&line, &cap, stdin)) >= 0; n++) {
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = 0;
        const char *text = line;
        size_t tlen = (size_t)len;
        mt_translation out;
        double s = now_s();
        if (mt_service_translate(svc, 0, &opts, 1, &text, &tlen, &out, err, sizeof err)) {
            fprintf(stderr, "]}\nlatency-tool: %s\n", err);
            rc = 1;
            break;
        }
        fprintf(stderr, "%s%.3f", n ? ", " : "", (now_s() - s) * 1e3);
        puts(out.texts[0]);
        mt_translation_clear(&out);
    }
    if (!rc)
        fprintf(stderr, "]}\n");
    free(line);
    mt_service_free(svc);
    mt_translator_free(tr);
    return rc;
}
