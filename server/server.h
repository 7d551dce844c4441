/* server.h: the HTTP front end (libmicrohttpd) of the translation service (service.h):
 * it speaks HTTP only; the service picks models, routes languages, detects, resolves
 * options and translates.
 *
 * Endpoints (the route table, routes.c): POST /translate (native {"text": ...} and
 * LibreTranslate {"q": ...} forms, JSON, form-encoded or multipart), GET|POST /languages,
 * GET /health (/live, /ready), GET /metrics, POST /detect, POST /suggest,
 * POST /translate_file, GET /download_file/ID, GET /frontend/settings, GET /spec, and
 * the web page at /.
 * Life cycle: mt_server_create() opens the port (/health answers 503 "loading"),
 * mt_server_load() loads the models and starts the workers (then /health is 200),
 * mt_server_begin_drain() stops accepting connections, mt_server_free() cancels what
 * is left, stops the HTTP threads and the workers, and frees the models.
 *
 * Threads: libmicrohttpd's pool parses requests, hands their texts to the service (which
 * segments and encodes them on that thread), and writes responses; the service's worker
 * threads translate, decode and rejoin; a watcher thread cancels tasks of clients that
 * disconnected or whose deadline passed. Connections wait suspended while their task is
 * queued or translated, so HTTP threads never wait for a worker. A translated file has a
 * thread of its own (ep_files.c).
 *
 * Thread-safety: create, load, begin_drain and free from one controlling thread; the
 * query functions from any thread.
 */
#ifndef MT_SERVER_SERVER_H
#define MT_SERVER_SERVER_H

#include <stddef.h>

#include "config.h"
#include "log.h"
#include "metrics.h"

typedef struct mt_server mt_server;

/* Opens the listening socket and starts serving (not ready yet). cfg, log and metrics
 * are borrowed and must outlive the server. */
mt_server *mt_server_create(const mt_config *cfg, mt_log *log, mt_metrics *metrics, char *err,
                            size_t errlen);
/* The port actually bound (useful with port 0). */
int mt_server_port(const mt_server *s);
/* Starts the translation service over the configured models (it loads them, builds the
 * routes and starts the workers) and marks the server ready. 0 or -1 with a message. */
int mt_server_load(mt_server *s, char *err, size_t errlen);
/* Stops accepting new connections; /health answers 503 "draining". */
void mt_server_begin_drain(mt_server *s);
/* HTTP requests currently being served (received and not yet fully answered). */
int mt_server_in_flight(const mt_server *s);
/* Cancels remaining work (503 "shutting down"), stops everything and frees. */
void mt_server_free(mt_server *s);

#endif
