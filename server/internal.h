/* internal.h: what the files of server/ share: the server and per-request state, the
 * route table's types, and the calls between the parts. Where things happen:
 *
 *   server.c      life cycle: listen, start the service (models), drain, free
 *   handler.c     libmicrohttpd callbacks: framing checks, the route (routes.c), body
 *                 reading up to the route's limit, dispatch, access log
 *   routes.c      the route table: method, path, handler, auth, body limit; 404/405 texts
 *   request.c     request decoding: where a JSON or form field is parsed (request.h)
 *   render.c      response rendering: translations and detections as JSON bodies
 *   respond.c     HTTP plumbing: JSON and error answers, common headers, CORS preflight
 *   auth.c        API keys: the key a request presents, checks, the metrics key
 *   limits.c      per-client rate limits (429 + Retry-After)
 *   ep_*.c        one file per endpoint: ep_translate.c POST /translate, ep_detect.c
 *                 POST /detect, ep_suggest.c POST /suggest, ep_files.c POST /translate_file
 *                 and GET /download_file/ID, ep_static.c the page, /spec and
 *                 /frontend/settings, ep_health.c, ep_languages.c, ep_metrics.c
 *   watcher.c     cancels tasks of clients that hung up or whose deadline passed
 *   conns.c       per-connection limits: receive deadlines, per-address limits, proxies
 *   metrics.c, log.c  /metrics counters and the log
 */
#ifndef MT_SERVER_INTERNAL_H
#define MT_SERVER_INTERNAL_H

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>

#include "forwarded.h"
#include "request.h"
#include "server.h"
#include "service.h"

typedef struct mt_ratelimit mt_ratelimit;
typedef struct mt_store mt_store;
typedef struct mt_spool mt_spool;
struct mt_spool_entry;

typedef struct req_ctx req_ctx;
typedef struct srv_conn srv_conn;

struct mt_server {
    const mt_config *cfg;
    mt_log *log;
    mt_metrics *metrics;
    struct MHD_Daemon *daemon;
    int port;
    char host[256];
    /* the translation service: models, routes, detection (set by mt_server_load before `ready`) */
    mt_service *svc;
    char *languages_json;     /* GET /languages body, built once */
    int workers;
    atomic_int ready, draining, in_flight;
    /* suspended /translate connections, watched for disconnects and deadlines */
    pthread_mutex_t watch_mu;
    pthread_cond_t watch_cond;
    req_ctx *watched;
    int n_watched, watch_stop, watch_started;
    pthread_t watcher;
    /* per-client limits (limits.c), suggestions (ep_suggest.c), file jobs (ep_files.c) */
    mt_ratelimit *ratelimit;  /* NULL when no per-client limit is configured */
    mt_ratelimit *suggest_limit; /* POST /suggest per client; NULL: none */
    mt_store *store;          /* suggestions (SQLite or PostgreSQL), and with PostgreSQL
                               * (server.shared_state) API keys and rate counters; NULL: none */
    atomic_int store_keys;    /* the shared store held API keys when last asked (-1: unknown) */
    mt_spool *spool;          /* translated files; NULL: file translation off */
    char spool_dir[512];
    int spool_dir_made;       /* a private directory this server made (removed at free) */
    pthread_mutex_t files_mu; /* the file-translation threads: counted, waited for at stop */
    pthread_cond_t files_cond;
    int files_running, files_stop, files_init;
    struct mt_format_isolator *isolator; /* the helper process that forks the document
                                          * readers (ep_files.c); made before any thread */
    /* the HTTP status of the latest failed file jobs (a ring under files_mu): what their
     * /download_file answers; an id that fell out of it answers 422 */
    struct { char id[33]; short status; } file_fails[256];
    int file_fails_next;
    /* markers the URI logger hands to srv_on_request (their addresses only; no memory):
     * the raw request target had a %00 in its path / in its query */
    char nul_in_path, nul_in_query;
    /* open connections (conns.c): receive deadlines and per-address limits */
    pthread_mutex_t conns_mu;
    srv_conn *conns;
    int n_conns, n_refused;
    struct srv_deepl *deepl;  /* DeepL's documents: ids to keys (ep_deepl_doc.c) */
    struct srv_glossaries *glossaries; /* DeepL's glossaries per key and parsed copies (ep_deepl_glossary.c) */
    struct srv_jobs *jobs;    /* file jobs in the shared queue (ep_jobs.c); NULL: in the spool */
    srv_cidr *proxies;        /* server.trusted_proxies */
    int n_proxies;
};

/* ---- the route table (routes.c) ---- */

enum { SRV_GET = 1, SRV_POST = 2, SRV_DELETE = 4 };        /* methods (GET includes HEAD) */
enum { SRV_AUTH_NONE = 0, SRV_AUTH_KEY, SRV_AUTH_METRICS };   /* who may call */
enum { SRV_BODY_NONE = 0, SRV_BODY_REQUEST, SRV_BODY_FILE };  /* what body is read */

typedef enum MHD_Result (*srv_handler)(mt_server *s, req_ctx *c);

typedef struct {
    unsigned methods;   /* SRV_GET | SRV_POST */
    const char *path;   /* the path, or with prefix set the start of it */
    int prefix;
    srv_handler handler;/* answers once the body is in (or dropped, SRV_BODY_NONE) */
    int auth;           /* SRV_AUTH_KEY: an API key when keys are configured (checked by the
                         * handler: it may be in the body); SRV_AUTH_METRICS: an API key or
                         * the metrics key unless metrics are public (checked before) */
    int body;           /* SRV_BODY_REQUEST: limits.max_body_bytes; SRV_BODY_FILE:
                         * limits.max_file_bytes + 64 KiB; SRV_BODY_NONE: read and dropped */
    mt_endpoint ep;     /* metrics label */
} srv_route;

/* The route of path, or NULL (404). */
const srv_route *srv_route_find(const char *path);
/* SRV_GET for GET and HEAD, SRV_POST for POST, SRV_DELETE for DELETE, else 0. */
unsigned srv_method_bit(const char *method);
/* The Allow header of route r (CORS preflights: its methods). */
const char *srv_route_allow(const srv_route *r);
/* "method not allowed: use POST /translate" into out. */
void srv_route_not_allowed(const srv_route *r, char *out, size_t cap);
/* "not found: PATH (endpoints: ...)" into out, every route listed. */
void srv_route_not_found(const char *path, char *out, size_t cap);

enum { P_NEW = 0, P_BODY, P_QUEUED, P_DONE };

/* A request's body as it is read (handler.c). */
typedef struct {
    char *body;               /* NUL-terminated, len bytes */
    size_t len, cap;
    size_t limit;             /* largest body read (413 beyond): the route's */
    int too_large, discard;   /* over the limit / not wanted: read and dropped */
    size_t dropped;
    int deferred_status;      /* answered once the body is in: this status and message */
    char deferred_msg[512];
    int close_after;          /* answer with Connection: close (framing errors) */
    mt_content_type ctype;
    char boundary[80];
} srv_body;

/* What the access log says of a request. */
typedef struct {
    int status;
    size_t bytes_out;
    int sentences;
    const char *model_name;
    char error[160];
} srv_outcome;

struct req_ctx {
    mt_server *srv;
    struct MHD_Connection *conn;
    const srv_route *route;   /* NULL: no route (404) */
    mt_endpoint ep;           /* the route's metrics label */
    char method[16];
    char path[160];
    char remote[64];
    double t_start;
    int phase;
    int settled;              /* the whole request has been seen (see handler.c) */
    int http11;               /* the request is HTTP/1.1 (may be sent a 1xx interim answer) */
    srv_body in;
    srv_outcome out;
    /* POST /translate, while its task runs */
    mt_request req;
    mt_service_task *task;
    int rejected;             /* the queue refused it (503): MT_SERVICE_BUSY (overloaded,
                               * retry later) or MT_SERVICE_SHUTDOWN (shutting down) */
    int stopped;              /* the watcher cancelled the task */
    int probed;               /* the watcher sent "100 Continue" after a half-close */
    int fd;
    req_ctx *wnext, *wprev;   /* the watcher's list */
    int watched;
    long key_chars_limit;     /* the request's key is in the shared store with this limit (0: none) */
    int key_from_store;       /* the request's key was found in the shared store */
};

/* respond.c */
/* CORS and, while draining, "Connection: close". */
void srv_add_common_headers(req_ctx *c, struct MHD_Response *r);
void srv_copy_text(char *d, size_t cap, const char *s);
/* Queues buf (malloc'd, taken) as the answer; records status and size for the access log. */
enum MHD_Result srv_send_buffer(req_ctx *c, int status, char *buf, size_t len,
                                const char *content_type, const char *h1, const char *v1);
/* Queues body (taken) as a JSON answer. */
enum MHD_Result srv_send_json(req_ctx *c, int status, json_t *body, const char *h1, const char *v1);
/* {"error": msg} with the status's headers (Retry-After, Allow). */
enum MHD_Result srv_send_error(req_ctx *c, int status, const char *msg);

/* watcher.c */
void srv_watch_add(mt_server *s, req_ctx *c);
void srv_watch_remove_locked(mt_server *s, req_ctx *c); /* watch_mu held */
void *srv_watcher_main(void *arg);
/* The service's callback: the task is finished; resumes the connection. */
void srv_job_done(mt_service_task *task, void *user);

/* respond.c: the CORS preflight answer (204) with the route's methods. */
enum MHD_Result srv_send_preflight(req_ctx *c);

/* The endpoints (ep_*.c), as the route table names them. */
enum MHD_Result srv_ep_translate(mt_server *s, req_ctx *c);
enum MHD_Result srv_ep_languages(mt_server *s, req_ctx *c);
enum MHD_Result srv_ep_health(mt_server *s, req_ctx *c);
enum MHD_Result srv_ep_metrics(mt_server *s, req_ctx *c);
enum MHD_Result srv_ep_detect(mt_server *s, req_ctx *c);
enum MHD_Result srv_ep_suggest(mt_server *s, req_ctx *c);
enum MHD_Result srv_ep_translate_file(mt_server *s, req_ctx *c);
enum MHD_Result srv_ep_download(mt_server *s, req_ctx *c);
enum MHD_Result srv_ep_settings(mt_server *s, req_ctx *c);
enum MHD_Result srv_ep_static(mt_server *s, req_ctx *c);

/* How an endpoint charges its rate limit (0: go on; else *ret is the answer queued) and
 * answers an error, in its API's words. */
typedef int (*srv_rate_fn)(mt_server *s, req_ctx *c, const char *key, long chars, enum MHD_Result *ret);
typedef enum MHD_Result (*srv_fail_fn)(req_ctx *c, int status, const char *msg);
/* ep_translate.c: the decoded request c->req (its options as given: absent ones take the
 * service's defaults) is charged to key's rate limit, submitted to the service and queued
 * (srv_queue_task); errors answered by fail; its glossary released either way. POST
 * /translate and DeepL's /v2/translate. */
enum MHD_Result srv_submit_translation(mt_server *s, req_ctx *c, const char *key, srv_rate_fn rate,
                                       srv_fail_fn fail);
/* Runs start (decoding and submitting a translation) announced to the service as arriving:
 * batches being formed wait for it. */
enum MHD_Result srv_while_arriving(mt_server *s, req_ctx *c, enum MHD_Result (*start)(mt_server *, req_ctx *));
/* ep_translate.c: queues the submitted task c->task with the connection suspended (it may
 * finish, and resume the connection, at once); a refusal (full queue, shutting down)
 * resumes it to answer 503. */
enum MHD_Result srv_queue_task(mt_server *s, req_ctx *c);
/* ep_translate.c: the task of a POST /translate is finished (resumed connection): 200,
 * or why not. */
enum MHD_Result srv_finish_translate(mt_server *s, req_ctx *c);
void srv_free_translation(req_ctx *c);

/* render.c: a finished task's answer in the request's form (native or LibreTranslate);
 * NULL out of memory. */
json_t *srv_render_translation(mt_server *s, req_ctx *c);
/* Detection results as LibreTranslate's [{"confidence", "language"}]. */
json_t *srv_render_detection(const mt_detect_result *res, int n);

/* ep_suggest.c: the store (server.shared_state, else [server] suggestions_db). */
int srv_suggest_init(mt_server *s, char *err, size_t errlen);
void srv_suggest_free(mt_server *s);

/* ep_files.c: the file spool and the file-translation threads. */
int srv_files_init(mt_server *s, char *err, size_t errlen);
void srv_files_stop(mt_server *s); /* waits for the translating threads (service aborted first) */
void srv_files_free(mt_server *s);
/* A multipart upload (/translate_file, DeepL's /v2/document): its one "file"
 * part and its text fields as strings. Set keep (names, NULL-ended; NULL: every field that
 * is not a file), max_field (bytes) and deepl (messages in DeepL's words) before reading. */
typedef struct {
    const char *const *keep;
    size_t max_field;
    int deepl;
    json_t *fields;         /* the fields kept (the caller json_decref()s it, also on error) */
    mt_multipart_part file; /* the "file" part, when n_files > 0 */
    int n_files;
} srv_upload;
/* Reads c's multipart body into u; 0 or an HTTP status with a message. */
int srv_upload_read(req_ctx *c, srv_upload *u, char *err, size_t errlen);
/* The route a file of format fmt is translated on: source "auto" detects it from the
 * text of txt, srt and html files; the route, or -1 with a message. */
int srv_files_route(mt_server *s, int fmt, const char *data, size_t len, const char *source, const char *target,
                    char *err, size_t errlen);
/* Answers 200 with a translated file: buf (size bytes, malloc()ed, taken over) as an
 * attachment called name, of type mime. */
enum MHD_Result srv_send_file(req_ctx *c, char *buf, size_t size, const char *name, const char *mime);
/* Starts translating a file (a spool entry and a thread of its own) for the rate limits'
 * client; 0 with its spool id in id[33], or the status to answer (413, 429 or 503 with
 * *retry seconds, 500) with a message. */
int srv_files_submit(mt_server *s, const char *client, const char *name, const char *data, size_t len, int fmt,
                     int route, char *id, double *retry, char *err, size_t errlen);
/* Reads, translates and rebuilds one file (an isolated reader, the service), charging its
 * text to client and reporting progress (NULL: none): 0 with *out (malloc'd), else the
 * HTTP status a download of it answers with and why. */
int srv_files_translate(mt_server *s, const char *client, const char *id, int fmt, const char *source,
                        const char *target, const unsigned char *data, size_t len,
                        void (*progress)(void *user, long done, long total), void *progress_user,
                        unsigned char **out, size_t *out_len, char *err, size_t errlen);

/* ep_jobs.c: file jobs in the queue replicas share (server.shared_state); without it,
 * every call below but the lookups does nothing and the spool keeps the jobs. */
typedef struct srv_jobs srv_jobs;
int srv_jobs_init(mt_server *s, char *err, size_t errlen);  /* opens the queue; 0 or -1 */
int srv_jobs_start(mt_server *s, char *err, size_t errlen); /* starts the file workers (service loaded) */
void srv_jobs_free(mt_server *s); /* stops the workers (a job in hand goes back to the queue) */
/* srv_files_submit's work when the queue is shared. */
int srv_jobs_submit(mt_server *s, const char *client, const char *name, const char *data, size_t len, int fmt,
                    int route, char *id, double *retry, char *err, size_t errlen);
/* DeepL's documents in the shared queue: submitted with their id and (hashed) key, so that
 * any replica finds them (0 with the job's id, upload time and characters billed, -1 when
 * unknown or the key is wrong); characters noted as the worker learns them. */
int srv_jobs_submit_document(mt_server *s, const char *client, const char *name, const char *data, size_t len,
                             int fmt, int route, const char *doc_id, const char *doc_key, char *id, double *retry,
                             char *err, size_t errlen);
int srv_jobs_find_document(mt_server *s, const char *doc_id, const char *doc_key, char *job_id, double *t_start,
                           long long *chars);
void srv_jobs_note_chars(mt_server *s, const char *job_id, long long chars);
/* text (malloc'd /metrics exposition) with the shared queue's gauge mt_file_jobs{state}
 * appended (text as it is without a shared queue, or when the database does not answer). */
char *srv_jobs_metrics(mt_server *s, char *text);
/* GET /download_file/ID when the queue is shared. */
enum MHD_Result srv_jobs_download(mt_server *s, req_ctx *c);
/* A job as the spool describes it, wherever it is kept: 0, or -1 (unknown, expired, or
 * the database cannot be reached). */
int srv_files_lookup(mt_server *s, const char *id, struct mt_spool_entry *out);
/* A done job's file, wherever it is kept: as mt_spool_read. */
int srv_files_read(mt_server *s, const char *id, char **data, size_t *len, char *err, size_t errlen);

/* limits.c: per-client rate limits. */
int srv_limits_init(mt_server *s, char *err, size_t errlen); /* 0, or -1 with a message */
void srv_limits_free(mt_server *s);
/* 0 when the request may go on; else an answer (429 + Retry-After) was queued. The
 * client is its API key only when keys are configured and it presents a valid one (the
 * body's api_key, else the query's or the headers'), else its address: unverifiable
 * keys on an open server cannot buy fresh allowances. */
int srv_rate_check(mt_server *s, req_ctx *c, const char *api_key, long chars, enum MHD_Result *ret);
/* The same charge without an answer (DeepL's API answers in its own way): `requests` (0
 * or 1) and `chars` to the request's client; MT_RATE_* (ratelimit.h) with *retry, and the
 * client's character limit per minute in *char_limit. */
int srv_rate_charge(mt_server *s, req_ctx *c, const char *api_key, int requests, long chars, int *retry,
                    long *char_limit);
/* The client those limits key on ("key:K" or "addr:A") into out. */
void srv_rate_client(mt_server *s, req_ctx *c, const char *api_key, char *out, size_t cap);
/* POST /suggest: the per-client suggestion limit, then the request limits; as above. */
int srv_suggest_rate_check(mt_server *s, req_ctx *c, const char *api_key, long chars, enum MHD_Result *ret);
/* Charges `chars` characters (no request) to client, e.g. a file's text once extracted;
 * 0, or -1 with a message (how long to wait) when over the limit. */
int srv_charge_chars(mt_server *s, const char *client, long long chars, char *err, size_t errlen);

/* auth.c: API keys. */
/* 0 when no keys are configured or obj / the headers present one; else 403. */
int srv_check_api_key(mt_server *s, req_ctx *c, const json_t *obj, char *err, size_t errlen);
/* The API key the request presents (obj's api_key, ?api_key=, Authorization: Bearer,
 * X-API-Key; empty ones are absent), or NULL. Not checked. */
const char *srv_presented_key(req_ctx *c, const json_t *obj);
/* 1 when keys a and b are equal (compared in constant time for equal lengths). */
int srv_key_equal(const char *a, const char *b);
/* 1 when requests need an API key: the config has one, or the shared store holds one
 * (while it is down: what it said last; unknown: yes). */
int srv_keys_required(mt_server *s);
/* SRV_AUTH_METRICS: 1 when the request may read /metrics. */
int srv_metrics_allowed(mt_server *s, req_ctx *c);
/* The body decoded (request.h) with its API key checked: 0, or an HTTP status with a
 * message (*obj, when set, is the caller's to release). */
int srv_read_body(mt_server *s, req_ctx *c, json_t **obj, int *from_form, char *err, size_t errlen);

/* handler.c: libmicrohttpd callbacks (cls: the server) */
/* MHD_OPTION_URI_LOG_CALLBACK: sees the request target before it is unescaped. */
void *srv_on_uri(void *cls, const char *uri, struct MHD_Connection *conn);
enum MHD_Result srv_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls);
void srv_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe);
void srv_on_mhd_log(void *cls, const char *fmt, va_list ap);

/* conns.c: per-connection limits. MHD_OPTION_NOTIFY_CONNECTION callback (cls: the server). */
void srv_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                       enum MHD_ConnectionNotificationCode code);
/* A request's header is in (first callback): 1 when the connection was refused (503 at
 * accept, or its client behind a trusted proxy is over the per-address limit: answered
 * 503 now), so the request is dropped. */
int srv_conn_refused(mt_server *s, struct MHD_Connection *conn);
/* The request is whole: its receive deadline stops. */
void srv_conn_received(req_ctx *c);
/* An answer completed: the connection waits for its next request from now. */
void srv_conn_answered(mt_server *s, struct MHD_Connection *conn);
/* Watcher: 408 and shutdown for connections past server.receive_timeout. */
void srv_conns_expire(mt_server *s);
/* 1 when addr (numeric) is in server.trusted_proxies. */
int srv_is_trusted_proxy(const mt_server *s, const char *addr);
/* The client's address: the peer's, or behind a trusted proxy the one its
 * X-Forwarded-For / Forwarded names (for limits and the access log). */
void srv_conn_client(mt_server *s, struct MHD_Connection *conn, char *out, size_t cap);

#endif
