/* http.c: hub/'s HTTP client (libcurl): JSON listings and file downloads, with the hub's
 * token (not sent to other hosts), retries with backoff on transient failures, resumed
 * downloads checked for size and sha256, a progress bar, and errors that name the hub's
 * reason (a gated or missing repository). Each call makes its own curl handle and keeps no
 * state between calls: safe from any thread once curl_global_init has run. */
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hub_internal.h"
#include "sha256.h"
#include "status.h"

enum { MAX_JSON = 64 << 20 };

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

json_t *mh_http_get_json(const mh_options *o, const char *url, const char *what, char *err, size_t errlen)
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
void mh_url_escape(char *out, size_t len, const char *s, int keep_slash)
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
int mh_http_download(const mh_options *o, const char *url, const char *path, const char *label, long long want,
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

/* Another host than the hub's: the hub's token is not sent there. */
int mh_download_url(const mh_options *o, const char *url, const char *path, const char *label, char *err,
                    size_t errlen)
{
    mh_options plain = *o;
    plain.token = NULL;
    return mh_http_download(&plain, url, path, label, -1, NULL, err, errlen);
}

json_t *mh_get_json_url(const mh_options *o, const char *url, const char *what, char *err, size_t errlen)
{
    mh_options plain = *o;
    plain.token = NULL;
    return mh_http_get_json(&plain, url, what, err, errlen);
}
