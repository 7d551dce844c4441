/* detect_accuracy.c: accuracy of mt_detect on held-apart Multi30k test_2016_flickr
 * sentences (en, de, fr; never used to build libexttextcat's fingerprints), whole and
 * cut to their first 3 and 5 words, with every language libexttextcat knows and with the
 * candidates restricted to {en, de, fr}. Prints a table.
 *
 *   build/tests/detect-accuracy ../shared/data/multi30k
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detect.h"

enum { N_LANGS = 3, N_CUTS = 3, N_DETS = 2 };
static const char *const langs[N_LANGS] = {"en", "de", "fr"};
static const int cuts[N_CUTS] = {0, 5, 3}; /* 0: whole sentence */

/* Length of the first `words` space-separated words of s (0: all of it). */
static size_t prefix_len(const char *s, int words)
{
    size_t n = strlen(s);
    if (words == 0) return n;
    int seen = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ' && i > 0 && s[i - 1] != ' ' && ++seen == words) return i;
    }
    return n;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s MULTI30K_DIR\n", argv[0]);
        return 2;
    }
    char err[512];
    mt_detector *dets[N_DETS];
    dets[0] = mt_detector_create(NULL, 0, NULL, err, sizeof err);
    dets[1] = dets[0] ? mt_detector_create(langs, N_LANGS, NULL, err, sizeof err) : NULL;
    if (!dets[0] || !dets[1]) {
        fprintf(stderr, "detect-accuracy: %s\n", err);
        return 1;
    }
    long right[N_LANGS][N_CUTS][N_DETS] = {{{0}}}, total[N_LANGS] = {0};
    for (int l = 0; l < N_LANGS; l++) {
        char cmd[2048];
        snprintf(cmd, sizeof cmd, "gzip -dc '%s/test_2016_flickr.%s.gz'", argv[1], langs[l]);
        FILE *f = popen(cmd, "r");
        if (!f) {
            perror("popen");
            return 1;
        }
        char line[4096];
        while (fgets(line, sizeof line, f)) {
            line[strcspn(line, "\r\n")] = '\0';
            if (!line[0]) continue;
            total[l]++;
            for (int c = 0; c < N_CUTS; c++) {
                size_t len = prefix_len(line, cuts[c]);
                for (int d = 0; d < N_DETS; d++) {
                    mt_detect_result r[1];
                    if (mt_detect(dets[d], line, len, r, 1) == 1 &&
                        strcmp(r[0].code, langs[l]) == 0)
                        right[l][c][d]++;
                }
            }
        }
        if (pclose(f) != 0 || total[l] == 0) {
            fprintf(stderr, "detect-accuracy: cannot read %s/test_2016_flickr.%s.gz\n",
                    argv[1], langs[l]);
            return 1;
        }
    }
    printf("libexttextcat accuracy (top answer), Multi30k test_2016_flickr, %d fingerprints "
           "vs {en,de,fr}\n", mt_detector_count(dets[0]));
    printf("%-6s %-14s %8s %14s %14s\n", "lang", "text", "n", "all languages", "{en,de,fr}");
    for (int l = 0; l <= N_LANGS; l++) {
        for (int c = 0; c < N_CUTS; c++) {
            long n = 0, r0 = 0, r1 = 0;
            for (int k = 0; k < N_LANGS; k++) {
                if (l < N_LANGS && k != l) continue;
                n += total[k];
                r0 += right[k][c][0];
                r1 += right[k][c][1];
            }
            char what[32];
            if (cuts[c]) snprintf(what, sizeof what, "first %d words", cuts[c]);
            else snprintf(what, sizeof what, "sentence");
            printf("%-6s %-14s %8ld %13.1f%% %13.1f%%\n", l < N_LANGS ? langs[l] : "all",
                   what, n, 100.0 * r0 / n, 100.0 * r1 / n);
        }
    }
    mt_detector_free(dets[0]);
    mt_detector_free(dets[1]);
    return 0;
}
