/* fuzz_request.c: fuzz target for mt-server's request parser: the Content-Type header,
 * JSON / form-encoded / multipart body decoding, the field checks (server/request.c)
 * and language-pair resolution (server/langs.c). The first input byte picks the part:
 * & 3 = 0 JSON, 1 form, 2 multipart (as /translate decodes them), 3 the Content-Type
 * header; 0x06 (multipart with bit 2) is the raw multipart reader mt_multipart_parse
 * (/translate_file's uploads), with invariants on every part: all pointers inside the
 * body, the data ending right before a delimiter. Seeds: tests/fuzz/request/.
 *
 * With clang: -fsanitize=fuzzer,address -DMT_LIBFUZZER (libFuzzer's main). Without: the
 * program replays the files named on the command line (or stdin) once each. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "langs.h"
#include "request.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_request(const mt_request *r, const mt_request_limits *lim)
{
    if (r->n_texts < 0 || r->n_texts > lim->max_texts) abort();
    for (int i = 0; i < r->n_texts; i++) {
        if (strlen(r->texts[i]) != r->lens[i]) abort();
        size_t bad;
        if (!mt_utf8_check(r->texts[i], r->lens[i], &bad)) abort();
        if (mt_utf8_chars(r->texts[i], r->lens[i]) > (size_t)lim->max_text_chars) abort();
    }
    const double *v = r->decoding.v;
    if ((r->decoding.set & (1u << MT_OPT_BEAM_SIZE)) && (v[MT_OPT_BEAM_SIZE] < 1 || v[MT_OPT_BEAM_SIZE] > lim->max_beam_size))
        abort();
    if ((r->decoding.set & (1u << MT_OPT_N_BEST)) && (v[MT_OPT_N_BEST] < 1 || v[MT_OPT_N_BEST] > lim->max_beam_size))
        abort();
}

typedef struct {
    const char *body;
    size_t len;
    int parts;
} mp_check;

static int inside(const mp_check *m, const char *p, size_t n)
{
    return p >= m->body && n <= m->len && (size_t)(p - m->body) <= m->len - n;
}

static int check_part(void *user, const mt_multipart_part *p, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    mp_check *m = user;
    if (!p->name || !inside(m, p->name, p->name_len) || !inside(m, p->data, p->len)) abort();
    if (p->has_filename && !inside(m, p->filename, p->filename_len)) abort();
    if (!p->has_filename && p->filename) abort();
    if (p->content_type && !inside(m, p->content_type, p->content_type_len)) abort();
    /* the data ends where "\r\n--XyZ" starts */
    if (!inside(m, p->data + p->len, 7) || memcmp(p->data + p->len, "\r\n--XyZ", 7) != 0) abort();
    m->parts++;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    if ((data[0] & 7) == 6) {
        char err[512];
        mp_check m = {(const char *)data + 1, size - 1, 0};
        int st = mt_multipart_parse("XyZ", m.body, m.len, check_part, &m, err, sizeof err);
        if (st != 0 && st != 400) abort();
        if (st && !err[0]) abort();
        return 0;
    }
    static const mt_content_type types[] = {MT_CT_JSON, MT_CT_FORM, MT_CT_MULTIPART};
    char err[512], boundary[80];
    const char *body = (const char *)data + 1;
    size_t len = size - 1;
    if ((data[0] & 3) == 3) {
        char *header = malloc(len + 1);
        if (!header) return 0;
        memcpy(header, body, len);
        header[len] = '\0';
        mt_content_type t = mt_request_content_type(header, boundary, sizeof boundary, err, sizeof err);
        if (t == MT_CT_MULTIPART && (!boundary[0] || strlen(boundary) > 70)) abort();
        free(header);
        return 0;
    }
    mt_content_type type = types[data[0] & 3];
    json_t *obj = NULL;
    int from_form = 0;
    int st = mt_request_decode(type, "XyZ", body, len, &obj, &from_form, err, sizeof err);
    if (st) {
        if (obj || (st != 400 && st != 415 && st != 500)) abort();
        return 0;
    }
    if (!json_is_object(obj)) abort();
    (void)mt_request_api_key(obj);
    mt_request_limits lim = {8, 64, 8};
    mt_request req;
    st = mt_request_parse(obj, from_form, &lim, &req, err, sizeof err);
    if (st == 0) {
        check_request(&req, &lim);
        mt_langs *l = mt_langs_create();
        if (l) {
            mt_langs_add(l, "en", "de", 0, 0);
            mt_langs_add(l, "de", "en", 1, 0);
            mt_langs_add(l, "fr", "de", 2, 1);
            int detected;
            int r = mt_langs_resolve(l, req.source, req.target, &detected, err, sizeof err);
            if (r >= mt_langs_count(l)) abort();
            json_t *j = mt_langs_json(l);
            json_decref(j);
            mt_langs_free(l);
        }
        mt_request_clear(&req);
    } else if (st != 400 && st != 413 && st != 500) {
        abort();
    }
    json_decref(obj);
    return 0;
}

#include "fuzz_replay.h"
