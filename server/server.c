/* server.c: the server's life cycle: listen (libmicrohttpd, the handler in handler.c),
 * load the models and start the translation service, drain, stop and free. */
#include "internal.h"

#include "cpus.h"

#include <netdb.h>
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
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->watch_cond, &ca);
    pthread_condattr_destroy(&ca);
    if (srv_cidrs_parse(cfg->trusted_proxies, &s->proxies, &s->n_proxies, err, errlen)) {
        mt_server_free(s);
        return NULL;
    }
    /* ---- LibreTranslate parity (issue 14) ---- */
    if (srv_lt_init(s, err, errlen)) {
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
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_ALLOW_SUSPEND_RESUME |
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

/* Routes of translator i: its own pair, and for a multilingual model one per target
 * language token. 0 or -1 with a message. */
static int add_routes(mt_server *s, int i, const char *path, char *err, size_t errlen)
{
    const mt_translator *tr = s->trs[i];
    const char *src = mt_translator_source_lang(tr), *tgt = mt_translator_target_lang(tr);
    if (mt_langs_add(s->langs, src, tgt, i, 0)) {
        snprintf(err, errlen, "model %s: invalid language pair %s-%s", path, src, tgt);
        return -1;
    }
    for (int k = 0; k < mt_translator_target_count(tr); k++) {
        char code[33];
        if (mt_translator_target_code(tr, k, code, sizeof code)) continue;
        if (mt_langs_add(s->langs, src, code, i, 1)) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    return 0;
}

/* Loads configured model i and adds its routes; 0 or -1 with a message. */
static int load_model(mt_server *s, int i, char *err, size_t errlen)
{
    const mt_config_model *m = &s->cfg->models[i];
    double t0 = mt_now();
    char e[512];
    /* [[models]] compute_type, else decoding.compute_type (both validated by config) */
    const char *ctype = m->compute_type ? m->compute_type : s->cfg->compute_type;
    mt_model_options mo;
    mt_model_options_default(&mo);
    if (mt_compute_type_parse(ctype, &mo.compute_type)) {
        snprintf(err, errlen, "model %s: unknown compute type '%s'", m->path, ctype);
        return -1;
    }
    mt_translator *tr = mt_translator_load_ex(m->path, m->source, m->target, &mo, e, sizeof e);
    if (!tr) {
        snprintf(err, errlen, "cannot load model %s: %s", m->path, e);
        return -1;
    }
    s->trs[i] = tr;
    s->n_models = i + 1;
    s->names[i] = strdup(m->name ? m->name : mt_translator_name(tr));
    if (!s->names[i]) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (add_routes(s, i, m->path, err, errlen)) return -1;
    const mt_model_info *info = mt_translator_model_info(tr);
    char q1[600], q2[100], q3[800];
    const mt_model *model = mt_translator_model(tr);
    mt_log_write(s->log, MT_LOG_INFO, "model_loaded",
                 "model=%s dir=%s compute_type=%s compute=%s source=%s target=%s language_tokens=%d d_model=%d "
                 "layers=%d+%d beam=%d max_length=%d load_ms=%.1f",
                 mt_log_quote(q2, sizeof q2, s->names[i]), mt_log_quote(q1, sizeof q1, m->path),
                 mt_compute_type_name(mt_model_compute_type(model)),
                 mt_log_quote(q3, sizeof q3, mt_model_compute_detail(model)),
                 mt_translator_source_lang(tr), mt_translator_target_lang(tr),
                 mt_translator_target_count(tr), info->d_model, info->encoder_layers,
                 info->decoder_layers, info->default_beam_size, info->default_max_length,
                 (mt_now() - t0) * 1e3);
    return 0;
}

/* The metrics observer of the service. */
static void on_batch(void *m, int sentences, long tokens, double secs) { mt_metrics_batch(m, sentences, tokens, secs); }
static void on_queue_wait(void *m, double secs) { mt_metrics_queue_wait(m, secs); }
static void on_cancelled(void *m, long sentences) { mt_metrics_cancelled(m, sentences); }

/* Starts the translation service's workers over the loaded models. */
static int start_service(mt_server *s, char *err, size_t errlen)
{
    const mt_config *cfg = s->cfg;
    int workers = cfg->workers;
    if (workers <= 0) {
        /* the CPUs this process may use (affinity, cgroup quota), not the host's */
        workers = mt_available_cpus() / (cfg->threads_per_worker > 0 ? cfg->threads_per_worker : 1);
        if (workers < 1) workers = 1;
    }
    mt_service_config sc = {workers, cfg->threads_per_worker, cfg->queue_capacity,
                            cfg->batch_max_sentences, cfg->batch_max_tokens, cfg->batch_max_wait_ms,
                            (size_t)cfg->sentence_cache_mb << 20};
    mt_service_observer obs = {on_batch, on_queue_wait, on_cancelled, s->metrics};
    s->svc = mt_service_create(s->trs, s->n_models, &sc, &obs, err, errlen);
    if (!s->svc) return -1;
    s->workers = workers;
    mt_log_write(s->log, MT_LOG_INFO, "ready",
                 "models=%d routes=%d workers=%d threads_per_worker=%d queue_capacity=%d "
                 "batch_max_sentences=%d blas=%s",
                 s->n_models, mt_langs_count(s->langs), workers, cfg->threads_per_worker,
                 cfg->queue_capacity, cfg->batch_max_sentences, mt_translator_blas_name());
    return 0;
}

int mt_server_load(mt_server *s, char *err, size_t errlen)
{
    int n = s->cfg->n_models;
    s->trs = calloc((size_t)n + 1, sizeof *s->trs);
    s->names = calloc((size_t)n + 1, sizeof *s->names);
    s->langs = mt_langs_create();
    if (!s->trs || !s->names || !s->langs) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (load_model(s, i, err, errlen)) return -1;
    json_t *langs = mt_langs_json(s->langs);
    s->languages_json = langs ? json_dumps(langs, JSON_COMPACT) : NULL;
    json_decref(langs);
    if (!s->languages_json || mt_metrics_set_models(s->metrics, n, (const char *const *)s->names)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (start_service(s, err, errlen)) return -1;
    if (srv_lt_detect_init(s, err, errlen)) return -1; /* issue 14: the models' languages */
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
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += 20000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&s->watch_cond, &s->watch_mu, &ts);
    }
    s->watch_stop = 1;
    pthread_cond_broadcast(&s->watch_cond);
    pthread_mutex_unlock(&s->watch_mu);
    if (s->watch_started) pthread_join(s->watcher, NULL);
    /* Give resumed connections a moment to send their answers. */
    for (int i = 0; i < 50 && atomic_load(&s->in_flight) > 0; i++) usleep(10000);
    if (s->daemon) MHD_stop_daemon(s->daemon);
    srv_lt_files_stop(s); /* issue 14: file threads use the service (aborted above) */
    mt_service_free(s->svc);
    for (int i = 0; i < s->n_models; i++) {
        mt_translator_free(s->trs[i]);
        free(s->names[i]);
    }
    free(s->trs);
    free(s->names);
    mt_langs_free(s->langs);
    free(s->languages_json);
    srv_lt_free(s); /* issue 14 */
    pthread_cond_destroy(&s->watch_cond);
    pthread_mutex_destroy(&s->watch_mu);
    pthread_mutex_destroy(&s->conns_mu);
    free(s->proxies);
    free(s);
}
