/* mt_file.c: mt-translate FILE: a .txt, .html, .srt, .docx or .odt file
 * translated through formats/ (the same code as the server's /translate_file) into an
 * output file, with a progress bar on stderr when stderr is a terminal. */
#include "mt_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats.h"

typedef struct {
    mt_service *svc;
    const mt_service_request *rq; /* the command line's request (its texts unset) */
    int bar;          /* stderr is a terminal */
    const char *name; /* shown before the bar */
} file_ctx;

static int translate_units(void *user, const char *const *texts, const size_t *lens, int n,
                           int html, char **out, char *err, size_t errlen)
{
    file_ctx *fc = user;
    mt_service_request rq = *fc->rq;
    rq.n = n;
    rq.texts = texts;
    rq.lens = lens;
    rq.input = html ? MT_FORMAT_HTML : MT_FORMAT_TEXT;
    return mt_service_translate_texts(fc->svc, &rq, out, err, errlen) == MT_SERVICE_OK ? 0 : -1;
}

/* "\r<name> [#####.....]  42% (21/50)" redrawn in place. */
static void progress(void *user, long done, long total)
{
    file_ctx *fc = user;
    if (!fc->bar || total <= 0) return;
    enum { WIDTH = 30 };
    int fill = (int)(WIDTH * done / total);
    char bar[WIDTH + 1];
    for (int i = 0; i < WIDTH; i++) bar[i] = i < fill ? '#' : '.';
    bar[WIDTH] = '\0';
    fprintf(stderr, "\r%s [%s] %3ld%% (%ld/%ld)", fc->name, bar, 100 * done / total, done, total);
    if (done == total) fputc('\n', stderr);
    fflush(stderr);
}

/* in.docx -> in.de.docx (the target code before the extension), next to the input. */
static char *default_output(const char *in, const char *target)
{
    const char *slash = strrchr(in, '/');
    const char *dot = strrchr(in, '.');
    if (!dot || (slash && dot < slash) || dot == (slash ? slash + 1 : in)) dot = in + strlen(in);
    size_t n = strlen(in) + strlen(target) + 2;
    char *out = malloc(n);
    if (out) snprintf(out, n, "%.*s.%s%s", (int)(dot - in), in, target, dot);
    return out;
}

int mt_cli_translate_file(mt_service *svc, const mt_service_request *rq, const char *in,
                          const char *out_path, const char *target)
{
    FILE *f = fopen(in, "rb");
    if (!f) {
        fprintf(stderr, "mt-translate: %s: %s\n", in, strerror(errno));
        return 1;
    }
    mt_format_options fo = mt_format_options_default();
    unsigned char *data = malloc(fo.max_input_bytes + 1);
    size_t len = data ? fread(data, 1, fo.max_input_bytes + 1, f) : 0;
    int bad = !data || ferror(f);
    fclose(f);
    if (bad || len > fo.max_input_bytes) {
        fprintf(stderr, "mt-translate: %s: %s\n", in,
                bad ? "cannot read the file" : "file too large (limit 10 MiB)");
        free(data);
        return 1;
    }
    mt_file_format fmt = mt_format_detect(in, data, len);
    if (fmt == MT_FILE_UNKNOWN) {
        fprintf(stderr, "mt-translate: %s: unsupported file type (supported: %s)\n", in,
                mt_format_extensions());
        free(data);
        return 1;
    }
    mt_format_global_init();
    file_ctx fc = {svc, rq, isatty(2), strrchr(in, '/') ? strrchr(in, '/') + 1 : in};
    unsigned char *out = NULL;
    size_t out_len = 0;
    char err[512];
    /* The document is read in a child process with limits, as in the server, so a file
     * that crashes or exhausts a reader ends with a message, not a core dump. This process
     * runs no libxml2 or libzip code of its own (its threads are the translation
     * workers), so forking the helper here cannot inherit a lock it needs. */
    mt_format_isolator *iso = mt_format_isolator_create(err, sizeof err);
    int rc = iso ? mt_format_translate_isolated(iso, fmt, data, len, &fo, translate_units, progress,
                                                &fc, &out, &out_len, err, sizeof err)
                 : MT_FORMAT_FAILED;
    mt_format_isolator_free(iso);
    free(data); /* borrowed by mt_format_translate_isolated, never freed there (formats.h) */
    if (rc) {
        if (fc.bar) fputc('\n', stderr);
        fprintf(stderr, "mt-translate: %s: %s\n", in, err);
        return 1;
    }
    char *made = out_path ? NULL : default_output(in, target);
    const char *path = out_path ? out_path : made;
    FILE *o = path ? fopen(path, "wb") : NULL;
    int ok = o && fwrite(out, 1, out_len, o) == out_len;
    if (o && fclose(o) != 0) ok = 0;
    if (!ok) fprintf(stderr, "mt-translate: cannot write %s\n", path ? path : "the output");
    else fprintf(stderr, "mt-translate: wrote %s\n", path);
    free(out);
    free(made);
    return ok ? 0 : 1;
}
