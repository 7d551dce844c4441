/* mt-models: search, install, list and remove MarianMT (OPUS-MT) models from a Hugging
 * Face hub, and install argos-translate packages (LibreTranslate's models). The
 * environment is read here and only here, and handed to hub/ as options. */
#include <curl/curl.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hub.h"

static volatile sig_atomic_t cancelled;

static void on_signal(int sig)
{
    (void)sig;
    cancelled = 1;
}

static int usage(FILE *f, int rc)
{
    fputs("usage: mt-models search [QUERY] [--limit N]\n"
          "       mt-models install REPO_ID [--revision REV] [--dir DIR] [--compute-type int8]\n"
          "       mt-models install PACKAGE [--dir DIR]   (argos-translate: argos:FROM-TO from the package index,\n"
          "                                                FILE.argosmodel, its https URL, or an unpacked package)\n"
          "       mt-models list\n"
          "       mt-models remove NAME\n"
          "       mt-models convert DIR [--compute-type int8]   (pytorch_model.bin -> model.safetensors)\n"
          "Environment: HF_ENDPOINT (hub or mirror, default https://huggingface.co), HF_TOKEN (bearer token),\n"
          "HF_HUB_OFFLINE=1 (no network), HF_HUB_DOWNLOAD_TIMEOUT (seconds without progress, default 60),\n"
          "ARGOS_PACKAGE_INDEX (argos-translate's index.json URL, for argos:FROM-TO),\n"
          "MT_MODELS_DIR (default $XDG_DATA_HOME/mt/models, else ~/.local/share/mt/models).\n"
          "Options: --limit N (search, default 50), --revision REV (a branch, tag or commit), --dir DIR (install\n"
          "there instead of MT_MODELS_DIR/NAME), --compute-type int8 (store int8 weights), -h/--help.\n"
          "Exit status: 0 done, 1 failed, 2 wrong command line, 130 interrupted.\n", f);
    return rc;
}

/* A wrong command line: one line naming the mistake and where to look, exit status 2. */
static int usage_error(const char *fmt, const char *what)
{
    fputs("mt-models: ", stderr);
    fprintf(stderr, fmt, what);
    fputs(" (try: mt-models --help)\n", stderr);
    return 2;
}

static int truthy(const char *v)
{
    return v && *v && strcmp(v, "0") && strcasecmp(v, "false") && strcasecmp(v, "no") && strcasecmp(v, "off");
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage(stderr, 2);
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
        return usage(stdout, 0);
    const char *cmd = argv[1];
    const char *revision = NULL, *dir = NULL, *pos = NULL;
    int int8 = 0, limit = 50;
    static const char *const commands[] = {"search", "install", "list", "remove", "convert"};
    int known = 0;
    for (size_t k = 0; k < sizeof commands / sizeof *commands; k++)
        known |= !strcmp(cmd, commands[k]);
    if (!known)
        return usage_error("unknown command '%s'; the commands are search, install, list, remove and convert", cmd);
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes_value = !strcmp(a, "--revision") || !strcmp(a, "--dir") || !strcmp(a, "--limit") ||
                          !strcmp(a, "--compute-type");
        if (takes_value && !v)
            return usage_error("%s needs a value", a);
        if (!strcmp(a, "--limit")) {
            char *end;
            long l = strtol(v, &end, 10);
            if (*end || end == v || l < 1 || l > 1000)
                return usage_error("--limit must be a whole number from 1 to 1000, got '%s'", v);
            limit = (int)l;
            i++;
        } else if (!strcmp(a, "--revision") && v)
            revision = argv[++i];
        else if (!strcmp(a, "--dir") && v)
            dir = argv[++i];
        else if (!strcmp(a, "--compute-type") && v) {
            if (strcmp(v, "int8") && strcmp(v, "auto"))
                return usage_error("--compute-type %s: only int8 is stored; other types are chosen when the model "
                                   "runs", v);
            int8 = !strcmp(v, "int8");
            i++;
        } else if (a[0] == '-') {
            return usage_error("unknown option '%s'", a);
        } else if (!pos) {
            pos = a;
        } else {
            return usage_error("unexpected argument '%s'", a);
        }
    }

    char models_dir[4096];
    const char *env = getenv("MT_MODELS_DIR");
    if (env && *env)
        snprintf(models_dir, sizeof models_dir, "%s", env);
    else if ((env = getenv("XDG_DATA_HOME")) && *env)
        snprintf(models_dir, sizeof models_dir, "%s/mt/models", env);
    else if ((env = getenv("HOME")) && *env)
        snprintf(models_dir, sizeof models_dir, "%s/.local/share/mt/models", env);
    else {
        fputs("mt-models: set MT_MODELS_DIR (no HOME)\n", stderr);
        return 2;
    }
    mh_options o;
    mh_options_default(&o);
    o.models_dir = models_dir;
    char endpoint[2048];
    if ((env = getenv("HF_ENDPOINT")) && *env) {
        snprintf(endpoint, sizeof endpoint, "%s", env);
        size_t n = strlen(endpoint);
        while (n > 0 && endpoint[n - 1] == '/')
            endpoint[--n] = 0;
        o.endpoint = endpoint;
    }
    o.token = getenv("HF_TOKEN");
    o.argos_index = getenv("ARGOS_PACKAGE_INDEX"); /* argos-translate's own name for it */
    o.offline = truthy(getenv("HF_HUB_OFFLINE"));
    if ((env = getenv("HF_HUB_DOWNLOAD_TIMEOUT")) && atol(env) > 0)
        o.stall_timeout_s = atol(env);
    o.progress = isatty(STDERR_FILENO) ? stderr : NULL;
    o.log = stderr;
    o.cancel = &cancelled;
    /* A full disk under RLIMIT_FSIZE must be a write error with a message, not a kill. */
    signal(SIGXFSZ, SIG_IGN);
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
        fputs("mt-models: cannot initialise libcurl\n", stderr);
        return 1;
    }

    char err[1024] = "", where[4096];
    int rc;
    if (!strcmp(cmd, "search")) {
        rc = mh_search(&o, pos, limit, stdout, err, sizeof err);
    } else if (!strcmp(cmd, "install")) {
        if (!pos)
            return usage_error("%s needs a repository id such as Helsinki-NLP/opus-mt-en-de", "install");
        if (mh_is_argos_source(pos))
            rc = mh_install_argos(&o, pos, dir, where, sizeof where, err, sizeof err);
        else
            rc = mh_install(&o, pos, revision, dir, int8, where, sizeof where, err, sizeof err);
    } else if (!strcmp(cmd, "list")) {
        rc = mh_list(&o, stdout, err, sizeof err);
    } else if (!strcmp(cmd, "remove")) {
        if (!pos)
            return usage_error("%s needs a model NAME, as mt-models list shows it", "remove");
        rc = mh_remove(&o, pos, err, sizeof err);
        if (!rc)
            fprintf(stderr, "removed %s\n", pos);
    } else if (!strcmp(cmd, "convert")) {
        if (!pos)
            return usage_error("%s needs a model DIR", "convert");
        rc = mh_convert_dir(pos, int8, stderr, err, sizeof err);
    } else {
        return usage_error("unknown command '%s'", cmd); /* not reached: checked above */
    }
    curl_global_cleanup();
    if (rc) {
        fprintf(stderr, "mt-models: %s\n", err[0] ? err : "failed");
        return cancelled ? 130 : 1;
    }
    return 0;
}
