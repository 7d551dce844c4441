/* model_fixtures.c: see model_fixtures.h. */
#include "model_fixtures.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

static char tmp_root[256];

void make_root(void)
{
    snprintf(tmp_root, sizeof tmp_root, "/tmp/mt-test-model-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmp_root));
}

void remove_root(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_root);
    ck_assert_int_eq(system(cmd), 0);
}

/* Writes a model from spec into a fresh directory and returns its path (static buffer). */
const char *write_model(const char *name, const tiny_model_spec *spec)
{
    static char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", tmp_root, name);
    ck_assert_int_eq(tiny_model_write(dir, spec), 0);
    return dir;
}

const int32_t sources[6][8] = {
    {5, 6, 7, 0}, {9, 0}, {12, 13, 14, 15, 16, 17, 0}, {20, 21, 0}, {3, 30, 31, 32, 0}, {0},
};
const int source_lens[6] = {4, 2, 7, 3, 5, 1};

float det_value(unsigned *state, float scale)
{
    *state = *state * 1664525u + 1013904223u;
    return ((float)(int)((*state >> 9) % 2001u) - 1000.0f) * scale;
}
