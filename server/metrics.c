/* metrics.c: Prometheus text exposition. */
#include "metrics.h"

#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include <time.h>
#include <sys/resource.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#define N_STATUS 600

static const double LATENCY_BUCKETS[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                         0.5, 1, 2.5, 5, 10, 30, 60};
#define N_LAT (sizeof LATENCY_BUCKETS / sizeof LATENCY_BUCKETS[0])
static const double SIZE_BUCKETS[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
#define N_SIZE (sizeof SIZE_BUCKETS / sizeof SIZE_BUCKETS[0])
static const double TOKEN_BUCKETS[] = {16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
#define N_TOK (sizeof TOKEN_BUCKETS / sizeof TOKEN_BUCKETS[0])

typedef struct {
    unsigned long counts[16]; /* per bucket (not cumulative); last = +Inf */
    unsigned long n;
    double sum;
} histogram;

typedef struct {
    char *name;
    unsigned long sentences, src_tokens, tgt_tokens;
} model_stats;

struct mt_metrics {
    pthread_mutex_t mu;
    double start_time;     /* CLOCK_REALTIME seconds when the metrics (the server) began */
    unsigned long requests[MT_EP_COUNT][N_STATUS];
    histogram latency[MT_EP_COUNT];
    histogram batch_sentences, batch_tokens, batch_seconds, queue_wait;
    unsigned long rejected, cancelled;
    model_stats *models;
    int n_models;
};

const char *mt_endpoint_path(mt_endpoint ep)
{
    static const char *const paths[] = {"/translate", "/languages", "/health", "/metrics", "other"};
    return ep >= 0 && ep < MT_EP_COUNT ? paths[ep] : "other";
}

mt_metrics *mt_metrics_create(void)
{
    mt_metrics *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    pthread_mutex_init(&m->mu, NULL);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    m->start_time = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
    return m;
}

void mt_metrics_free(mt_metrics *m)
{
    if (!m) return;
    for (int i = 0; i < m->n_models; i++) free(m->models[i].name);
    free(m->models);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

int mt_metrics_set_models(mt_metrics *m, int n, const char *const *names)
{
    model_stats *ms = calloc((size_t)n + 1, sizeof *ms);
    if (!ms) return -1;
    for (int i = 0; i < n; i++)
        if (!(ms[i].name = strdup(names[i]))) {
            for (int k = 0; k < i; k++) free(ms[k].name);
            free(ms);
            return -1;
        }
    pthread_mutex_lock(&m->mu);
    for (int i = 0; i < m->n_models; i++) free(m->models[i].name);
    free(m->models);
    m->models = ms;
    m->n_models = n;
    pthread_mutex_unlock(&m->mu);
    return 0;
}

static void observe(histogram *h, const double *bounds, size_t nb, double v)
{
    size_t i = 0;
    while (i < nb && v > bounds[i]) i++;
    h->counts[i]++;
    h->n++;
    h->sum += v;
}

void mt_metrics_request(mt_metrics *m, mt_endpoint ep, int status, double seconds)
{
    if ((int)ep < 0 || ep >= MT_EP_COUNT) ep = MT_EP_OTHER;
    if (status < 0 || status >= N_STATUS) status = 0;
    pthread_mutex_lock(&m->mu);
    m->requests[ep][status]++;
    observe(&m->latency[ep], LATENCY_BUCKETS, N_LAT, seconds);
    pthread_mutex_unlock(&m->mu);
}

void mt_metrics_translated(mt_metrics *m, int model, long sentences, long src_tokens, long tgt_tokens)
{
    pthread_mutex_lock(&m->mu);
    if (model >= 0 && model < m->n_models) {
        m->models[model].sentences += (unsigned long)sentences;
        m->models[model].src_tokens += (unsigned long)src_tokens;
        m->models[model].tgt_tokens += (unsigned long)tgt_tokens;
    }
    pthread_mutex_unlock(&m->mu);
}

void mt_metrics_batch(mt_metrics *m, int sentences, long tokens, double seconds)
{
    pthread_mutex_lock(&m->mu);
    observe(&m->batch_sentences, SIZE_BUCKETS, N_SIZE, sentences);
    observe(&m->batch_tokens, TOKEN_BUCKETS, N_TOK, (double)tokens);
    observe(&m->batch_seconds, LATENCY_BUCKETS, N_LAT, seconds);
    pthread_mutex_unlock(&m->mu);
}

void mt_metrics_queue_wait(mt_metrics *m, double seconds)
{
    pthread_mutex_lock(&m->mu);
    observe(&m->queue_wait, LATENCY_BUCKETS, N_LAT, seconds);
    pthread_mutex_unlock(&m->mu);
}

void mt_metrics_rejected(mt_metrics *m)
{
    pthread_mutex_lock(&m->mu);
    m->rejected++;
    pthread_mutex_unlock(&m->mu);
}

void mt_metrics_cancelled(mt_metrics *m, long sentences)
{
    pthread_mutex_lock(&m->mu);
    m->cancelled += (unsigned long)sentences;
    pthread_mutex_unlock(&m->mu);
}

static void write_histogram(FILE *f, const char *name, const char *labels, const histogram *h,
                            const double *bounds, size_t nb)
{
    unsigned long cum = 0;
    const char *sep = labels && *labels ? "," : "";
    for (size_t i = 0; i < nb; i++) {
        cum += h->counts[i];
        fprintf(f, "%s_bucket{%s%sle=\"%g\"} %lu\n", name, labels ? labels : "", sep, bounds[i], cum);
    }
    cum += h->counts[nb];
    fprintf(f, "%s_bucket{%s%sle=\"+Inf\"} %lu\n", name, labels ? labels : "", sep, cum);
    if (labels && *labels) {
        fprintf(f, "%s_sum{%s} %.9g\n", name, labels, h->sum);
        fprintf(f, "%s_count{%s} %lu\n", name, labels, h->n);
    } else {
        fprintf(f, "%s_sum %.9g\n", name, h->sum);
        fprintf(f, "%s_count %lu\n", name, h->n);
    }
}

/* Model names go into label values: escape \, " and newlines. */
static void write_label(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"') fprintf(f, "\\%c", *s);
        else if (*s == '\n') fputs("\\n", f);
        else fputc(*s, f);
    }
}

/* The process's own numbers, in Prometheus's process_* conventions (Linux /proc). */
static void write_process_metrics(FILE *f, double start_time)
{
    struct rusage ru;
    double cpu = 0;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
              (double)ru.ru_stime.tv_usec * 1e-6;
    long page = sysconf(_SC_PAGESIZE);
    unsigned long vm_pages = 0, rss_pages = 0;
    FILE *statm = fopen("/proc/self/statm", "r");
    if (statm) {
        if (fscanf(statm, "%lu %lu", &vm_pages, &rss_pages) != 2) vm_pages = rss_pages = 0;
        fclose(statm);
    }
    long fds = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        for (struct dirent *e; (e = readdir(d)) != NULL;) fds += e->d_name[0] != '.';
        closedir(d);
        fds--; /* the directory stream's own descriptor */
    }
    struct rlimit rl;
    double max_fds = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (double)rl.rlim_cur : -1;
    fprintf(f,
            "# HELP mt_build_info The mt-server build: version label, value 1.\n# TYPE mt_build_info gauge\n"
            "mt_build_info{version=\"%s\"} 1\n"
            "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
            "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %.3f\n"
            "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
            "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %.0f\n"
            "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
            "# TYPE process_virtual_memory_bytes gauge\nprocess_virtual_memory_bytes %.0f\n"
            "# HELP process_open_fds Number of open file descriptors.\n"
            "# TYPE process_open_fds gauge\nprocess_open_fds %ld\n"
            "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n"
            "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %.3f\n",
            MT_VERSION, cpu, (double)rss_pages * (double)page, (double)vm_pages * (double)page, fds, start_time);
    if (max_fds > 0)
        fprintf(f, "# HELP process_max_fds Maximum number of open file descriptors.\n"
                   "# TYPE process_max_fds gauge\nprocess_max_fds %.0f\n", max_fds);
}

char *mt_metrics_render(mt_metrics *m, const mt_metrics_gauges *g)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    pthread_mutex_lock(&m->mu);
    fputs("# HELP mt_http_requests_total HTTP requests served, by endpoint and status code.\n"
          "# TYPE mt_http_requests_total counter\n", f);
    for (int e = 0; e < MT_EP_COUNT; e++)
        for (int s = 0; s < N_STATUS; s++)
            if (m->requests[e][s])
                fprintf(f, "mt_http_requests_total{endpoint=\"%s\",status=\"%d\"} %lu\n",
                        mt_endpoint_path((mt_endpoint)e), s, m->requests[e][s]);
    fputs("# HELP mt_http_request_duration_seconds Time from request arrival to response, by endpoint.\n"
          "# TYPE mt_http_request_duration_seconds histogram\n", f);
    for (int e = 0; e < MT_EP_COUNT; e++) {
        char labels[64];
        snprintf(labels, sizeof labels, "endpoint=\"%s\"", mt_endpoint_path((mt_endpoint)e));
        write_histogram(f, "mt_http_request_duration_seconds", labels, &m->latency[e],
                        LATENCY_BUCKETS, N_LAT);
    }
    fputs("# HELP mt_sentences_translated_total Sentences translated, by model.\n"
          "# TYPE mt_sentences_translated_total counter\n", f);
    for (int i = 0; i < m->n_models; i++) {
        fputs("mt_sentences_translated_total{model=\"", f);
        write_label(f, m->models[i].name);
        fprintf(f, "\"} %lu\n", m->models[i].sentences);
    }
    fputs("# HELP mt_source_tokens_total Source tokens translated, by model.\n"
          "# TYPE mt_source_tokens_total counter\n", f);
    for (int i = 0; i < m->n_models; i++) {
        fputs("mt_source_tokens_total{model=\"", f);
        write_label(f, m->models[i].name);
        fprintf(f, "\"} %lu\n", m->models[i].src_tokens);
    }
    fputs("# HELP mt_target_tokens_total Target tokens produced (best hypotheses), by model.\n"
          "# TYPE mt_target_tokens_total counter\n", f);
    for (int i = 0; i < m->n_models; i++) {
        fputs("mt_target_tokens_total{model=\"", f);
        write_label(f, m->models[i].name);
        fprintf(f, "\"} %lu\n", m->models[i].tgt_tokens);
    }
    fprintf(f, "# HELP mt_requests_rejected_total Translate requests refused with 503 because the queue was full.\n"
               "# TYPE mt_requests_rejected_total counter\nmt_requests_rejected_total %lu\n", m->rejected);
    fprintf(f, "# HELP mt_sentences_cancelled_total Sentences dropped: client disconnected, deadline passed or shutdown.\n"
               "# TYPE mt_sentences_cancelled_total counter\nmt_sentences_cancelled_total %lu\n", m->cancelled);
    fputs("# HELP mt_batch_sentences Sentences per batch.\n# TYPE mt_batch_sentences histogram\n", f);
    write_histogram(f, "mt_batch_sentences", NULL, &m->batch_sentences, SIZE_BUCKETS, N_SIZE);
    fputs("# HELP mt_batch_tokens Padded source tokens per batch.\n# TYPE mt_batch_tokens histogram\n", f);
    write_histogram(f, "mt_batch_tokens", NULL, &m->batch_tokens, TOKEN_BUCKETS, N_TOK);
    fputs("# HELP mt_batch_duration_seconds Compute time per batch.\n# TYPE mt_batch_duration_seconds histogram\n", f);
    write_histogram(f, "mt_batch_duration_seconds", NULL, &m->batch_seconds, LATENCY_BUCKETS, N_LAT);
    fputs("# HELP mt_queue_wait_seconds Time a request waited for its first batch.\n# TYPE mt_queue_wait_seconds histogram\n", f);
    write_histogram(f, "mt_queue_wait_seconds", NULL, &m->queue_wait, LATENCY_BUCKETS, N_LAT);
    pthread_mutex_unlock(&m->mu);
    fprintf(f,
            "# HELP mt_queue_depth Sentences waiting for a worker.\n# TYPE mt_queue_depth gauge\nmt_queue_depth %d\n"
            "# HELP mt_queue_requests Translate requests admitted and not finished.\n# TYPE mt_queue_requests gauge\nmt_queue_requests %d\n"
            "# HELP mt_workers Translation worker threads.\n# TYPE mt_workers gauge\nmt_workers %d\n"
            "# HELP mt_workers_busy Workers running a batch.\n# TYPE mt_workers_busy gauge\nmt_workers_busy %d\n"
            "# HELP mt_http_in_flight HTTP requests being served.\n# TYPE mt_http_in_flight gauge\nmt_http_in_flight %d\n"
            "# HELP mt_ready 1 when the models are loaded and the server accepts translations.\n# TYPE mt_ready gauge\nmt_ready %d\n"
            "# HELP mt_draining 1 while shutting down.\n# TYPE mt_draining gauge\nmt_draining %d\n",
            g->queued_sentences, g->queued_requests, g->workers, g->busy_workers, g->in_flight,
            g->ready, g->draining);
    write_process_metrics(f, m->start_time);
    if (g->cache_on)
        fprintf(f,
                "# HELP mt_sentence_cache_hits_total Sentences answered from the sentence cache.\n"
                "# TYPE mt_sentence_cache_hits_total counter\nmt_sentence_cache_hits_total %ld\n"
                "# HELP mt_sentence_cache_misses_total Cacheable sentences not in the cache.\n"
                "# TYPE mt_sentence_cache_misses_total counter\nmt_sentence_cache_misses_total %ld\n"
                "# HELP mt_sentence_cache_entries Sentences held by the cache.\n"
                "# TYPE mt_sentence_cache_entries gauge\nmt_sentence_cache_entries %ld\n"
                "# HELP mt_sentence_cache_bytes Bytes held by the cache.\n"
                "# TYPE mt_sentence_cache_bytes gauge\nmt_sentence_cache_bytes %zu\n",
                g->cache_hits, g->cache_misses, g->cache_entries, g->cache_bytes);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}
