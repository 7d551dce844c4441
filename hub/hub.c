/* hub.c: the hub client (libcurl) and the install, list and remove commands. */
#include "hub.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hub_internal.h"
#include "sha256.h"
#include "status.h"

enum { MAX_JSON = 64 << 20 };

void mh_options_default(mh_options *o)
{
    memset(o, 0, sizeof *o);
    o->endpoint = "https://huggingface.co";
    o->connect_timeout_s = 20;
    o->stall_timeout_s = 60;
    o->retries = 4;
}

int mh_check_marian_config(const json_t *cfg, char *err, size_t errlen)
{
    const char *type = json_string_value(json_object_get(cfg, "model_type"));
    const char *arch = json_string_value(json_array_get(json_object_get(cfg, "architectures"), 0));
    if (type && !strcmp(type, "marian") && (!arch || !strcmp(arch, "MarianMTModel")))
        return 0;
    return mt_error(MT_ERR_INVALID, err, errlen,
                    "config.json: model_type '%s' (architectures %s) is not MarianMT; only MarianMT "
                    "(OPUS-MT) models can be installed", type ? type : "(none)", arch ? arch : "(none)");
}

/* ---- HTTP ---------------------------------------------------------------------------- */

typedef struct {
    const mh_options *o;
    char *buf;          /* in-memory body (JSON) */
    size_t len;
    FILE *file;         /* or the file being written */
    int write_errno;
    long long base;     /* bytes already on disk when this attempt started */
    long long total;    /* expected size, for the progress bar */
    const char *label;
    time_t last_draw;
    char error_code[64];  /* the hub's X-Error-Code header (RepoNotFound, GatedRepo, ...) */
} transfer;

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    transfer *t = arg;
    size_t len = size * n;
    static const char name[] = "x-error-code:";
    if (len > sizeof name - 1 && !strncasecmp(p, name, sizeof name - 1)) {
        const char *v = p + sizeof name - 1;
        size_t vl = len - (sizeof name - 1);
        while (vl && (*v == ' ' || *v == '\t'))
            v++, vl--;
        while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
            vl--;
        size_t k = 0;
        for (; k < vl && k + 1 < sizeof t->error_code; k++)
            t->error_code[k] = (v[k] >= 'A' && v[k] <= 'Z') || (v[k] >= 'a' && v[k] <= 'z') ? v[k] : '?';
        t->error_code[k] = 0;
    }
    return len;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    transfer *t = arg;
    size_t len = size * n;
    if (t->file) {
        if (fwrite(p, 1, len, t->file) != len || fflush(t->file)) {
            t->write_errno = errno ? errno : EIO;
            return 0;
        }
        return len;
    }
    if (t->len + len > MAX_JSON)
        return 0;
    char *q = realloc(t->buf, t->len + len + 1);
    if (!q)
        return 0;
    memcpy(q + t->len, p, len);
    t->buf = q;
    t->len += len;
    t->buf[t->len] = 0;
    return len;
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
    (void)dltotal, (void)ultotal, (void)ulnow;
    transfer *t = arg;
    if (t->o->cancel && *t->o->cancel)
        return 1;
    if (t->o->progress && t->file && t->total > 0) {
        time_t now = time(NULL);
        long long have = t->base + dlnow;
        if (now != t->last_draw || have >= t->total) {
            t->last_draw = now;
            int width = 30, fill = (int)(width * (double)have / (double)t->total);
            fill = fill > width ? width : fill;
            fprintf(t->o->progress, "\r%-28.28s [%.*s%*s] %5.1f%% %8.1f MiB", t->label, fill,
                    "##############################", width - fill, "", 100.0 * (double)have / (double)t->total,
                    (double)have / 1048576.0);
            fflush(t->o->progress);
        }
    }
    return 0;
}

static CURL *easy(const mh_options *o, const char *url, transfer *t, struct curl_slist **hdrs)
{
    CURL *c = curl_easy_init();
    if (!c)
        return NULL;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, o->connect_timeout_s);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, o->stall_timeout_s);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "mt-models/0.1");
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, t);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, t);
    /* The token goes in a header that libcurl drops on a redirect to another host (the
     * hub sends LFS files to a CDN), and into no message. */
    if (o->token && *o->token) {
        size_t n = strlen(o->token) + 32;
        char *h = malloc(n);
        if (h) {
            snprintf(h, n, "Authorization: Bearer %s", o->token);
            *hdrs = curl_slist_append(*hdrs, h);
            memset(h, 0, n);
            free(h);
        }
    }
    if (*hdrs)
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, *hdrs);
    return c;
}

/* A message for a failed request: what, where and what to do. what names the file or
 * the listing; url has no credentials. Returns an mt_status. */
static int http_error(const mh_options *o, CURLcode cc, long status, const transfer *t, const char *what,
                      char *err, size_t errlen)
{
    if (o->cancel && *o->cancel)
        return mt_error(MT_ERR_CANCELLED, err, errlen, "%s: interrupted", what);
    switch (cc) {
    case CURLE_OK:
        break;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: cannot resolve the hub's host name (DNS failure: no "
                        "network? HF_ENDPOINT %s; HF_HUB_OFFLINE=1 uses installed models only)", what, o->endpoint);
    case CURLE_COULDNT_CONNECT:
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: cannot connect to %s", what, o->endpoint);
    case CURLE_OPERATION_TIMEDOUT:
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: timed out (no progress for %ld s)", what, o->stall_timeout_s);
    case CURLE_WRITE_ERROR:
        if (t->write_errno)
            return mt_error(MT_ERR_INVALID, err, errlen, "%s: cannot write: %s%s", what, strerror(t->write_errno),
                            t->write_errno == ENOSPC || t->write_errno == EFBIG || t->write_errno == EDQUOT
                                ? " (disk full: free space in the models directory and retry)" : "");
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: response larger than %d bytes", what, MAX_JSON);
    default:
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: %s", what, curl_easy_strerror(cc));
    }
    /* The hub names the cause in X-Error-Code; 401 alone also means "no such repository"
     * (the hub does not tell strangers which private repositories exist). */
    if (!strcmp(t->error_code, "RepoNotFound"))
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: %ld: repository not found (check the id; a private "
                        "repository needs HF_TOKEN)%s", what, status,
                        o->token && *o->token ? " (the token given was refused or cannot see it)" : "");
    if (!strcmp(t->error_code, "GatedRepo"))
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: %ld: a gated repository: accept its conditions on the "
                        "hub and set HF_TOKEN", what, status);
    if (!strcmp(t->error_code, "RevisionNotFound"))
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: %ld: revision not found", what, status);
    if (!strcmp(t->error_code, "EntryNotFound"))
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: %ld: file not found in the repository", what, status);
    if (status == 401 || status == 403)
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: %ld %s: no such repository, or it is private or gated (set HF_TOKEN "
                        "to a token that may read it)%s", what, status, status == 401 ? "Unauthorized" : "Forbidden",
                        o->token && *o->token ? " (the token given was refused)" : "");
    if (status == 404)
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: 404 Not Found (no such repository, revision or file)", what);
    if (status >= 500)
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: the hub answered %ld (a server error; try again later)",
                        what, status);
    return mt_error(MT_ERR_INVALID, err, errlen, "%s: unexpected HTTP status %ld", what, status);
}

/* Waits before retry `attempt` (0-based): 0.25 s doubling, so a hub that is briefly down
 * or overloaded is not hammered; stops early when cancelled. */
static void backoff(const mh_options *o, int attempt)
{
    long ms = 250L << (attempt < 5 ? attempt : 5);
    for (long waited = 0; waited < ms && !(o->cancel && *o->cancel); waited += 50) {
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

static int retryable(CURLcode cc, long status)
{
    return cc == CURLE_PARTIAL_FILE || cc == CURLE_RECV_ERROR || cc == CURLE_OPERATION_TIMEDOUT ||
           cc == CURLE_GOT_NOTHING || cc == CURLE_SEND_ERROR || (cc == CURLE_OK && status >= 500);
}

static json_t *get_json(const mh_options *o, const char *url, const char *what, char *err, size_t errlen)
{
    for (int attempt = 0;; attempt++) {
        transfer t = {.o = o};
        struct curl_slist *h = NULL;
        CURL *c = easy(o, url, &t, &h);
        if (!c)
            return mt_error(MT_ERR_NOMEM, err, errlen, "cannot start libcurl"), NULL;
        CURLcode cc = curl_easy_perform(c);
        long status = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_cleanup(c);
        curl_slist_free_all(h);
        if (cc == CURLE_OK && status == 200) {
            json_error_t je;
            json_t *j = t.buf ? json_loadb(t.buf, t.len, 0, &je) : NULL;
            free(t.buf);
            if (!j)
                mt_error(MT_ERR_INVALID, err, errlen, "%s: the hub's answer is not JSON", what);
            return j;
        }
        free(t.buf);
        if (!retryable(cc, status) || attempt >= o->retries || (o->cancel && *o->cancel)) {
            http_error(o, cc, status, &t, what, err, errlen);
            return NULL;
        }
        backoff(o, attempt);
    }
}

/* Percent-encodes s for a URL path or query (keeping '/' when keep_slash). */
static void url_escape(char *out, size_t len, const char *s, int keep_slash)
{
    size_t k = 0;
    for (; *s && k + 4 < len; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("-_.~", c) ||
            (keep_slash && c == '/'))
            out[k++] = (char)c;
        else
            k += (size_t)snprintf(out + k, len - k, "%%%02X", c);
    }
    out[k] = 0;
}

/* Downloads url into path, resuming what is there, until want bytes; checks the size and
 * (sha256 non-NULL) the digest. */
static int download(const mh_options *o, const char *url, const char *path, const char *label, long long want,
                    const char *sha256, char *err, size_t errlen)
{
    int rc = 0;
    for (int attempt = 0;; attempt++) {
        struct stat sb;
        long long have = stat(path, &sb) == 0 ? (long long)sb.st_size : 0;
        if (want >= 0 && have > want)
            have = 0;
        if (want >= 0 && have == want && want > 0)
            break;
        FILE *f = fopen(path, have ? "ab" : "wb");
        if (!f)
            return mt_error(MT_ERR_INVALID, err, errlen, "cannot create %s: %s", path, strerror(errno));
        transfer t = {.o = o, .file = f, .base = have, .total = want, .label = label};
        struct curl_slist *h = NULL;
        CURL *c = easy(o, url, &t, &h);
        if (!c) {
            fclose(f);
            return mt_error(MT_ERR_NOMEM, err, errlen, "cannot start libcurl");
        }
        char range[64];
        if (have)
            curl_easy_setopt(c, CURLOPT_RANGE, mt_strfmt(range, sizeof range, "%lld-", have));
        CURLcode cc = curl_easy_perform(c);
        long status = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_cleanup(c);
        curl_slist_free_all(h);
        if (fclose(f) && !t.write_errno && cc == CURLE_OK)
            t.write_errno = errno, cc = CURLE_WRITE_ERROR;
        if (o->progress && want > 0)
            fputc('\n', o->progress);
        if (cc == CURLE_OK && have && status == 200) {
            /* The server ignored Range and sent the whole file after what we had. */
            truncate(path, 0);
            if (attempt < o->retries)
                continue;
        }
        if (cc == CURLE_OK && status == 416 && have) {
            truncate(path, 0);
            if (attempt < o->retries)
                continue;
        }
        if (cc == CURLE_OK && (status == 200 || status == 206))
            break;
        if (!retryable(cc, status) || attempt >= o->retries || (o->cancel && *o->cancel))
            return http_error(o, cc, status, &t, label, err, errlen);
        if (o->log)
            fprintf(o->log, "%s: transfer cut (%s), resuming\n", label,
                    cc == CURLE_OK ? "server error" : curl_easy_strerror(cc));
        if (cc == CURLE_OK)
            backoff(o, attempt);
    }
    struct stat sb;
    if (stat(path, &sb))
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: %s", path, strerror(errno));
    if (want >= 0 && (long long)sb.st_size != want)
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: %lld bytes received, the hub lists %lld", label,
                        (long long)sb.st_size, want);
    if (sha256) {
        char hex[65];
        if (mh_sha256_file(path, hex))
            return mt_error(MT_ERR_INVALID, err, errlen, "%s: cannot read it back: %s", path, strerror(errno));
        if (strcasecmp(hex, sha256))
            return mt_error(MT_ERR_INVALID, err, errlen, "%s: sha256 %s, the hub lists %s: the download is "
                            "corrupt or was altered", label, hex, sha256);
    }
    return rc;
}

/* ---- search ---------------------------------------------------------------------------- */

/* The language pair of an OPUS-MT repository name: its last two '-' parts. */
static void pair_of(const char *id, char *out, size_t len)
{
    const char *base = strrchr(id, '/');
    base = base ? base + 1 : id;
    const char *last = strrchr(base, '-');
    const char *prev = last;
    while (prev && prev > base && prev[-1] != '-')
        prev--;
    if (!last || prev <= base || strncmp(base, "opus-mt-", 8)) {
        snprintf(out, len, "?");
        return;
    }
    snprintf(out, len, "%.*s -> %s", (int)(last - prev), prev, last + 1);
}

int mh_search(const mh_options *o, const char *query, int limit, FILE *out, char *err, size_t errlen)
{
    if (o->offline)
        return mt_error(MT_ERR_INVALID, err, errlen, "HF_HUB_OFFLINE is set: search needs the network "
                        "(mt-models list shows what is installed)");
    char q[300], url[1200];
    char term[200];
    snprintf(term, sizeof term, "%s%s", query && strncmp(query, "opus-mt", 7) ? "opus-mt-" : "",
             query ? query : "opus-mt");
    url_escape(q, sizeof q, term, 0);
    snprintf(url, sizeof url, "%s/api/models?author=Helsinki-NLP&search=%s&limit=%d&sort=downloads&direction=-1",
             o->endpoint, q, limit > 0 ? limit : 50);
    json_t *j = get_json(o, url, "search", err, errlen);
    if (!j)
        return MT_ERR_INVALID;
    if (!json_is_array(j)) {
        json_decref(j);
        return mt_error(MT_ERR_INVALID, err, errlen, "search: the hub's answer is not a list of models");
    }
    size_t i;
    json_t *m;
    int shown = 0;
    json_array_foreach(j, i, m) {
        const char *id = json_string_value(json_object_get(m, "id"));
        if (!id)
            id = json_string_value(json_object_get(m, "modelId"));
        if (!id)
            continue;
        char pair[120];
        pair_of(id, pair, sizeof pair);
        fprintf(out, "%-48s %-20s %10lld downloads\n", id, pair,
                (long long)json_integer_value(json_object_get(m, "downloads")));
        shown++;
    }
    json_decref(j);
    if (!shown)
        fprintf(out, "no OPUS-MT model matches '%s'\n", query ? query : "");
    return 0;
}

/* ---- install --------------------------------------------------------------------------- */

/* What a MarianMT directory needs (required) and may have. */
static const char *REQUIRED[] = {"config.json", "source.spm", "target.spm", "vocab.json", "tokenizer_config.json"};
static const char *OPTIONAL[] = {"generation_config.json", "special_tokens_map.json", "target_vocab.json", "README.md"};

static int remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return unlink(path);
    struct dirent *e;
    char sub[4096];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        struct stat sb;
        if (!lstat(sub, &sb) && S_ISDIR(sb.st_mode))
            remove_tree(sub);
        else
            unlink(sub);
    }
    closedir(d);
    return rmdir(path);
}

static int mkdirs(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0755) && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(buf, 0755) && errno != EEXIST ? -1 : 0;
}

/* Removes temporary directories that an install killed outright left behind. */
static void sweep_stale(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d))) {
        const char *dot = strrchr(e->d_name, '.');
        if ((strncmp(e->d_name, ".install-", 9) && strncmp(e->d_name, ".remove-", 8)) || !dot)
            continue;
        long pid = strtol(dot + 1, NULL, 10);
        if (pid > 0 && kill((pid_t)pid, 0) && errno == ESRCH)
            remove_tree(mt_strfmt(path, sizeof path, "%s/%s", dir, e->d_name));
    }
    closedir(d);
}

int mh_remove_tree(const char *path) { return remove_tree(path); }
int mh_mkdirs(const char *path) { return mkdirs(path); }
void mh_sweep_stale(const char *dir) { sweep_stale(dir); }
/* Another host than the hub's: the hub's token is not sent there. */
int mh_download_url(const mh_options *o, const char *url, const char *path, const char *label, char *err,
                    size_t errlen)
{
    mh_options plain = *o;
    plain.token = NULL;
    return download(&plain, url, path, label, -1, NULL, err, errlen);
}

json_t *mh_get_json_url(const mh_options *o, const char *url, const char *what, char *err, size_t errlen)
{
    mh_options plain = *o;
    plain.token = NULL;
    return get_json(&plain, url, what, err, errlen);
}

typedef struct {
    const char *name;
    long long size;
    const char *sha256;  /* LFS files only */
} sibling;

static const json_t *find_sibling(const json_t *siblings, const char *name, sibling *s)
{
    size_t i;
    json_t *x;
    json_array_foreach(siblings, i, x) {
        const char *n = json_string_value(json_object_get(x, "rfilename"));
        if (!n || strcmp(n, name))
            continue;
        json_t *lfs = json_object_get(x, "lfs");
        s->name = n;
        s->size = json_is_integer(json_object_get(x, "size")) ? json_integer_value(json_object_get(x, "size")) : -1;
        s->sha256 = json_string_value(json_object_get(lfs, "sha256"));
        if (json_is_integer(json_object_get(lfs, "size")))
            s->size = json_integer_value(json_object_get(lfs, "size"));
        return x;
    }
    return NULL;
}

static int valid_repo(const char *repo)
{
    int slashes = 0;
    if (!*repo || repo[0] == '/' || strstr(repo, ".."))
        return 0;
    for (const char *c = repo; *c; c++) {
        if (*c == '/')
            slashes++;
        else if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                   strchr("-_.", *c)))
            return 0;
    }
    return slashes <= 1 && repo[strlen(repo) - 1] != '/';
}

static int valid_file_name(const char *s)
{
    return *s && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..") && s[0] != '.';
}

static int fetch_one(const mh_options *o, const json_t *siblings, const char *repo_url, const char *tmp,
                     const char *name, int required, char *err, size_t errlen)
{
    sibling s;
    if (!find_sibling(siblings, name, &s)) {
        if (required)
            return mt_error(MT_ERR_INVALID, err, errlen, "the repository has no %s, which a MarianMT directory needs",
                            name);
        return 0;
    }
    if (s.sha256 && (strlen(s.sha256) != 64 || strspn(s.sha256, "0123456789abcdefABCDEF") != 64))
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: the hub's sha256 is not 64 hex digits", name);
    char url[2048], path[4200], esc[600];
    url_escape(esc, sizeof esc, name, 0);
    snprintf(url, sizeof url, "%s/%s", repo_url, esc);
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    if (o->log)
        fprintf(o->log, "downloading %s (%lld bytes)\n", name, s.size);
    return download(o, url, path, name, s.size, s.sha256, err, errlen);
}

static int write_manifest(const char *tmp, const char *repo, const char *commit, const char *rev, int int8)
{
    char path[4200];
    json_t *m = json_pack("{s:s,s:s,s:s,s:s,s:I}", "repo", repo, "revision", rev, "commit", commit ? commit : "",
                          "stored", int8 ? "int8" : "as published", "installed_unix", (json_int_t)time(NULL));
    int rc = m ? json_dump_file(m, mt_strfmt(path, sizeof path, "%s/.mt-install.json", tmp), JSON_INDENT(2)) : -1;
    json_decref(m);
    return rc;
}

int mh_install(const mh_options *o, const char *repo, const char *revision, const char *dest, int int8,
               char *installed, size_t installed_len, char *err, size_t errlen)
{
    if (!valid_repo(repo))
        return mt_error(MT_ERR_INVALID, err, errlen, "'%s' is not a repository id (OWNER/NAME)", repo);
    const char *rev = revision ? revision : "main";
    const char *base = strrchr(repo, '/') ? strrchr(repo, '/') + 1 : repo;
    char target[4096], parent[4096];
    if (dest)
        snprintf(target, sizeof target, "%s", dest);
    else if (!o->models_dir)
        return mt_error(MT_ERR_INVALID, err, errlen, "no models directory");
    else
        snprintf(target, sizeof target, "%s/%s", o->models_dir, base);
    if (installed)
        snprintf(installed, installed_len, "%s", target);
    struct stat sb;
    char cfg_path[4200];
    if (stat(target, &sb) == 0 && access(mt_strfmt(cfg_path, sizeof cfg_path, "%s/config.json", target), F_OK))
        return mt_error(MT_ERR_INVALID, err, errlen, "%s exists and is not a model directory (no config.json)",
                        target);
    if (stat(target, &sb) == 0) {
        if (o->log)
            fprintf(o->log, "%s is already installed at %s (mt-models remove %s to reinstall)\n", repo, target, base);
        return 0;
    }
    if (o->offline)
        return mt_error(MT_ERR_INVALID, err, errlen, "HF_HUB_OFFLINE is set and %s is not installed at %s; "
                        "install it where there is network", repo, target);
    snprintf(parent, sizeof parent, "%s", target);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent)
        *slash = 0;
    else
        snprintf(parent, sizeof parent, "%s", slash ? "/" : ".");
    if (mkdirs(parent))
        return mt_error(MT_ERR_INVALID, err, errlen, "cannot create %s: %s", parent, strerror(errno));
    sweep_stale(parent);

    char url[2048], esc_repo[600], esc_rev[300];
    url_escape(esc_repo, sizeof esc_repo, repo, 1);
    url_escape(esc_rev, sizeof esc_rev, rev, 0);
    snprintf(url, sizeof url, "%s/api/models/%s/revision/%s?blobs=true", o->endpoint, esc_repo, esc_rev);
    char what[700];
    snprintf(what, sizeof what, "%s@%s", repo, rev);
    json_t *info = get_json(o, url, what, err, errlen);
    if (!info)
        return MT_ERR_INVALID;
    int rc = 0;
    char tmp[4200] = "";
    json_t *siblings = json_object_get(info, "siblings");
    const char *commit = json_string_value(json_object_get(info, "sha"));
    if (!json_is_array(siblings)) {
        rc = mt_error(MT_ERR_INVALID, err, errlen, "%s: the hub's answer lists no files", what);
        goto done;
    }
    /* The hub's own summary of config.json: refuse before downloading anything. */
    json_t *hubcfg = json_object_get(info, "config");
    if (json_is_object(hubcfg) && json_object_get(hubcfg, "model_type") &&
        (rc = mh_check_marian_config(hubcfg, err, errlen)))
        goto done;
    sibling s;
    const char *weights = find_sibling(siblings, "model.safetensors", &s) ? "model.safetensors"
                        : find_sibling(siblings, "pytorch_model.bin", &s) ? "pytorch_model.bin" : NULL;
    if (!weights) {
        rc = mt_error(MT_ERR_INVALID, err, errlen, "%s has neither model.safetensors nor pytorch_model.bin "
                      "(TensorFlow, Flax and Rust weights are not read)", what);
        goto done;
    }
    snprintf(tmp, sizeof tmp, "%s/.install-%s.%ld", parent, base, (long)getpid());
    remove_tree(tmp);
    if (mkdir(tmp, 0755)) {
        rc = mt_error(MT_ERR_INVALID, err, errlen, "cannot create %s: %s", tmp, strerror(errno));
        tmp[0] = 0;
        goto done;
    }
    char repo_url[2048], esc_commit[300];
    url_escape(esc_commit, sizeof esc_commit, commit && *commit ? commit : rev, 0);
    snprintf(repo_url, sizeof repo_url, "%s/%s/resolve/%s", o->endpoint, esc_repo, esc_commit);
    if ((rc = fetch_one(o, siblings, repo_url, tmp, "config.json", 1, err, errlen)))
        goto done;
    char path[4400];
    json_error_t je;
    json_t *cfg = json_load_file(mt_strfmt(path, sizeof path, "%s/config.json", tmp), 0, &je);
    if (!cfg) {
        rc = mt_error(MT_ERR_INVALID, err, errlen, "config.json: %s", je.text);
        goto done;
    }
    rc = mh_check_marian_config(cfg, err, errlen);
    json_decref(cfg);
    if (rc)
        goto done;
    for (size_t k = 1; k < sizeof REQUIRED / sizeof *REQUIRED; k++)
        if ((rc = fetch_one(o, siblings, repo_url, tmp, REQUIRED[k], 1, err, errlen)))
            goto done;
    for (size_t k = 0; k < sizeof OPTIONAL / sizeof *OPTIONAL; k++)
        if ((rc = fetch_one(o, siblings, repo_url, tmp, OPTIONAL[k], 0, err, errlen)))
            goto done;
    if ((rc = fetch_one(o, siblings, repo_url, tmp, weights, 1, err, errlen)))
        goto done;
    if ((rc = mh_convert_dir(tmp, int8, o->log, err, errlen)))
        goto done;
    if (write_manifest(tmp, repo, commit, rev, int8)) {
        rc = mt_error(MT_ERR_INVALID, err, errlen, "cannot write %s/.mt-install.json: %s", tmp, strerror(errno));
        goto done;
    }
    if (o->cancel && *o->cancel) {
        rc = mt_error(MT_ERR_CANCELLED, err, errlen, "interrupted");
        goto done;
    }
    if (rename(tmp, target)) {
        if (errno == EEXIST || errno == ENOTEMPTY) {
            /* Another install of the same model finished first: its copy stands. */
            if (o->log)
                fprintf(o->log, "%s was installed at %s meanwhile by another process\n", repo, target);
        } else {
            rc = mt_error(MT_ERR_INVALID, err, errlen, "cannot move the model into %s: %s", target,
                          strerror(errno));
        }
        goto done;
    }
    tmp[0] = 0;
    if (o->log)
        fprintf(o->log, "installed %s at %s\n", repo, target);
done:
    if (tmp[0])
        remove_tree(tmp);
    json_decref(info);
    return rc;
}

/* ---- list, remove -------------------------------------------------------------------- */

static long long dir_bytes(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    long long total = 0;
    struct dirent *e;
    char p[4200];
    struct stat sb;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && !stat(mt_strfmt(p, sizeof p, "%s/%s", dir, e->d_name), &sb) && S_ISREG(sb.st_mode))
            total += sb.st_size;
    closedir(d);
    return total;
}

/* The stored type of a model.safetensors: int8 when any matrix is I8, else the dtype of
 * the first tensor (the header is read, never the data). */
static void stored_type(const char *dir, char *out, size_t len)
{
    char p[4200];
    snprintf(out, len, "?");
    if (access(mt_strfmt(p, sizeof p, "%s/model.safetensors", dir), F_OK) &&
        !access(mt_strfmt(p, sizeof p, "%s/model.bin", dir), F_OK)) {
        snprintf(out, len, "ct2"); /* a CTranslate2 model (argos-translate) */
        return;
    }
    FILE *f = fopen(mt_strfmt(p, sizeof p, "%s/model.safetensors", dir), "rb");
    unsigned char l8[8];
    if (!f)
        return;
    if (fread(l8, 1, 8, f) == 8) {
        uint64_t n = 0;
        for (int b = 7; b >= 0; b--)
            n = n << 8 | l8[b];
        char *js = n < (100u << 20) ? malloc(n + 1) : NULL;
        json_t *h = js && fread(js, 1, n, f) == n ? json_loadb(js, n, 0, NULL) : NULL;
        free(js);
        const char *k;
        json_t *v;
        int i8 = 0;
        const char *first = NULL;
        json_object_foreach(h, k, v) {
            const char *dt = json_string_value(json_object_get(v, "dtype"));
            if (!dt)
                continue;
            i8 |= !strcmp(dt, "I8");
            if (!first && strstr(k, "weight"))
                first = dt;
        }
        if (h)
            snprintf(out, len, "%s", i8 ? "int8" : first && !strcmp(first, "F32") ? "float32"
                                        : first && !strcmp(first, "F16") ? "float16"
                                        : first && !strcmp(first, "BF16") ? "bfloat16" : "?");
        json_decref(h);
    }
    fclose(f);
}

int mh_list(const mh_options *o, FILE *out, char *err, size_t errlen)
{
    DIR *d = opendir(o->models_dir);
    if (!d) {
        if (errno == ENOENT) {
            fprintf(out, "no models installed in %s\n", o->models_dir);
            return 0;
        }
        return mt_error(MT_ERR_INVALID, err, errlen, "cannot read %s: %s", o->models_dir, strerror(errno));
    }
    struct dirent *e;
    char dir[4200], p[4400], type[32];
    int n = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        mt_strfmt(dir, sizeof dir, "%s/%s", o->models_dir, e->d_name);
        if (access(mt_strfmt(p, sizeof p, "%s/config.json", dir), R_OK))
            continue;
        json_t *tc = json_load_file(mt_strfmt(p, sizeof p, "%s/tokenizer_config.json", dir), 0, NULL);
        json_t *man = json_load_file(mt_strfmt(p, sizeof p, "%s/.mt-install.json", dir), 0, NULL);
        const char *src = json_string_value(json_object_get(tc, "source_lang"));
        const char *tgt = json_string_value(json_object_get(tc, "target_lang"));
        char pair[80];
        snprintf(pair, sizeof pair, "%s -> %s", src ? src : "?", tgt ? tgt : "?");
        stored_type(dir, type, sizeof type);
        const char *repo = json_string_value(json_object_get(man, "repo"));
        if (!n++)
            fprintf(out, "%-32s %-16s %10s  %-9s %s\n", "NAME", "PAIR", "SIZE", "STORED", "FROM");
        fprintf(out, "%-32s %-16s %8.1f MB  %-9s %s\n", e->d_name, pair, (double)dir_bytes(dir) / 1e6, type,
                repo ? repo : "-");
        json_decref(tc);
        json_decref(man);
    }
    closedir(d);
    if (!n)
        fprintf(out, "no models installed in %s\n", o->models_dir);
    return 0;
}

int mh_remove(const mh_options *o, const char *name, char *err, size_t errlen)
{
    if (!valid_file_name(name))
        return mt_error(MT_ERR_INVALID, err, errlen, "'%s' is not a model name (see mt-models list)", name);
    char dir[4200], p[4400], away[4400];
    mt_strfmt(dir, sizeof dir, "%s/%s", o->models_dir, name);
    struct stat sb;
    if (lstat(dir, &sb) || !S_ISDIR(sb.st_mode))
        return mt_error(MT_ERR_INVALID, err, errlen, "no model '%s' in %s", name, o->models_dir);
    if (access(mt_strfmt(p, sizeof p, "%s/config.json", dir), F_OK))
        return mt_error(MT_ERR_INVALID, err, errlen, "%s is not a model directory (no config.json); not removed", dir);
    mt_strfmt(away, sizeof away, "%s/.remove-%s.%ld", o->models_dir, name, (long)getpid());
    if (rename(dir, away))
        return mt_error(MT_ERR_INVALID, err, errlen, "cannot remove %s: %s", dir, strerror(errno));
    if (remove_tree(away))
        return mt_error(MT_ERR_INVALID, err, errlen, "removed %s, but could not delete all of %s: %s", name, away,
                        strerror(errno));
    return 0;
}
