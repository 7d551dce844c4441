/* fuzz_glossary.c: libFuzzer target for the glossary entry reader (include/mt/glossary.h).
 * Input: byte 0 picks TSV or CSV (bit 0), the rest is the text. Checks: an accepted
 * glossary has entries whose terms are non-empty valid UTF-8 without tabs, control
 * characters or surrounding spaces, its source terms are distinct, and its TSV, read
 * again, gives the same entries; the input masked with the glossary and unmasked
 * unchanged holds every target term. Under gcc this builds a replay tool: fuzz-glossary
 * FILE... (tests/fuzz_replay.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glossary.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_term(const char *t)
{
    size_t n = strlen(t);
    if (n == 0 || !mt_utf8_check(t, n, NULL) || t[0] == ' ' || t[n - 1] == ' ' || strchr(t, '\t') ||
        strchr(t, '\n') || strchr(t, '\r'))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    mt_glossary_format fmt = (data[0] & 1) ? MT_GLOSSARY_CSV : MT_GLOSSARY_TSV;
    char err[256];
    mt_glossary *g = NULL;
    if (mt_glossary_parse((const char *)data + 1, size - 1, fmt, "en", "de", &g, err, sizeof err)) {
        if (g || !err[0]) abort();
        return 0;
    }
    int n = mt_glossary_count(g);
    if (n <= 0) abort();
    for (int i = 0; i < n; i++) {
        check_term(mt_glossary_source(g, i));
        check_term(mt_glossary_target(g, i));
        for (int j = 0; j < i && n < 200; j++)
            if (strcmp(mt_glossary_source(g, i), mt_glossary_source(g, j)) == 0) abort();
    }
    char *tsv = mt_glossary_tsv(g);
    if (tsv) {
        mt_glossary *h = NULL;
        if (mt_glossary_parse(tsv, strlen(tsv), MT_GLOSSARY_TSV, NULL, NULL, &h, err, sizeof err)) abort();
        if (mt_glossary_count(h) != n) abort();
        for (int i = 0; i < n; i++)
            if (strcmp(mt_glossary_source(g, i), mt_glossary_source(h, i)) ||
                strcmp(mt_glossary_target(g, i), mt_glossary_target(h, i)))
                abort();
        mt_glossary_free(h);
        free(tsv);
    }
    /* enforcement: the input itself as a text (plain and markup) masked with the glossary
     * and "translated" unchanged: every target term must come back */
    for (int markup = 0; markup < 2; markup++) {
        mt_glossary_masked *m = mt_glossary_mask(g, (const char *)data + 1, size - 1, markup);
        if (!m) abort();
        char *u = mt_glossary_unmask(m, mt_glossary_masked_text(m));
        if (!u || !mt_glossary_masked_present(m, u)) abort();
        free(u);
        mt_glossary_masked_free(m);
    }
    mt_glossary_free(g);
    return 0;
}

#include "fuzz_replay.h"
