/* main.c: mt-server: settings, signals, start, serve until SIGTERM/SIGINT, drain, exit. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "metrics.h"
#include "server.h"
#include "service.h"
#include "store.h"

#ifndef MT_VERSION
#define MT_VERSION "0.1.0"
#endif

extern char **environ;

/* Self-pipe: the SIGTERM/SIGINT handler writes the signal number, main() reads it.
 * (Blocking the signals and using sigwait() is not enough: threads that libraries start
 * before main(), such as OpenBLAS's, do not block them, and a signal delivered to one of
 * them would kill the process with the default action.) Written once before any thread
 * starts, then only read. */
static int signal_pipe[2] = {-1, -1};

static void on_signal(int sig)
{
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    ssize_t w = write(signal_pipe[1], &b, 1);
    (void)w;
    errno = saved;
}

/* Waits up to timeout_ms (-1: forever) for a signal; returns it or 0. */
static int wait_signal(int timeout_ms)
{
    struct pollfd p = {signal_pipe[0], POLLIN, 0};
    int r = poll(&p, 1, timeout_ms);
    if (r <= 0) return 0;
    unsigned char b = 0;
    return read(signal_pipe[0], &b, 1) == 1 ? b : 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* --help, --version, --print-config: prints and returns 1; else 0. */
static int print_info(const mt_config *cfg)
{
    if (cfg->show_help) {
        mt_config_write_help(stdout, "mt-server");
        printf("\nAPI keys in the shared state database (server.shared_state):\n"
               "  mt-server keys add [--name NAME] [--char-limit N] [--key KEY] | list | remove NAME|KEY\n");
    }
    else if (cfg->show_version) printf("mt-server %s\n", MT_VERSION);
    else if (cfg->print_config) mt_config_write(cfg, stdout);
    else return 0;
    return 1;
}

/* SIGINT/SIGTERM/SIGHUP go to the signal pipe; SIGPIPE is ignored. 0, or -1 after a message. */
static int install_signals(void)
{
    if (pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        perror("mt-server: pipe");
        return -1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL); /* logged and ignored: see serve_until_signal */
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

/* The next SIGTERM/SIGINT within timeout_ms (-1: forever), 0 if none; SIGHUP is logged
 * and ignored (no reload: a restart behind a load balancer replaces models and settings
 * without dropping requests, and a HUP sent by a closing terminal must not kill the
 * server). */
static int wait_stop_signal(mt_log *log, int timeout_ms)
{
    for (;;) {
        int sig = wait_signal(timeout_ms);
        if (sig != SIGHUP) return sig;
        mt_log_write(log, MT_LOG_INFO, "sighup_ignored",
                     "msg=\"SIGHUP does not reload: restart the server to change models or settings\"");
    }
}

/* Serves until SIGTERM/SIGINT, then drains for up to drain_timeout (a second SIGTERM or
 * SIGINT stops the wait and cancels what is left). */
static void serve_until_signal(mt_server *srv, mt_log *log, const mt_config *cfg)
{
    int sig;
    while (!(sig = wait_stop_signal(log, -1))) {}
    mt_log_write(log, MT_LOG_INFO, "draining", "signal=%s in_flight=%d drain_timeout_s=%g",
                 sig == SIGTERM ? "SIGTERM" : "SIGINT", mt_server_in_flight(srv), cfg->drain_timeout);
    mt_server_begin_drain(srv);
    double until = now_s() + cfg->drain_timeout;
    while (mt_server_in_flight(srv) > 0 && now_s() < until) {
        if (wait_stop_signal(log, 20)) {
            mt_log_write(log, MT_LOG_WARN, "second_signal", "msg=\"stopping without waiting\"");
            break;
        }
    }
    if (mt_server_in_flight(srv) > 0)
        mt_log_write(log, MT_LOG_WARN, "drain_incomplete", "cancelled=%d", mt_server_in_flight(srv));
}

/* mt-server keys add|list|remove: API keys in the shared store (server.shared_state from
 * --shared-state, MT_SHARED_STATE or --config FILE), as LibreTranslate's `ltmanage keys`.
 * Replicas look keys up per request, so a change counts everywhere at once. */
static int keys_usage(void)
{
    fprintf(stderr, "usage: mt-server keys add [--name NAME] [--char-limit N] [--key KEY]\n"
                    "       mt-server keys list\n"
                    "       mt-server keys remove NAME|KEY\n"
                    "  (with --shared-state URL, MT_SHARED_STATE or --config FILE naming the database)\n");
    return 2;
}

static int print_key(void *user, const mt_store_key *k)
{
    (void)user;
    printf("%s\t%ld\t%s\n", k->name, k->chars_per_minute, k->created);
    return 0;
}

static int keys_command(int argc, char **argv)
{
    if (argc < 3) return keys_usage();
    const char *sub = argv[2], *name = NULL, *key = NULL, *target = NULL, *path = NULL;
    long limit = 0;
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    int nrest = 0;
    if (!rest) return 1;
    rest[nrest++] = argv[0];
    for (int i = 3; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "--name") && more) name = argv[++i];
        else if (!strcmp(a, "--key") && more) key = argv[++i];
        else if (!strcmp(a, "--char-limit") && more) {
            char *end;
            const char *v = argv[++i];
            limit = strtol(v, &end, 10);
            if (end == v || *end || limit < 0) {
                fprintf(stderr, "mt-server keys: --char-limit takes a number of characters per minute, 0 or more\n");
                free(rest);
                return 2;
            }
        }
        else if (a[0] != '-' && !target && !strcmp(sub, "remove")) target = a;
        else {
            if (!strcmp(a, "--config") && more) path = argv[i + 1];
            rest[nrest++] = argv[i];
        }
    }
    mt_config cfg;
    mt_config_init(&cfg);
    char err[1024];
    int rc = 1;
    if (!path && getenv("MT_CONFIG") && *getenv("MT_CONFIG")) path = getenv("MT_CONFIG");
    if ((path && mt_config_load_file(&cfg, path, err, sizeof err)) || mt_config_apply_env(&cfg, environ, err, sizeof err) ||
        mt_config_apply_args(&cfg, nrest, rest, err, sizeof err)) {
        fprintf(stderr, "mt-server keys: %s\n", err);
        rc = 2;
        goto out;
    }
    if (!cfg.shared_state[0]) {
        fprintf(stderr, "mt-server keys: no database: give --shared-state URL, MT_SHARED_STATE or a "
                        "config file with [server] shared_state\n");
        rc = 2;
        goto out;
    }
    mt_store_options o = mt_store_options_default();
    o.url = cfg.shared_state;
    o.pool_size = 1;
    mt_store *st = mt_store_open(&o, err, sizeof err);
    if (!st) {
        fprintf(stderr, "mt-server keys: %s\n", err);
        goto out;
    }
    if (!strcmp(sub, "add")) {
        char made[65], nm[64];
        if (!key) { /* 32 random bytes as hex */
            unsigned char b[32];
            if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
                fprintf(stderr, "mt-server keys: no random bytes\n");
                goto close;
            }
            for (int i = 0; i < 32; i++) snprintf(made + 2 * i, 3, "%02x", b[i]);
            key = made;
        }
        if (!name) { /* a name by default: the key's first characters */
            snprintf(nm, sizeof nm, "key-%.8s", key);
            name = nm;
        }
        if (mt_store_key_add(st, key, name, limit, err, sizeof err)) {
            fprintf(stderr, "mt-server keys: %s\n", err);
            goto close;
        }
        printf("%s\n", key); /* shown once: only its hash is kept */
        rc = 0;
    } else if (!strcmp(sub, "list")) {
        if (mt_store_key_list(st, print_key, NULL, err, sizeof err) < 0) fprintf(stderr, "mt-server keys: %s\n", err);
        else rc = 0;
    } else if (!strcmp(sub, "remove") && target) {
        int n = mt_store_key_remove(st, target, err, sizeof err);
        if (n < 0) fprintf(stderr, "mt-server keys: %s\n", err);
        else if (n == 0) fprintf(stderr, "mt-server keys: no key named or equal to that\n");
        else rc = 0;
    } else {
        rc = keys_usage();
    }
close:
    mt_store_close(st);
out:
    mt_config_free(&cfg);
    free(rest);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "keys") == 0) return keys_command(argc, argv);
    /* Process setup before anything else (it may re-execute the program); MT_BLAS_CORETYPE
     * is read here, before the config, because the choice must precede everything */
    mt_service_process_setup(argv, getenv("MT_BLAS_CORETYPE"));
    mt_config cfg;
    mt_config_init(&cfg);
    char err[1024];
    if (mt_config_resolve(&cfg, argc, argv, environ, err, sizeof err)) {
        fprintf(stderr, "mt-server: %s\n", err);
        mt_config_free(&cfg);
        return 2;
    }
    if (print_info(&cfg)) {
        mt_config_free(&cfg);
        return 0;
    }
    if (install_signals()) {
        mt_config_free(&cfg);
        return 1;
    }
    json_object_seed(0); /* jansson's hash seed, before threads (its thread-safety note) */

    int rc = 1;
    mt_log *log = mt_log_create(stderr, cfg.log_level);
    mt_metrics *metrics = mt_metrics_create();
    mt_server *srv = NULL;
    if (!log || !metrics) {
        fprintf(stderr, "mt-server: out of memory\n");
        goto out;
    }
    mt_log_write(log, MT_LOG_INFO, "starting", "version=%s config=%s models=%d", MT_VERSION,
                 cfg.config_path ? cfg.config_path : "-", cfg.n_models);
    srv = mt_server_create(&cfg, log, metrics, err, sizeof err);
    if (!srv) {
        char q[1100];
        mt_log_write(log, MT_LOG_ERROR, "fatal", "msg=%s", mt_log_quote(q, sizeof q, err));
        goto out;
    }
    mt_log_write(log, MT_LOG_INFO, "listening", "host=%s port=%d", cfg.host, mt_server_port(srv));
    if (mt_server_load(srv, err, sizeof err)) {
        char q[1100];
        mt_log_write(log, MT_LOG_ERROR, "fatal", "msg=%s", mt_log_quote(q, sizeof q, err));
        goto out;
    }

    serve_until_signal(srv, log, &cfg);
    rc = 0;
out:
    mt_server_free(srv);
    if (log) mt_log_write(log, rc == 0 ? MT_LOG_INFO : MT_LOG_ERROR, "stopped", "exit_code=%d", rc);
    mt_metrics_free(metrics);
    mt_log_free(log);
    mt_config_free(&cfg);
    close(signal_pipe[0]);
    close(signal_pipe[1]);
    return rc;
}
