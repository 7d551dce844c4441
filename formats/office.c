/* office.c: .docx and .odt: the zip layer (zip.c) gives the XML parts, the XML layer
 * (xml.c) their paragraphs; translations go back into the parts, the parts back into
 * the zip. See formats.h for what is translated. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format_int.h"
#include "format_xml.h"
#include "format_zip.h"

/* Is entry `name` one we translate? */
static int wanted_part(mt_file_format fmt, const char *name)
{
    if (fmt == MT_FILE_ODT) return strcmp(name, "content.xml") == 0;
    if (strcmp(name, "word/document.xml") == 0 || strcmp(name, "word/footnotes.xml") == 0 ||
        strcmp(name, "word/endnotes.xml") == 0)
        return 1;
    const char *base = name + 5;
    if (strncmp(name, "word/", 5) != 0 || strchr(base, '/')) return 0;
    size_t n = strlen(base);
    return n > 4 && strcmp(base + n - 4, ".xml") == 0 &&
           (strncmp(base, "header", 6) == 0 || strncmp(base, "footer", 6) == 0);
}

typedef struct {
    long index; /* zip entry */
    fmt_xml *xml;
} part;

int fmt_do_office(mt_file_format fmt, const unsigned char *data, size_t len,
                  const mt_format_options *opt, mt_format_translate_fn tr,
                  mt_format_progress_fn pr, void *user, unsigned char **out, size_t *out_len,
                  char *err, size_t errlen)
{
    const char *fname = mt_format_name(fmt);
    int rc = MT_FORMAT_FAILED;
    fmt_zip *z = fmt_zip_open(data, len, opt, fname, &rc, err, errlen);
    if (!z) return rc;
    part *parts = NULL;
    int n_parts = 0;
    fmt_units u = {0};
    long n_entries = fmt_zip_count(z), nodes_left = opt->max_nodes;
    parts = calloc((size_t)(n_entries > 0 ? n_entries : 1), sizeof *parts);
    if (!parts) {
        rc = fmt_fail(MT_FORMAT_FAILED, err, errlen, "out of memory");
        goto done;
    }
    const char *main_part = fmt == MT_FILE_ODT ? "content.xml" : "word/document.xml";
    int have_main = 0;
    for (long i = 0; i < n_entries; i++) {
        const char *name = fmt_zip_name(z, i);
        if (!wanted_part(fmt, name)) continue;
        if (strcmp(name, main_part) == 0) have_main = 1;
        char where[300];
        snprintf(where, sizeof where, "%s: %s", fname, name);
        unsigned char *xml;
        size_t xlen;
        if ((rc = fmt_zip_read(z, i, &xml, &xlen, err, errlen)) != 0) goto done;
        part *pt = &parts[n_parts++];
        pt->index = i;
        pt->xml = fmt_xml_parse(xml, xlen, fmt == MT_FILE_DOCX, where, opt, &nodes_left, &rc,
                                err, errlen);
        free(xml);
        if (!pt->xml) goto done;
        for (long k = 0; k < fmt_xml_count(pt->xml); k++) {
            const char *t = fmt_xml_text(pt->xml, k);
            if ((rc = fmt_units_add(&u, t, strlen(t), opt, err, errlen)) != 0) goto done;
        }
    }
    if (!have_main) {
        rc = fmt_fail(MT_FORMAT_INVALID, err, errlen,
                      "%s: the archive has no %s (not a %s document)", fname, main_part, fname);
        goto done;
    }
    if ((rc = fmt_units_translate(&u, 0, opt, tr, pr, user, err, errlen)) != 0) goto done;
    long k = 0;
    for (int i = 0; i < n_parts; i++) {
        part *pt = &parts[i];
        for (long j = 0; j < fmt_xml_count(pt->xml); j++)
            fmt_xml_replace(pt->xml, j, u.out[k++]);
        unsigned char *xml;
        size_t xlen;
        if ((rc = fmt_xml_dump(pt->xml, &xml, &xlen, err, errlen)) != 0) goto done;
        if ((rc = fmt_zip_replace(z, pt->index, xml, xlen, err, errlen)) != 0) goto done;
        /* The tree is not needed any more: free it before the archive is written. */
        fmt_xml_free(pt->xml);
        pt->xml = NULL;
    }
    rc = fmt_zip_write(z, out, out_len, err, errlen);
done:
    fmt_zip_free(z);
    for (int i = 0; i < n_parts; i++) fmt_xml_free(parts[i].xml);
    free(parts);
    fmt_units_free(&u);
    return rc;
}
