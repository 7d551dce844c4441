/* detect.c: mt_detector over libexttextcat. See detect.h for the contract. */
#include "detect.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <textcat.h>

#ifndef MT_EXTTEXTCAT_DATADIR
#define MT_EXTTEXTCAT_DATADIR "/usr/share/libexttextcat"
#endif

/* libexttextcat gives up (UNKNOWN) beyond this many near-ties; constants.h MAXCANDIDATES. */
#define MT_DETECT_MAX_CANDIDATES 5

struct mt_detector {
    void *tc;               /* textcat handle */
    candidate_t *cands;     /* libexttextcat's output buffer for ClassifyFull */
    int n_langs;            /* fingerprints loaded */
    pthread_mutex_t lock;   /* textcat keeps per-call state in the handle */
};

/* "de--utf8" -> "de"; "sr-Latn--utf8" -> "sr-Latn". */
static void id_to_code(const char *id, char *code, size_t cap)
{
    const char *dash = strstr(id, "--");
    size_t n = dash ? (size_t)(dash - id) : strlen(id);
    if (n >= cap) n = cap - 1;
    memcpy(code, id, n);
    code[n] = '\0';
}

/* Copies the lines of the data dir's fpdb.conf whose language is in codes into out,
 * counting the languages found; marks found[i]. Returns -1 when fpdb.conf is unreadable. */
static int filter_conf(const char *conf_path, const char *const *codes, int n, int *found,
                       FILE *out, int *n_langs, char *err, size_t errlen)
{
    FILE *in = fopen(conf_path, "r");
    if (!in) {
        snprintf(err, errlen, "cannot read %s: %s (install libexttextcat-data)", conf_path,
                 strerror(errno));
        return -1;
    }
    char line[512];
    *n_langs = 0;
    while (fgets(line, sizeof line, in)) {
        char file[256], id[128], code[16];
        if (line[0] == '#' || sscanf(line, "%255s %127s", file, id) != 2) continue;
        id_to_code(id, code, sizeof code);
        int keep = (n == 0);
        for (int i = 0; i < n && !keep; i++)
            if (strcmp(codes[i], code) == 0) keep = found[i] = 1;
        if (keep) {
            fprintf(out, "%s %s\n", file, id);
            (*n_langs)++;
        }
    }
    fclose(in);
    return 0;
}

mt_detector *mt_detector_create(const char *const *codes, int n, const char *data_dir,
                                char *err, size_t errlen)
{
    if (!data_dir) data_dir = MT_EXTTEXTCAT_DATADIR;
    if (n < 0 || (n > 0 && !codes)) {
        snprintf(err, errlen, "detector: bad candidate list");
        return NULL;
    }
    char conf_path[1024], prefix[1024];
    snprintf(conf_path, sizeof conf_path, "%s/fpdb.conf", data_dir);
    snprintf(prefix, sizeof prefix, "%s/", data_dir);

    /* libexttextcat only reads a configuration file by name, so the restricted list is
     * written to an anonymous memory file and read back through /proc/self/fd: nothing
     * on disk, and no temporary directory to choose (a library reads no environment). */
    int fd = memfd_create("mt-detect-conf", MFD_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "detector: cannot create the language list in memory: %s", strerror(errno));
        return NULL;
    }
    int keep = fcntl(fd, F_DUPFD_CLOEXEC, 0); /* readable after the writer's stream is closed */
    char tmp[64];
    snprintf(tmp, sizeof tmp, "/proc/self/fd/%d", keep);
    FILE *out = keep >= 0 ? fdopen(fd, "w") : NULL;
    int *found = calloc(n > 0 ? (size_t)n : 1, sizeof *found);
    int n_langs = 0;
    mt_detector *det = NULL;
    if (!out || !found) {
        snprintf(err, errlen, "detector: out of memory");
        if (out) fclose(out); else close(fd); /* fd is out's until fdopen succeeds */
        goto done;
    }
    int rc = filter_conf(conf_path, codes, n, found, out, &n_langs, err, errlen);
    if (fclose(out) != 0 && rc == 0) {
        snprintf(err, errlen, "detector: cannot write %s", tmp);
        rc = -1;
    }
    if (rc != 0) goto done;
    for (int i = 0; i < n; i++) {
        if (!found[i]) {
            snprintf(err, errlen, "detector: no libexttextcat fingerprint for language '%s' "
                     "in %s", codes[i], conf_path);
            goto done;
        }
    }
    if (n_langs == 0) {
        snprintf(err, errlen, "detector: %s lists no languages", conf_path);
        goto done;
    }
    det = calloc(1, sizeof *det);
    if (!det) {
        snprintf(err, errlen, "detector: out of memory");
        goto done;
    }
    det->tc = special_textcat_Init(tmp, prefix);
    if (!det->tc) {
        snprintf(err, errlen, "detector: libexttextcat could not load the fingerprints "
                 "listed in %s from %s", conf_path, data_dir);
        free(det);
        det = NULL;
        goto done;
    }
    /* Short texts (3-5 words) are the common case in a translation box: classify them
     * rather than answering SHORT. */
    textcat_SetProperty(det->tc, TCPROP_MINIMUM_DOCUMENT_SIZE, 1);
    det->cands = textcat_GetClassifyFullOutput(det->tc);
    det->n_langs = n_langs;
    pthread_mutex_init(&det->lock, NULL);
done:
    if (keep >= 0) close(keep);
    free(found);
    return det;
}

void mt_detector_free(mt_detector *det)
{
    if (!det) return;
    textcat_ReleaseClassifyFullOutput(det->tc, det->cands);
    textcat_Done(det->tc);
    pthread_mutex_destroy(&det->lock);
    free(det);
}

int mt_detector_count(const mt_detector *det) { return det ? det->n_langs : 0; }

int mt_detect(mt_detector *det, const char *text, size_t len, mt_detect_result *results,
              int max)
{
    if (!det || (!text && len) || max < 0 || (max > 0 && !results)) return -1;
    if (len == 0 || max == 0) return 0;
    candidate_t local[MT_DETECT_MAX_CANDIDATES];
    pthread_mutex_lock(&det->lock);
    int n = textcat_ClassifyFull(det->tc, text, len, det->cands);
    if (n > MT_DETECT_MAX_CANDIDATES) n = MT_DETECT_MAX_CANDIDATES;
    for (int i = 0; i < n; i++) local[i] = det->cands[i];
    pthread_mutex_unlock(&det->lock);
    if (n <= 0) return 0; /* UNKNOWN (too many ties) or SHORT: no evidence */

    /* Candidates come sorted by out-of-place distance, smallest (best) first. */
    double w[MT_DETECT_MAX_CANDIDATES], sum = 0;
    double best = local[0].score > 0 ? local[0].score : 1;
    for (int i = 0; i < n; i++) {
        w[i] = local[i].score > 0 ? best / local[i].score : 1.0;
        sum += w[i];
    }
    int out = n < max ? n : max;
    for (int i = 0; i < out; i++) {
        id_to_code(local[i].name, results[i].code, sizeof results[i].code);
        results[i].confidence = 100.0 * w[i] / sum;
    }
    return out;
}
