/* hub_internal.h: what hub/'s files share (not a public header). */
#ifndef MH_HUB_INTERNAL_H
#define MH_HUB_INTERNAL_H

#include <jansson.h>
#include <stddef.h>

#include "hub.h"

/* 0 when config.json describes a MarianMT model; else refuses it naming its type. */
int mh_check_marian_config(const json_t *cfg, char *err, size_t errlen);

/* hub.c's install helpers, for argos.c: a whole tree removed; a path's directories made;
 * temporary directories of dead installs in dir removed. */
int mh_remove_tree(const char *path);
int mh_mkdirs(const char *path);
void mh_sweep_stale(const char *dir);

/* http.c, for hub.c: GET url as JSON (what names it in messages); s percent-escaped into
 * out (keep_slash: '/' kept, for repository names); url downloaded into path, resuming
 * what is there, until want bytes (-1: any), checking the size and (sha256 non-NULL) the
 * digest. All send the hub's token when o has one. */
json_t *mh_http_get_json(const mh_options *o, const char *url, const char *what, char *err, size_t errlen);
void mh_url_escape(char *out, size_t len, const char *s, int keep_slash);
int mh_http_download(const mh_options *o, const char *url, const char *path, const char *label, long long want,
                     const char *sha256, char *err, size_t errlen);

/* http.c, for argos.c: url (not the hub's) downloaded to path (resumed when cut, as the
 * hub's files are; no size or digest to check). */
int mh_download_url(const mh_options *o, const char *url, const char *path, const char *label, char *err,
                    size_t errlen);
/* GET url as JSON (retried as the hub's listings are). Neither sends the hub's token. */
json_t *mh_get_json_url(const mh_options *o, const char *url, const char *what, char *err, size_t errlen);

#endif
