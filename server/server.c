/* server.c: the server's life cycle: listen (libmicrohttpd, the handler in handler.c),
 * load the models and start the translation service, drain, stop and free. */
#include "deepl.h"
#include "internal.h"

#include "cond.h"
#include "cpus.h"

#include <netdb.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

mt_server *mt_server_create(const mt_config *cfg, mt_log *log, mt_metrics *metrics, char *err,
                            size_t errlen)
{
    mt_server *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->cfg = cfg;
    s->log = log;
    s->metrics = metrics;
    snprintf(s->host, sizeof s->host, "%s", cfg->host);
    pthread_mutex_init(&s->watch_mu, NULL);
    pthread_mutex_init(&s->conns_mu, NULL);
    mt_cond_init_monotonic(&s->watch_cond);
    if (srv_cidrs_parse(cfg->trusted_proxies, &s->proxies, &s->n_proxies, err, errlen)) {
        mt_server_free(s);
        return NULL;
    }
    if (srv_limits_init(s, err, errlen) || srv_files_init(s, err, errlen) || srv_deepl_init(s, err, errlen) || srv_suggest_init(s, err, errlen) ||
        srv_jobs_init(s, err, errlen)) {
        mt_server_free(s);
        return NULL;
    }
    if (srv_glossaries_init(s, err, errlen)) { /* after the store, which it may share */
        mt_server_free(s);
        return NULL;
    }

    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    char port[16];
    snprintf(port, sizeof port, "%d", cfg->port);
    int gai = getaddrinfo(cfg->host, port, &hints, &ai);
    if (gai != 0 || !ai) {
        snprintf(err, errlen, "cannot resolve listen address '%s': %s", cfg->host, gai_strerror(gai));
        mt_server_free(s);
        return NULL;
    }
    /* poll(), not MHD_USE_AUTO's epoll: with epoll and internal threads, MHD_quiesce_daemon
     * (mt_server_begin_drain, on SIGTERM) races the polling threads, which also take the
     * listening socket out of their epoll set once they see the daemon quiesced; the loser's
     * epoll_ctl gets ENOENT and libmicrohttpd (0.9.75, Debian 12) aborts the process: "Failed
     * to remove listen FD from epoll set". With poll() quiescing goes through the inter-thread
     * channel (MHD_USE_ITC) and the threads simply stop polling the socket. */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ITC | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    struct sockaddr_storage addr;
    memcpy(&addr, ai->ai_addr, ai->ai_addrlen);
    freeaddrinfo(ai);
    struct MHD_OptionItem opts[] = {
        {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)srv_on_mhd_log, s},
        {MHD_OPTION_SOCK_ADDR, 0, &addr},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)srv_on_completed, s},
        {MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)srv_on_uri, s},
        /* a few more than max_connections are accepted, to be answered 503 (conns.c) */
        {MHD_OPTION_CONNECTION_LIMIT, cfg->max_connections + 16, NULL},
        {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)srv_on_connection, s},
        {MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)(unsigned)cfg->idle_timeout, NULL},
        {cfg->http_threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END,
         cfg->http_threads, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    s->daemon = MHD_start_daemon(flags, 0, NULL, NULL, srv_on_request, s, MHD_OPTION_ARRAY, opts,
                                 MHD_OPTION_END);
    if (!s->daemon) {
        snprintf(err, errlen, "cannot listen on %s port %d (address in use, or not allowed?)",
                 cfg->host, cfg->port);
        mt_server_free(s);
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di ? di->port : cfg->port;
    if (pthread_create(&s->watcher, NULL, srv_watcher_main, s) != 0) {
        snprintf(err, errlen, "cannot start the watcher thread");
        mt_server_free(s);
        return NULL;
    }
    s->watch_started = 1;
    return s;
}

int mt_server_port(const mt_server *s) { return s->port; }

int mt_server_in_flight(const mt_server *s) { return atomic_load(&((mt_server *)s)->in_flight); }

/* The service's reports: metrics, and log lines for loaded models and detection. */
static void on_batch(void *u, int sentences, long tokens, double secs)
{
    mt_metrics_batch(((mt_server *)u)->metrics, sentences, tokens, secs);
}
static void on_queue_wait(void *u, double secs) { mt_metrics_queue_wait(((mt_server *)u)->metrics, secs); }
static void on_cancelled(void *u, long sentences) { mt_metrics_cancelled(((mt_server *)u)->metrics, sentences); }
static void on_translated(void *u, int model, long sentences, long src, long tgt)
{
    mt_metrics_translated(((mt_server *)u)->metrics, model, sentences, src, tgt);
}
static void on_note(void *u, int warning, const char *event, const char *text)
{
    mt_log_write(((mt_server *)u)->log, warning ? MT_LOG_WARN : MT_LOG_INFO, event, "%s", text);
}
static void on_loaded(void *u, int i, const mt_service_model *m)
{
    (void)i;
    char q1[600], q2[100], q3[800];
    mt_log_write(((mt_server *)u)->log, MT_LOG_INFO, "model_loaded",
                 "model=%s dir=%s format=%s compute_type=%s compute=%s source=%s target=%s language_tokens=%d "
                 "d_model=%d layers=%d+%d beam=%d max_length=%d load_ms=%.1f",
                 mt_log_quote(q2, sizeof q2, m->name), mt_log_quote(q1, sizeof q1, m->path), m->format,
                 m->compute_type,
                 mt_log_quote(q3, sizeof q3, m->compute_detail), m->source, m->target, m->language_tokens,
                 m->d_model, m->encoder_layers, m->decoder_layers, m->default_beam_size, m->default_max_length,
                 m->load_ms);
}

/* The server's [decoding] settings as the service's defaults: those set (config checked
 * them against the same rows). */
static mt_decoding decoding_defaults(const mt_config *cfg)
{
    mt_decoding d = {0};
    char e[200];
    for (int id = 0; id < MT_OPT_COUNT; id++)
        if (!isnan(cfg->decoding[id])) mt_option_set(&d, id, cfg->decoding[id], 0, "", e, sizeof e);
    return d;
}

int mt_server_load(mt_server *s, char *err, size_t errlen)
{
    const mt_config *cfg = s->cfg;
    int n = cfg->n_models;
    mt_service_spec *specs = calloc((size_t)n + 1, sizeof *specs);
    const char **names = calloc((size_t)n + 1, sizeof *names);
    if (!specs || !names) {
        free(specs), free(names);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const mt_config_model *m = &cfg->models[i];
        /* [[models]] compute_type, else decoding.compute_type (both validated by config) */
        specs[i] = (mt_service_spec){m->path, m->name, m->source, m->target,
                                   m->compute_type ? m->compute_type : cfg->compute_type};
    }
    int workers = cfg->workers;
    if (workers <= 0) {
        /* the CPUs this process may use (affinity, cgroup quota), not the host's */
        workers = mt_available_cpus() / (cfg->threads_per_worker > 0 ? cfg->threads_per_worker : 1);
        if (workers < 1) workers = 1;
    }
    mt_service_config sc;
    mt_service_config_default(&sc);
    sc.workers = workers;
    sc.threads_per_worker = cfg->threads_per_worker;
    sc.capacity = cfg->queue_capacity;
    sc.max_sentences = cfg->batch_max_sentences;
    sc.max_tokens = cfg->batch_max_tokens;
    sc.max_wait_ms = cfg->batch_max_wait_ms;
    sc.cache_bytes = (size_t)cfg->sentence_cache_mb << 20;
    sc.defaults = decoding_defaults(cfg);
    sc.detect = 1;
    sc.kernels = cfg->kernels; /* [engine]: MT_KERNELS, MT_CPU_HIDE, MT_SPLIT_MIN */
    sc.cpu_hide = cfg->cpu_hide;
    sc.split_min = cfg->split_min;
    mt_service_observer obs = {on_batch, on_queue_wait, on_cancelled, on_translated, on_loaded, on_note, s};
    s->svc = mt_service_load(specs, n, &sc, &obs, err, errlen);
    free(specs);
    if (!s->svc) {
        free(names);
        return -1;
    }
    s->workers = workers;
    for (int i = 0; i < n; i++) names[i] = mt_service_model_info(s->svc, i)->name;
    json_t *langs = mt_langs_json(mt_service_langs(s->svc));
    s->languages_json = langs ? json_dumps(langs, JSON_COMPACT) : NULL;
    json_decref(langs);
    int bad = !s->languages_json || mt_metrics_set_models(s->metrics, n, names);
    free(names);
    if (bad) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    mt_log_write(s->log, MT_LOG_INFO, "ready",
                 "models=%d routes=%d workers=%d threads_per_worker=%d queue_capacity=%d "
                 "batch_max_sentences=%d blas=%s",
                 n, mt_langs_count(mt_service_langs(s->svc)), workers, cfg->threads_per_worker,
                 cfg->queue_capacity, cfg->batch_max_sentences, mt_service_blas_name());
    if (srv_jobs_start(s, err, errlen)) return -1;
    atomic_store(&s->ready, 1);
    return 0;
}

void mt_server_begin_drain(mt_server *s)
{
    if (atomic_exchange(&s->draining, 1)) return;
    if (s->daemon) {
        MHD_socket fd = MHD_quiesce_daemon(s->daemon);
        if (fd != MHD_INVALID_SOCKET) close(fd);
    }
}

void mt_server_free(mt_server *s)
{
    if (!s) return;
    atomic_store(&s->draining, 1);
    /* Cancel what is still queued or running; their connections resume with a 503. */
    if (s->svc) mt_service_abort(s->svc, MT_SERVICE_SHUTDOWN);
    pthread_mutex_lock(&s->watch_mu);
    double until = mt_now() + 10.0;
    while (s->n_watched > 0 && mt_now() < until) {
        struct timespec ts = mt_cond_deadline(0.02);
        pthread_cond_timedwait(&s->watch_cond, &s->watch_mu, &ts);
    }
    s->watch_stop = 1;
    pthread_cond_broadcast(&s->watch_cond);
    pthread_mutex_unlock(&s->watch_mu);
    if (s->watch_started) pthread_join(s->watcher, NULL);
    /* Give resumed connections a moment to send their answers. */
    for (int i = 0; i < 50 && atomic_load(&s->in_flight) > 0; i++) usleep(10000);
    if (s->daemon) MHD_stop_daemon(s->daemon);
    srv_jobs_free(s);  /* shared-queue workers use the service too (their jobs go back) */
    srv_files_stop(s); /* file threads use the service (aborted above) */
    mt_service_free(s->svc);
    free(s->languages_json);
    srv_files_free(s);
    srv_deepl_free(s);
    srv_glossaries_free(s); /* before the store it may borrow */
    srv_suggest_free(s);
    srv_limits_free(s);
    pthread_cond_destroy(&s->watch_cond);
    pthread_mutex_destroy(&s->watch_mu);
    pthread_mutex_destroy(&s->conns_mu);
    free(s->proxies);
    free(s);
}
