/* fixture_dir.h: where the C tests find the files in tests/fixtures/.
 *
 * meson sets MT_SOURCE_DIR for every test; run by hand from the repository root, the
 * relative path works as well. The fixtures are committed, so no test needs ../shared. */
#ifndef MT_TEST_FIXTURE_DIR_H
#define MT_TEST_FIXTURE_DIR_H

#include <stdio.h>
#include <stdlib.h>

/* The OPUS-MT en-pt tokenizer and configuration files (CC-BY 4.0, no weights): writes
 * their directory into buf and returns buf. */
static inline const char *opus_fixture_dir(char *buf, size_t size)
{
    const char *src = getenv("MT_SOURCE_DIR");
    snprintf(buf, size, "%s/tests/fixtures/opus-mt-tc-big-en-pt", src != NULL && *src ? src : ".");
    return buf;
}

#endif
