/* hub_internal.h: what hub/'s files share (not a public header). */
#ifndef MH_HUB_INTERNAL_H
#define MH_HUB_INTERNAL_H

#include <jansson.h>
#include <stddef.h>

/* 0 when config.json describes a MarianMT model; else refuses it naming its type. */
int mh_check_marian_config(const json_t *cfg, char *err, size_t errlen);

#endif
