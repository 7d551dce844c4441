/* tokenize_tool.c: line-oriented front end to the tokenizer, for scripts and tests.
 *
 *   tokenize-tool DIR encode   each stdin line (raw bytes, '\n' removed) -> a JSON array
 *                              of ids, or {"error": "..."}
 *   tokenize-tool DIR decode   each stdin line of space-separated ids -> a JSON string,
 *                              or {"error": "..."}
 *   tokenize-tool DIR langs    the language tokens of the source vocabulary, one a line
 *
 * Exits 2 on usage or load errors; per-line errors are reported on stdout.
 */
#include "tokenizer.h"

#include <jansson.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_error(const char *msg)
{
    json_t *o = json_pack("{s:s}", "error", msg);
    char *s = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL;
    puts(s != NULL ? s : "{\"error\": \"(unprintable)\"}");
    free(s);
    json_decref(o);
}

static int do_encode(const mt_tokenizer *tok, const char *line, size_t len)
{
    char err[512];
    int32_t small[256];
    int32_t *ids = small;
    int n = mt_tokenizer_encode(tok, line, len, ids, 256, err, sizeof err);
    if (n > 256) {
        ids = malloc((size_t)n * sizeof(*ids));
        if (ids == NULL)
            return -1;
        n = mt_tokenizer_encode(tok, line, len, ids, n, err, sizeof err);
    }
    if (n < 0) {
        print_error(err);
    } else {
        putchar('[');
        for (int i = 0; i < n; i++)
            printf(i ? ",%d" : "%d", (int)ids[i]);
        puts("]");
    }
    if (ids != small)
        free(ids);
    return 0;
}

static int do_decode(const mt_tokenizer *tok, const char *line)
{
    size_t cap_ids = 64, n = 0;
    int32_t *ids = malloc(cap_ids * sizeof(*ids));
    if (ids == NULL)
        return -1;
    const char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\r')
            p++;
        if (*p == '\0')
            break;
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno != 0 || v < INT32_MIN || v > INT32_MAX) {
            print_error("malformed id list");
            free(ids);
            return 0;
        }
        if (n == cap_ids) {
            int32_t *bigger = realloc(ids, 2 * cap_ids * sizeof(*ids));
            if (bigger == NULL) {
                free(ids);
                return -1;
            }
            ids = bigger;
            cap_ids *= 2;
        }
        ids[n++] = (int32_t)v;
        p = end;
    }
    char err[512], small[1024];
    int len = mt_tokenizer_decode(tok, ids, (int)n, small, sizeof small, err, sizeof err);
    char *text = small;
    if (len >= (int)sizeof small) {
        text = malloc((size_t)len + 1);
        if (text == NULL) {
            free(ids);
            return -1;
        }
        len = mt_tokenizer_decode(tok, ids, (int)n, text, (size_t)len + 1, err, sizeof err);
    }
    if (len < 0) {
        print_error(err);
    } else {
        json_t *s = json_stringn(text, (size_t)len);
        char *out = s != NULL ? json_dumps(s, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
        if (out != NULL)
            puts(out);
        else
            print_error("decoded text is not valid UTF-8");
        free(out);
        json_decref(s);
    }
    if (text != small)
        free(text);
    free(ids);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[2], "encode") != 0 && strcmp(argv[2], "decode") != 0 &&
                      strcmp(argv[2], "langs") != 0)) {
        fprintf(stderr, "usage: %s MODEL_DIR encode|decode|langs < lines\n", argv[0]);
        return 2;
    }
    char err[1024];
    mt_tokenizer *tok = mt_tokenizer_load(argv[1], err, sizeof err);
    if (tok == NULL) {
        fprintf(stderr, "%s: %s\n", argv[0], err);
        return 2;
    }
    int rc = 0;
    if (strcmp(argv[2], "langs") == 0) {
        for (int i = 0; i < mt_tokenizer_language_token_count(tok); i++)
            puts(mt_tokenizer_language_token(tok, i));
    } else {
        char *line = NULL;
        size_t linecap = 0;
        ssize_t got;
        while ((got = getline(&line, &linecap, stdin)) >= 0) {
            size_t len = (size_t)got;
            if (len > 0 && line[len - 1] == '\n')
                line[--len] = '\0';
            int r = argv[2][0] == 'e' ? do_encode(tok, line, len) : do_decode(tok, line);
            if (r != 0) {
                fprintf(stderr, "%s: out of memory\n", argv[0]);
                rc = 1;
                break;
            }
            fflush(stdout);
        }
        free(line);
    }
    mt_tokenizer_free(tok);
    return rc;
}
