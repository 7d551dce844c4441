/* ratelimit.h: per-client rate limits (LibreTranslate's --req-limit and --char-limit per
 * minute): a token bucket per client for requests and one for characters, refilled
 * continuously, so a client may burst up to a minute's allowance and then goes at the
 * limit's pace. The server answers a limited request 429 with Retry-After.
 *
 * Clients are keyed by a string (the API key, else the address). At most max_clients are
 * tracked; beyond that the client seen least recently is forgotten (it starts again with
 * a full allowance, so the table cannot be used to lock others out).
 *
 * Thread-safety: one limiter may be used by any number of threads at once (one mutex).
 * Errors: create returns NULL with a message (bad options, no memory); the other calls
 * cannot fail (their answer is MT_RATE_*). Ownership: the limiter copies the client keys
 * it tracks (cut at 127 bytes); the caller's strings are only read during a call; the
 * caller frees the limiter with mt_ratelimit_free.
 */
#ifndef MT_RATELIMIT_H
#define MT_RATELIMIT_H

#include <stddef.h>

typedef struct mt_ratelimit mt_ratelimit;

typedef struct {
    int requests_per_minute; /* 0: no request limit */
    long chars_per_minute;   /* 0: no character limit */
    int max_clients;         /* clients tracked at once */
    double (*clock)(void *user); /* seconds (NULL: CLOCK_MONOTONIC); tests pass their own */
    void *clock_user;
} mt_ratelimit_options;

enum {
    MT_RATE_OK = 0,        /* allowed; the allowance was charged */
    MT_RATE_LIMITED = 1,   /* over the limit: retry after *retry_after seconds */
    MT_RATE_TOO_LARGE = 2, /* more characters than a whole minute's allowance */
};

/* Defaults: no limits (off, as in LibreTranslate), 10000 clients. */
mt_ratelimit_options mt_ratelimit_options_default(void);

/* NULL with a message on bad options. A limiter with both limits 0 allows everything. */
mt_ratelimit *mt_ratelimit_create(const mt_ratelimit_options *opt, char *err, size_t errlen);
void mt_ratelimit_free(mt_ratelimit *rl);

/* Charges one request of `chars` characters to client; retry_after (whole seconds, at
 * least 1) is set when limited. Nothing is charged unless the answer is MT_RATE_OK. */
int mt_ratelimit_check(mt_ratelimit *rl, const char *client, long chars, int *retry_after);
/* The same for `requests` requests (0 or 1) of `chars` characters: a file's characters
 * are charged once its text is extracted, after its upload was charged as a request. */
int mt_ratelimit_charge(mt_ratelimit *rl, const char *client, int requests, long chars, int *retry_after);
/* What client has used of each allowance now, refilled as a charge would refill it (a
 * minute's allowance minus what is left); nothing is charged. 0 for a client not seen. */
void mt_ratelimit_used(mt_ratelimit *rl, const char *client, double *requests, double *chars);

#endif
