/* ratelimit.c: mt_ratelimit. See ratelimit.h for the contract. */
#include "ratelimit.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { KEY_MAX = 128 };

typedef struct {
    int used;
    char key[KEY_MAX];
    double req_tokens, char_tokens; /* allowance left */
    double last;                    /* clock at the last refill */
} client;

struct mt_ratelimit {
    mt_ratelimit_options opt;
    client *clients;
    pthread_mutex_t lock;
};

mt_ratelimit_options mt_ratelimit_options_default(void)
{
    mt_ratelimit_options o = {.requests_per_minute = 0, .chars_per_minute = 0,
                              .max_clients = 10000};
    return o;
}

static double now_of(const mt_ratelimit *rl)
{
    if (rl->opt.clock) return rl->opt.clock(rl->opt.clock_user);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

mt_ratelimit *mt_ratelimit_create(const mt_ratelimit_options *opt, char *err, size_t errlen)
{
    if (!opt || opt->requests_per_minute < 0 || opt->chars_per_minute < 0 ||
        opt->max_clients <= 0) {
        snprintf(err, errlen, "rate limit: limits must be >= 0 and max_clients > 0");
        return NULL;
    }
    mt_ratelimit *rl = calloc(1, sizeof *rl);
    if (rl) rl->clients = calloc((size_t)opt->max_clients, sizeof *rl->clients);
    if (!rl || !rl->clients) {
        free(rl);
        snprintf(err, errlen, "rate limit: out of memory");
        return NULL;
    }
    rl->opt = *opt;
    pthread_mutex_init(&rl->lock, NULL);
    return rl;
}

void mt_ratelimit_free(mt_ratelimit *rl)
{
    if (!rl) return;
    pthread_mutex_destroy(&rl->lock);
    free(rl->clients);
    free(rl);
}

/* The client's entry: found by open addressing on the key's hash, else a free one, else
 * the one seen least recently (reset). Keys longer than KEY_MAX-1 are cut: an address
 * or an API key fits. */
static client *lookup(mt_ratelimit *rl, const char *key, double now)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *p = key; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    int n = rl->opt.max_clients;
    client *oldest = NULL;
    for (int i = 0; i < n; i++) {
        client *c = &rl->clients[(h + (uint64_t)i) % (uint64_t)n];
        if (!c->used) {
            oldest = c;
            break;
        }
        if (strncmp(c->key, key, KEY_MAX - 1) == 0) return c;
        if (!oldest || c->last < oldest->last) oldest = c;
    }
    client *c = oldest;
    c->used = 1;
    snprintf(c->key, sizeof c->key, "%s", key);
    c->req_tokens = rl->opt.requests_per_minute;
    c->char_tokens = (double)rl->opt.chars_per_minute;
    c->last = now;
    return c;
}

int mt_ratelimit_check(mt_ratelimit *rl, const char *client_key, long chars, int *retry_after)
{
    return mt_ratelimit_charge(rl, client_key, 1, chars, retry_after);
}

int mt_ratelimit_charge(mt_ratelimit *rl, const char *client_key, int requests, long chars, int *retry_after)
{
    if (retry_after) *retry_after = 0;
    if (!rl || (!rl->opt.requests_per_minute && !rl->opt.chars_per_minute)) return MT_RATE_OK;
    if (chars < 0) chars = 0;
    if (rl->opt.chars_per_minute && chars > rl->opt.chars_per_minute) return MT_RATE_TOO_LARGE;
    pthread_mutex_lock(&rl->lock);
    double now = now_of(rl);
    client *c = lookup(rl, client_key ? client_key : "", now);
    /* Refill at limit/60 per second, up to one minute's allowance. */
    double dt = now - c->last > 0 ? now - c->last : 0;
    c->last = now;
    double rpm = rl->opt.requests_per_minute, cpm = (double)rl->opt.chars_per_minute;
    c->req_tokens = fmin(rpm, c->req_tokens + dt * rpm / 60.0);
    c->char_tokens = fmin(cpm, c->char_tokens + dt * cpm / 60.0);
    double wait = 0;
    if (rpm > 0 && requests > 0 && c->req_tokens < requests)
        wait = fmax(wait, (requests - c->req_tokens) * 60.0 / rpm);
    if (cpm > 0 && c->char_tokens < (double)chars)
        wait = fmax(wait, ((double)chars - c->char_tokens) * 60.0 / cpm);
    int rc = MT_RATE_OK;
    if (wait > 0) {
        rc = MT_RATE_LIMITED;
        if (retry_after) *retry_after = (int)ceil(wait - 1e-9) > 0 ? (int)ceil(wait - 1e-9) : 1;
    } else {
        if (rpm > 0) c->req_tokens -= requests;
        if (cpm > 0) c->char_tokens -= (double)chars;
    }
    pthread_mutex_unlock(&rl->lock);
    return rc;
}

void mt_ratelimit_used(mt_ratelimit *rl, const char *client_key, double *requests, double *chars)
{
    *requests = *chars = 0;
    if (!rl || !client_key) return;
    pthread_mutex_lock(&rl->lock);
    double now = now_of(rl);
    uint64_t h = 1469598103934665603ull;
    for (const char *p = client_key; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    int n = rl->opt.max_clients;
    for (int i = 0; i < n; i++) {
        const client *c = &rl->clients[(h + (uint64_t)i) % (uint64_t)n];
        if (!c->used) break;
        if (strncmp(c->key, client_key, KEY_MAX - 1) != 0) continue;
        double dt = now - c->last > 0 ? now - c->last : 0;
        double rpm = rl->opt.requests_per_minute, cpm = (double)rl->opt.chars_per_minute;
        *requests = rpm - fmin(rpm, c->req_tokens + dt * rpm / 60.0);
        *chars = cpm - fmin(cpm, c->char_tokens + dt * cpm / 60.0);
        break;
    }
    pthread_mutex_unlock(&rl->lock);
}
