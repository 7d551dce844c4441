/* url.h: a connection URL made fit to print: the password of its user info
 * (scheme://user:PASSWORD@host) and every password=VALUE parameter (URL query or libpq
 * conninfo) replaced by ***. Used wherever a database URL may reach a log or a printed
 * configuration.
 *
 * Thread-safety: pure function.
 */
#ifndef MT_UTIL_URL_H
#define MT_UTIL_URL_H

#include <stddef.h>

/* Writes url into out[0, cap) with its passwords replaced by ***; truncated to fit. */
void mt_url_redact(const char *url, char *out, size_t cap);

#endif
