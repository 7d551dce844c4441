/* options.c: the decoding options table and the checks, merges and comparisons that walk it. */
#include "options_search.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "status.h"

#define ROW_(ID, name, flag, alias, arg, type, min, max, min_open, where, batch_key, cache_key, cfg, help)       \
    [MT_OPT_##ID] = {#name, flag, alias, arg, MT_OPT_##type, min, max, min_open, offsetof(mt_search_options, name), \
                     where, batch_key, cache_key, help},

static const mt_option_desc TABLE[MT_OPT_COUNT] = {MT_DECODING_OPTIONS(ROW_)};

const mt_option_desc *mt_option(int id) { return id >= 0 && id < MT_OPT_COUNT ? &TABLE[id] : NULL; }

int mt_option_by_name(const char *name)
{
    for (int i = 0; i < MT_OPT_COUNT; i++)
        if (strcmp(TABLE[i].name, name) == 0) return i;
    return -1;
}

int mt_option_by_flag(const char *flag)
{
    for (int i = 0; i < MT_OPT_COUNT; i++)
        if (strcmp(TABLE[i].flag, flag) == 0 || (TABLE[i].alias && strcmp(TABLE[i].alias, flag) == 0)) return i;
    return -1;
}

double mt_option_get(const mt_search_options *o, int id)
{
    const char *p = (const char *)o + TABLE[id].offset;
    switch (TABLE[id].type) {
    case MT_OPT_FLOAT: return *(const float *)p;
    case MT_OPT_U64: return (double)*(const uint64_t *)p;
    default: return *(const int *)p;
    }
}

static void put(mt_search_options *o, int id, double x)
{
    char *p = (char *)o + TABLE[id].offset;
    switch (TABLE[id].type) {
    case MT_OPT_FLOAT: *(float *)p = (float)x; break;
    case MT_OPT_U64: *(uint64_t *)p = (uint64_t)x; break;
    default: *(int *)p = (int)x; break;
    }
}

int mt_option_check(int id, double x, double max_override, const char *label, char *err, size_t errlen)
{
    const mt_option_desc *d = &TABLE[id];
    double lo = d->min, hi = max_override > 0 && max_override < d->max ? max_override : d->max;
    int integral = d->type != MT_OPT_FLOAT;
    int ok = isfinite(x) && (d->min_open ? x > lo : x >= lo) && x <= hi && (!integral || x == floor(x));
    if (ok) return 0;
    if (d->type == MT_OPT_BOOL) return mt_error(-1, err, errlen, "%s must be true or false", label);
    if (d->min_open)
        return mt_error(-1, err, errlen, "%s must be a number in (%g, %g]", label, lo, hi);
    if (!integral) return mt_error(-1, err, errlen, "%s must be a number between %g and %g", label, lo, hi);
    return mt_error(-1, err, errlen, "%s must be an integer between %.0f and %.0f", label, lo, hi);
}

int mt_option_set(mt_decoding *d, int id, double x, double max_override, const char *label, char *err,
                  size_t errlen)
{
    if (mt_option_check(id, x, max_override, label, err, errlen)) return -1;
    d->v[id] = x;
    d->set |= 1u << id;
    return 0;
}

int mt_option_parse(mt_decoding *d, int id, const char *text, double max_override, const char *label,
                    char *err, size_t errlen)
{
    double x;
    if (TABLE[id].type == MT_OPT_BOOL) {
        if (!strcasecmp(text, "true") || !strcmp(text, "1")) x = 1;
        else if (!strcasecmp(text, "false") || !strcmp(text, "0")) x = 0;
        else return mt_error(-1, err, errlen, "%s must be true or false", label);
    } else {
        char *end;
        errno = 0;
        x = strtod(text, &end);
        while (*end == ' ') end++;
        if (end == text || *end || errno == ERANGE) x = NAN; /* mt_option_check names the range */
    }
    return mt_option_set(d, id, x, max_override, label, err, errlen);
}

void mt_decoding_merge(mt_decoding *dst, const mt_decoding *src)
{
    for (int i = 0; i < MT_OPT_COUNT; i++)
        if (src->set & (1u << i)) {
            dst->v[i] = src->v[i];
            dst->set |= 1u << i;
        }
}

void mt_decoding_apply(const mt_decoding *d, mt_search_options *o)
{
    for (int i = 0; i < MT_OPT_COUNT; i++)
        if (d->set & (1u << i)) put(o, i, d->v[i]);
}

int mt_options_same_batch(const mt_search_options *a, const mt_search_options *b)
{
    for (int i = 0; i < MT_OPT_COUNT; i++) {
        if (!TABLE[i].batch_key) continue;
        size_t size = TABLE[i].type == MT_OPT_U64 ? sizeof(uint64_t)
                      : TABLE[i].type == MT_OPT_FLOAT ? sizeof(float) : sizeof(int);
        if (memcmp((const char *)a + TABLE[i].offset, (const char *)b + TABLE[i].offset, size) != 0) return 0;
    }
    /* not options a caller sets through the table: target_prefix and sentence_index are
     * per sentence and travel with the items */
    return a->n_bad_ids == b->n_bad_ids && a->bad_ids == b->bad_ids && a->unk_id == b->unk_id;
}

size_t mt_options_key_size(void)
{
    size_t n = 0;
    for (int i = 0; i < MT_OPT_COUNT; i++)
        if (TABLE[i].cache_key) n += TABLE[i].type == MT_OPT_U64 ? 8 : 4;
    return n;
}

void mt_options_key(const mt_search_options *o, unsigned char *out)
{
    for (int i = 0; i < MT_OPT_COUNT; i++) {
        if (!TABLE[i].cache_key) continue;
        size_t size = TABLE[i].type == MT_OPT_U64 ? 8 : 4;
        memcpy(out, (const char *)o + TABLE[i].offset, size);
        out += size;
    }
}
