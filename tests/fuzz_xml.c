/* fuzz_xml.c: fuzz target for the XML layer of .docx/.odt (formats/xml.c) alone. The
 * first byte picks the dialect (even: a .docx part, odd: an .odt part), the rest is the
 * part. Parsed with limits; every paragraph gets its own text back as translation; the
 * serialised part must parse again into the same paragraphs with the same texts.
 *
 * With clang: a libFuzzer target seeded with tests/fuzz/xml. Without: replays the files
 * named on the command line (fuzz_replay.h), which the unit suite does. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format_xml.h"
#include "fuzz_fixed_time.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    int docx = data[0] % 2 == 0;
    mt_format_options opt = mt_format_options_default();
    opt.max_nodes = 200000;
    long budget = opt.max_nodes;
    char err[512] = "";
    int code = 0;
    fmt_xml *x = fmt_xml_parse(data + 1, size - 1, docx, "part", &opt, &budget, &code, err,
                               sizeof err);
    if (!x) {
        if (code >= 0 || !err[0]) abort(); /* every failure says why */
        return 0;
    }
    long n = fmt_xml_count(x);
    char **texts = calloc((size_t)(n ? n : 1), sizeof *texts);
    if (!texts) abort();
    for (long i = 0; i < n; i++) {
        texts[i] = strdup(fmt_xml_text(x, i));
        if (!texts[i]) abort();
    }
    for (long i = 0; i < n; i++) fmt_xml_replace(x, i, texts[i]);
    unsigned char *out;
    size_t out_len;
    if (fmt_xml_dump(x, &out, &out_len, err, sizeof err) != 0) abort();
    fmt_xml_free(x);
    budget = opt.max_nodes;
    fmt_xml *y = fmt_xml_parse(out, out_len, docx, "part", &opt, &budget, &code, err, sizeof err);
    if (!y || fmt_xml_count(y) != n) abort(); /* our own output must read back */
    for (long i = 0; i < n; i++)
        if (strcmp(fmt_xml_text(y, i), texts[i]) != 0) abort();
    fmt_xml_free(y);
    free(out);
    for (long i = 0; i < n; i++) free(texts[i]);
    free(texts);
    return 0;
}

#include "fuzz_replay.h"
