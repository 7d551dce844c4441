/* test_formats.c: file translation with a fake translate callback (ASCII uppercasing,
 * so every expected output is exact): .txt, .srt, .html, and .docx/.odt written here
 * with libzip, checked byte for byte (untouched entries, styles, entry order and
 * compression kept); malformed files (not a zip, missing parts, invalid XML, zip bombs,
 * lying sizes, broken SubRip, invalid UTF-8) give errors that say what and where. */
#include <check.h>

#include "check_main.h"
#include <ctype.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zip.h>
#include <zlib.h>

#include "formats.h"

static char err[512];

typedef struct {
    int calls, units, html, fail;
    long last_done, last_total, progress_calls;
    void *user; /* for the extracted callback */
} fake;

static int upper(void *user, const char *const *texts, const size_t *lens, int n, int html,
                 char **out, char *e, size_t elen)
{
    fake *f = user;
    f->calls++;
    f->html = html;
    if (f->fail) {
        snprintf(e, elen, "model exploded");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        out[i] = malloc(lens[i] + 1);
        for (size_t j = 0; j < lens[i]; j++) out[i][j] = (char)toupper((unsigned char)texts[i][j]);
        out[i][lens[i]] = '\0';
        f->units++;
    }
    return 0;
}

static void progress(void *user, long done, long total)
{
    fake *f = user;
    ck_assert(done <= total);
    ck_assert(done >= f->last_done);
    f->last_done = done;
    f->last_total = total;
    f->progress_calls++;
}

/* Runs a translation; returns rc, output in *out (NUL-terminated for text formats). */
static int run(mt_file_format fmt, const void *data, size_t len, const mt_format_options *opt,
               fake *f, unsigned char **out, size_t *out_len)
{
    err[0] = '\0';
    return mt_format_translate(fmt, data, len, opt, upper, progress, f, out, out_len, err,
                               sizeof err);
}

static void expect_text(mt_file_format fmt, const char *in, const char *want)
{
    fake f = {0};
    unsigned char *out;
    size_t n;
    ck_assert_msg(run(fmt, in, strlen(in), NULL, &f, &out, &n) == 0, "%s", err);
    ck_assert_uint_eq(n, strlen(want));
    ck_assert_str_eq((char *)out, want);
    free(out);
}

/* Expects the status `code` (an mt_format_status) and a message containing want. */
static void expect_code(mt_file_format fmt, const void *in, size_t len,
                        const mt_format_options *opt, int code, const char *want)
{
    fake f = {0};
    unsigned char *out = (unsigned char *)"x";
    size_t n;
    int rc = run(fmt, in, len, opt, &f, &out, &n);
    ck_assert_msg(rc == code, "status %d, want %d (%s)", rc, code, err);
    ck_assert(out == NULL);
    ck_assert_msg(strstr(err, want) != NULL, "error '%s' lacks '%s'", err, want);
    ck_assert_int_eq(f.calls, 0); /* refused before anything was translated */
}

static void expect_error(mt_file_format fmt, const void *in, size_t len,
                         const mt_format_options *opt, const char *want)
{
    fake f = {0};
    unsigned char *out = (unsigned char *)"x";
    size_t n;
    ck_assert_int_lt(run(fmt, in, len, opt, &f, &out, &n), 0);
    ck_assert(out == NULL);
    ck_assert_msg(strstr(err, want) != NULL, "error '%s' lacks '%s'", err, want);
}

/* ---- zip helpers ---------------------------------------------------------------------- */

typedef struct {
    const char *name, *data;
    size_t len; /* 0: strlen(data) */
    int store;  /* 1: stored uncompressed */
} entry;

/* Every entry of a test archive is dated 2001-01-01 (an even second, as DOS times are). */
#define FIXED_MTIME ((time_t)978307200)

static unsigned char *make_zip(const entry *e, int n, size_t *len)
{
    char path[] = "/tmp/mt_test_formats_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    int zerr;
    zip_t *za = zip_open(path, ZIP_TRUNCATE, &zerr);
    ck_assert(za != NULL);
    for (int i = 0; i < n; i++) {
        size_t l = e[i].len ? e[i].len : strlen(e[i].data);
        zip_source_t *s = zip_source_buffer(za, e[i].data, l, 0);
        zip_int64_t idx = zip_file_add(za, e[i].name, s, 0);
        ck_assert(idx >= 0);
        zip_set_file_compression(za, (zip_uint64_t)idx, e[i].store ? ZIP_CM_STORE : ZIP_CM_DEFLATE,
                                 0);
        zip_file_set_mtime(za, (zip_uint64_t)idx, FIXED_MTIME, 0);
    }
    ck_assert_int_eq(zip_close(za), 0);
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    unsigned char *d = malloc(*len);
    ck_assert_uint_eq(fread(d, 1, *len, f), *len);
    fclose(f);
    unlink(path);
    return d;
}

typedef struct {
    zip_t *za;
    zip_source_t *src;
} zipr;

static zipr open_zip(const unsigned char *d, size_t len)
{
    zip_error_t ze;
    zip_error_init(&ze);
    zipr z;
    z.src = zip_source_buffer_create(d, len, 0, &ze);
    z.za = zip_open_from_source(z.src, ZIP_CHECKCONS | ZIP_RDONLY, &ze);
    ck_assert_msg(z.za != NULL, "output is not a zip: %s", zip_error_strerror(&ze));
    zip_error_fini(&ze);
    return z;
}

static char *entry_text(zip_t *za, const char *name)
{
    zip_stat_t st;
    ck_assert_msg(zip_stat(za, name, 0, &st) == 0, "no entry %s", name);
    char *d = malloc(st.size + 1);
    zip_file_t *zf = zip_fopen(za, name, 0);
    ck_assert(zf != NULL);
    ck_assert(zip_fread(zf, d, st.size) == (zip_int64_t)st.size);
    zip_fclose(zf);
    d[st.size] = '\0';
    return d;
}

/* ---- raw zips: every byte written here, so no library reorders entries, dedups names
 * or refuses to write what an attacker would ------------------------------------------- */

typedef struct {
    const char *name;
    const void *data;
    size_t len;            /* 0: strlen(data) */
    int deflate;           /* 1: deflated, else stored */
    int encrypted;         /* sets the "encrypted" flag bit */
    long long lie_size;    /* > 0: uncompressed size written in the headers instead */
} rentry;

typedef struct {
    unsigned char *p;
    size_t n, cap;
} rbuf;

static void rput(rbuf *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 1024;
        b->p = realloc(b->p, b->cap);
        ck_assert(b->p != NULL);
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void rput16(rbuf *b, unsigned v)
{
    unsigned char x[2] = {(unsigned char)v, (unsigned char)(v >> 8)};
    rput(b, x, 2);
}

static void rput32(rbuf *b, unsigned long v)
{
    unsigned char x[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    rput(b, x, 4);
}

static unsigned char *raw_deflate(const void *d, size_t len, size_t *out_len)
{
    z_stream zs = {0};
    ck_assert_int_eq(deflateInit2(&zs, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = deflateBound(&zs, (uLong)len);
    unsigned char *out = malloc(cap);
    zs.next_in = (Bytef *)d;
    zs.avail_in = (uInt)len;
    zs.next_out = out;
    zs.avail_out = (uInt)cap;
    ck_assert_int_eq(deflate(&zs, Z_FINISH), Z_STREAM_END);
    *out_len = zs.total_out;
    deflateEnd(&zs);
    return out;
}

/* A zip of the entries in this order: local headers, data, central directory. */
static unsigned char *raw_zip(const rentry *e, int n, size_t *len)
{
    rbuf b = {0}, cd = {0};
    for (int i = 0; i < n; i++) {
        size_t l = e[i].len ? e[i].len : strlen(e[i].data), clen = l;
        unsigned long crc = crc32(0L, e[i].data, (uInt)l);
        unsigned char *packed = e[i].deflate ? raw_deflate(e[i].data, l, &clen) : NULL;
        unsigned long usize = e[i].lie_size > 0 ? (unsigned long)e[i].lie_size : (unsigned long)l;
        unsigned flags = e[i].encrypted ? 1 : 0, method = e[i].deflate ? 8 : 0;
        size_t nlen = strlen(e[i].name), offset = b.n;
        rput32(&b, 0x04034b50), rput16(&b, 20), rput16(&b, flags), rput16(&b, method);
        rput16(&b, 0), rput16(&b, 0x21), rput32(&b, crc), rput32(&b, clen), rput32(&b, usize);
        rput16(&b, (unsigned)nlen), rput16(&b, 0), rput(&b, e[i].name, nlen);
        rput(&b, packed ? packed : e[i].data, clen);
        free(packed);
        rput32(&cd, 0x02014b50), rput16(&cd, 20), rput16(&cd, 20), rput16(&cd, flags);
        rput16(&cd, method), rput16(&cd, 0), rput16(&cd, 0x21), rput32(&cd, crc);
        rput32(&cd, clen), rput32(&cd, usize), rput16(&cd, (unsigned)nlen), rput16(&cd, 0);
        rput16(&cd, 0), rput16(&cd, 0), rput16(&cd, 0), rput32(&cd, 0), rput32(&cd, offset);
        rput(&cd, e[i].name, nlen);
    }
    size_t cd_at = b.n;
    rput(&b, cd.p, cd.n);
    rput32(&b, 0x06054b50), rput16(&b, 0), rput16(&b, 0), rput16(&b, (unsigned)n);
    rput16(&b, (unsigned)n), rput32(&b, cd.n), rput32(&b, cd_at), rput16(&b, 0);
    free(cd.p);
    *len = b.n;
    return b.p;
}

/* Runs a translation of in[0..len) and checks that in was neither changed nor freed
 * (the caller frees it after) and that the output is a zip with `part` translated. */
static void expect_translated_zip(mt_file_format fmt, unsigned char *in, size_t len,
                                  const char *part, const char *want)
{
    unsigned char *copy = malloc(len), *out;
    memcpy(copy, in, len);
    fake f = {0};
    size_t n;
    ck_assert_msg(run(fmt, in, len, NULL, &f, &out, &n) == 0, "%s", err);
    ck_assert(memcmp(copy, in, len) == 0);
    zipr zo = open_zip(out, n);
    char *d = entry_text(zo.za, part);
    ck_assert_msg(strstr(d, want) != NULL, "%s is:\n%s", part, d);
    free(d);
    zip_close(zo.za);
    free(out);
    free(copy);
    free(in);
}

/* ---- text formats --------------------------------------------------------------------- */

START_TEST(test_txt)
{
    expect_text(MT_FILE_TXT, "Hello world\r\n\n   \nsecond line", "HELLO WORLD\r\n\n   \nSECOND LINE");
    expect_text(MT_FILE_TXT, "", "");
    expect_text(MT_FILE_TXT, "é ok\n", "é OK\n");
    /* Batches of 2 units: 5 lines -> 3 calls, progress up to 5/5. */
    fake f = {0};
    mt_format_options o = mt_format_options_default();
    o.batch_units = 2;
    unsigned char *out;
    size_t n;
    const char *in = "a\nb\nc\nd\ne\n";
    ck_assert_int_eq(run(MT_FILE_TXT, in, strlen(in), &o, &f, &out, &n), 0);
    ck_assert_str_eq((char *)out, "A\nB\nC\nD\nE\n");
    ck_assert_int_eq(f.calls, 3);
    ck_assert_int_eq(f.html, 0);
    ck_assert_int_eq(f.last_done, 5);
    ck_assert_int_eq(f.last_total, 5);
    ck_assert_int_eq(f.progress_calls, 4); /* 0/5, 2/5, 4/5, 5/5 */
    free(out);
}
END_TEST

START_TEST(test_srt)
{
    /* Numbers, timings, blank lines and CRLF endings kept byte for byte. */
    expect_text(MT_FILE_SRT,
                "\xef\xbb\xbf" "1\r\n00:00:01,000 --> 00:00:02,500\r\nHello there\r\n\r\n"
                "2\r\n00:00:03,000 --> 00:00:04,000 X1:10\r\nTwo lines\r\nof text\r\n\r\n",
                "\xef\xbb\xbf" "1\r\n00:00:01,000 --> 00:00:02,500\r\nHELLO THERE\r\n\r\n"
                "2\r\n00:00:03,000 --> 00:00:04,000 X1:10\r\nTWO LINES\r\nOF TEXT\r\n\r\n");
    expect_text(MT_FILE_SRT, "1\n00:00:01,000 --> 00:00:02,000\nabc\n\n\n3\n00:00:05,000 --> "
                "00:00:06,000\n\n4\n00:00:07,000 --> 00:00:08,000\nend",
                "1\n00:00:01,000 --> 00:00:02,000\nABC\n\n\n3\n00:00:05,000 --> "
                "00:00:06,000\n\n4\n00:00:07,000 --> 00:00:08,000\nEND");
    const char *bad = "1\n00:00:01,000 --> 00:00:02,000\nok\n\nx2\n00:00:03,000 --> 1\nno\n";
    expect_error(MT_FILE_SRT, bad, strlen(bad), NULL, "srt: line 5: expected a cue number");
    bad = "1\n00:00:01,000 00:00:02,000\nok\n";
    expect_error(MT_FILE_SRT, bad, strlen(bad), NULL, "srt: line 2: expected a timing line");
}
END_TEST

START_TEST(test_html)
{
    fake f = {0};
    unsigned char *out;
    size_t n;
    const char *in = "<html><body><p>Hello <b>world</b></p></body></html>";
    ck_assert_int_eq(run(MT_FILE_HTML, in, strlen(in), NULL, &f, &out, &n), 0);
    ck_assert_str_eq((char *)out, "<HTML><BODY><P>HELLO <B>WORLD</B></P></BODY></HTML>");
    ck_assert_int_eq(f.html, 1);
    ck_assert_int_eq(f.calls, 1);
    free(out);
}
END_TEST

START_TEST(test_errors)
{
    expect_error(MT_FILE_TXT, "ok\n\xff\xfe", 5, NULL, "invalid byte 0xff at offset 3");
    expect_error(MT_FILE_TXT, "ok\n\0x", 5, NULL, "NUL byte at offset 3");
    mt_format_options o = mt_format_options_default();
    o.max_input_bytes = 4;
    expect_error(MT_FILE_TXT, "hello", 5, &o, "5 bytes, more than the limit of 4");
    o = mt_format_options_default();
    o.max_units = 2;
    expect_error(MT_FILE_TXT, "a\nb\nc\n", 6, &o, "more than 2 translatable units");
    expect_error(MT_FILE_UNKNOWN, "a", 1, NULL, "unsupported file format");
    /* The translator's error is passed on, naming the unit. */
    fake f = {.fail = 1};
    unsigned char *out;
    size_t n;
    ck_assert_int_eq(run(MT_FILE_TXT, "a\n", 2, NULL, &f, &out, &n), MT_FORMAT_FAILED);
    ck_assert_msg(strstr(err, "unit 1: model exploded") != NULL, "%s", err);
}
END_TEST

START_TEST(test_detect)
{
    ck_assert_int_eq(mt_format_detect("a.TXT", NULL, 0), MT_FILE_TXT);
    ck_assert_int_eq(mt_format_detect("a.htm", NULL, 0), MT_FILE_HTML);
    ck_assert_int_eq(mt_format_detect("x/y.srt", NULL, 0), MT_FILE_SRT);
    ck_assert_int_eq(mt_format_detect("r.docx", NULL, 0), MT_FILE_DOCX);
    ck_assert_int_eq(mt_format_detect("r.odt", NULL, 0), MT_FILE_ODT);
    const char *html = "<!DOCTYPE html><html></html>";
    ck_assert_int_eq(mt_format_detect("upload", (const unsigned char *)html, strlen(html)),
                     MT_FILE_HTML);
    const char *srt = "1\n00:00:01,000 --> 00:00:02,000\nhi\n";
    ck_assert_int_eq(mt_format_detect(NULL, (const unsigned char *)srt, strlen(srt)),
                     MT_FILE_SRT);
    ck_assert_int_eq(mt_format_detect("notes", (const unsigned char *)"just text", 9),
                     MT_FILE_TXT);
    ck_assert_int_eq(mt_format_detect("bin", (const unsigned char *)"a\0b", 3),
                     MT_FILE_UNKNOWN);
    entry odt[] = {{"mimetype", "application/vnd.oasis.opendocument.text", 0, 1},
                   {"content.xml", "<x/>", 0, 0}};
    size_t len;
    unsigned char *z = make_zip(odt, 2, &len);
    ck_assert_int_eq(mt_format_detect("upload.bin", z, len), MT_FILE_ODT);
    free(z);
    entry docx[] = {{"[Content_Types].xml", "<x/>", 0, 0}, {"word/document.xml", "<x/>", 0, 0}};
    z = make_zip(docx, 2, &len);
    ck_assert_int_eq(mt_format_detect(NULL, z, len), MT_FILE_DOCX);
    free(z);
    ck_assert_str_eq(mt_format_name(MT_FILE_DOCX), "docx");
    ck_assert_str_eq(mt_format_mime(MT_FILE_ODT), "application/vnd.oasis.opendocument.text");
}
END_TEST

/* ---- .docx ------------------------------------------------------------------------------ */

static const char docx_types[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
    "<Types xmlns=\"http://schemas.openxmlformats.org/package/2006/content-types\">"
    "<Default Extension=\"xml\" ContentType=\"application/xml\"/></Types>";
static const char docx_styles[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
    "<w:styles xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\">"
    "<w:style w:type=\"paragraph\" w:styleId=\"Title\"><w:name w:val=\"Title\"/>"
    "<w:rPr><w:sz w:val=\"56\"/></w:rPr></w:style><w:p><w:r><w:t>not translated</w:t></w:r>"
    "</w:p></w:styles>";
#define W "xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\""
static const char docx_document[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
    "<w:document " W "><w:body>"
    "<w:p><w:pPr><w:pStyle w:val=\"Title\"/></w:pPr>"
    "<w:r><w:rPr><w:b/></w:rPr><w:t xml:space=\"preserve\">Hello </w:t></w:r>"
    "<w:r><w:rPr><w:i/></w:rPr><w:t>world &amp; you</w:t></w:r></w:p>"
    "<w:p><w:r><w:t>   </w:t></w:r></w:p>"
    "<w:tbl><w:tr><w:tc><w:p><w:r><w:t>cell</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"
    "<w:sectPr><w:pgSz w:w=\"11906\" w:h=\"16838\"/></w:sectPr>"
    "</w:body></w:document>";
static const char docx_header[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
    "<w:hdr " W "><w:p><w:r><w:t>page header</w:t></w:r></w:p></w:hdr>";

START_TEST(test_docx)
{
    /* A picture-like binary entry, stored, to check raw bytes survive. */
    static const char png[] = "\x89PNG\r\n\x1a\n\0\0\0\rIHDR binary";
    entry e[] = {{"[Content_Types].xml", docx_types, 0, 0},
                 {"word/document.xml", docx_document, 0, 0},
                 {"word/styles.xml", docx_styles, 0, 0},
                 {"word/media/image1.png", png, sizeof png - 1, 1},
                 {"word/header1.xml", docx_header, 0, 0}};
    size_t len, n;
    unsigned char *in = make_zip(e, 5, &len), *out;
    fake f = {0};
    ck_assert_msg(run(MT_FILE_DOCX, in, len, NULL, &f, &out, &n) == 0, "%s", err);
    ck_assert_int_eq(f.units, 3); /* title, cell, header; the blank paragraph is skipped */
    ck_assert_int_eq(f.last_done, 3);

    zipr zi = open_zip(in, len), zo = open_zip(out, n);
    ck_assert_int_eq(zip_get_num_entries(zo.za, 0), 5);
    for (int i = 0; i < 5; i++) {
        zip_stat_t a, b;
        ck_assert_int_eq(zip_stat_index(zi.za, (zip_uint64_t)i, 0, &a), 0);
        ck_assert_int_eq(zip_stat_index(zo.za, (zip_uint64_t)i, 0, &b), 0);
        ck_assert_str_eq(a.name, b.name); /* same order */
        if (strcmp(a.name, "word/document.xml") == 0 || strcmp(a.name, "word/header1.xml") == 0)
            continue;
        /* Untouched entries: same CRC, sizes and compression (copied raw). */
        ck_assert_uint_eq(a.crc, b.crc);
        ck_assert_uint_eq(a.size, b.size);
        ck_assert_uint_eq(a.comp_size, b.comp_size);
        ck_assert_int_eq(a.comp_method, b.comp_method);
    }
    char *styles = entry_text(zo.za, "word/styles.xml");
    ck_assert_str_eq(styles, docx_styles);
    free(styles);
    char *doc = entry_text(zo.za, "word/document.xml");
    /* The run with the most text (italic) takes the paragraph's translation; the bold
     * run keeps its properties and an empty text; structure around is unchanged. */
    const char *want =
        "<w:p><w:pPr><w:pStyle w:val=\"Title\"/></w:pPr>"
        "<w:r><w:rPr><w:b/></w:rPr><w:t xml:space=\"preserve\"/></w:r>"
        "<w:r><w:rPr><w:i/></w:rPr><w:t xml:space=\"preserve\">HELLO WORLD &amp; YOU</w:t></w:r></w:p>"
        "<w:p><w:r><w:t>   </w:t></w:r></w:p>"
        "<w:tbl><w:tr><w:tc><w:p><w:r><w:t xml:space=\"preserve\">CELL</w:t></w:r></w:p></w:tc>"
        "</w:tr></w:tbl><w:sectPr><w:pgSz w:w=\"11906\" w:h=\"16838\"/></w:sectPr>";
    ck_assert_msg(strstr(doc, want) != NULL, "document.xml is:\n%s", doc);
    ck_assert(strstr(doc, "standalone=\"yes\"") != NULL);
    free(doc);
    char *hdr = entry_text(zo.za, "word/header1.xml");
    ck_assert_msg(strstr(hdr, ">PAGE HEADER</w:t>") != NULL, "%s", hdr);
    free(hdr);
    zip_close(zi.za);
    zip_close(zo.za);
    free(in);
    free(out);
}
END_TEST

/* ---- .odt ------------------------------------------------------------------------------- */

static const char odt_mime[] = "application/vnd.oasis.opendocument.text";
#define ODT_NS "xmlns:office=\"urn:oasis:names:tc:opendocument:xmlns:office:1.0\" " \
               "xmlns:text=\"urn:oasis:names:tc:opendocument:xmlns:text:1.0\" " \
               "xmlns:style=\"urn:oasis:names:tc:opendocument:xmlns:style:1.0\""
static const char odt_content[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<office:document-content " ODT_NS " office:version=\"1.3\">"
    "<office:automatic-styles><style:style style:name=\"T1\" style:family=\"text\"/>"
    "</office:automatic-styles><office:body><office:text>"
    "<text:h text:outline-level=\"1\">A title</text:h>"
    "<text:p text:style-name=\"P1\"><text:span text:style-name=\"T1\">Bold</text:span> and "
    "plain</text:p>"
    "<text:p text:style-name=\"P1\"/>"
    "<text:list><text:list-item><text:p>item one</text:p></text:list-item></text:list>"
    "</office:text></office:body></office:document-content>";
static const char odt_styles[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<office:document-styles " ODT_NS "><office:styles>"
    "<style:style style:name=\"P1\" style:family=\"paragraph\"/></office:styles>"
    "</office:document-styles>";
static const char odt_manifest[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<manifest:manifest xmlns:manifest=\"urn:oasis:names:tc:opendocument:xmlns:manifest:1.0\">"
    "<manifest:file-entry manifest:full-path=\"/\" manifest:media-type=\"" "application/vnd."
    "oasis.opendocument.text\"/></manifest:manifest>";

START_TEST(test_odt)
{
    entry e[] = {{"mimetype", odt_mime, 0, 1},
                 {"content.xml", odt_content, 0, 0},
                 {"styles.xml", odt_styles, 0, 0},
                 {"META-INF/manifest.xml", odt_manifest, 0, 0}};
    size_t len, n;
    unsigned char *in = make_zip(e, 4, &len), *out;
    fake f = {0};
    ck_assert_msg(run(MT_FILE_ODT, in, len, NULL, &f, &out, &n) == 0, "%s", err);
    ck_assert_int_eq(f.units, 3);
    /* ODF: "mimetype" stays the first entry, stored, its bytes at offset 38. */
    ck_assert(memcmp(out, "PK\3\4", 4) == 0);
    ck_assert(n > 38 + sizeof odt_mime && memcmp(out + 38, odt_mime, sizeof odt_mime - 1) == 0);
    zipr zo = open_zip(out, n);
    zip_stat_t st;
    ck_assert_int_eq(zip_stat_index(zo.za, 0, 0, &st), 0);
    ck_assert_str_eq(st.name, "mimetype");
    ck_assert_int_eq(st.comp_method, ZIP_CM_STORE);
    char *s = entry_text(zo.za, "styles.xml");
    ck_assert_str_eq(s, odt_styles);
    free(s);
    s = entry_text(zo.za, "META-INF/manifest.xml");
    ck_assert_str_eq(s, odt_manifest);
    free(s);
    char *c = entry_text(zo.za, "content.xml");
    const char *want =
        "<office:automatic-styles><style:style style:name=\"T1\" style:family=\"text\"/>"
        "</office:automatic-styles><office:body><office:text>"
        "<text:h text:outline-level=\"1\">A TITLE</text:h>"
        "<text:p text:style-name=\"P1\"><text:span text:style-name=\"T1\"/>BOLD AND PLAIN"
        "</text:p>"
        "<text:p text:style-name=\"P1\"/>"
        "<text:list><text:list-item><text:p>ITEM ONE</text:p></text:list-item></text:list>"
        "</office:text></office:body>";
    ck_assert_msg(strstr(c, want) != NULL, "content.xml is:\n%s", c);
    free(c);
    zip_close(zo.za);
    free(in);
    free(out);
}
END_TEST

/* libzip 1.7 freed the caller's buffer (double free in mt-translate, abort in
 * mt-server) when the first rewritten part lay past the middle of the zip: the part
 * last, or after a picture. Layouts as Word-like writers and LibreOffice make them. */
START_TEST(test_zip_layouts)
{
    static const char rels[] =
        "<?xml version=\"1.0\"?><Relationships xmlns=\"http://schemas.openxmlformats.org/"
        "package/2006/relationships\"><Relationship Id=\"rId1\" Type=\"http://schemas."
        "openxmlformats.org/officeDocument/2006/relationships/officeDocument\" "
        "Target=\"word/document.xml\"/></Relationships>";
    static const char doc[] =
        "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<w:document " W
        "><w:body><w:p><w:r><w:t>Hello world.</w:t></w:r></w:p></w:body></w:document>";
    static unsigned char png[6000];
    for (size_t i = 0; i < sizeof png; i++) png[i] = (unsigned char)(i * 7919 % 251);
    memcpy(png, "\x89PNG\r\n\x1a\n", 8);
    size_t len;
    unsigned char *z;
    /* .docx, three parts, document.xml last (deflated, as Word writes them). */
    rentry last[] = {{"[Content_Types].xml", docx_types, 0, 1, 0, 0},
                     {"_rels/.rels", rels, 0, 1, 0, 0},
                     {"word/document.xml", doc, 0, 1, 0, 0}};
    z = raw_zip(last, 3, &len);
    expect_translated_zip(MT_FILE_DOCX, z, len, "word/document.xml",
                          ">HELLO WORLD.</w:t>");
    /* .docx with a picture stored before document.xml. */
    rentry image[] = {{"[Content_Types].xml", docx_types, 0, 1, 0, 0},
                      {"_rels/.rels", rels, 0, 1, 0, 0},
                      {"word/media/image1.png", png, sizeof png, 0, 0, 0},
                      {"word/document.xml", doc, 0, 1, 0, 0},
                      {"word/styles.xml", docx_styles, 0, 1, 0, 0}};
    z = raw_zip(image, 5, &len);
    expect_translated_zip(MT_FILE_DOCX, z, len, "word/document.xml",
                          ">HELLO WORLD.</w:t>");
    /* .odt in LibreOffice's order: mimetype, Configurations2, the picture, then styles,
     * content, meta, settings, thumbnail, manifest. */
    rentry lo[] = {{"mimetype", odt_mime, 0, 0, 0, 0},
                   {"Configurations2/accelerator/current.xml", "", 1, 0, 0, 0},
                   {"Pictures/10000001000000100000001.png", png, sizeof png, 0, 0, 0},
                   {"styles.xml", odt_styles, 0, 1, 0, 0},
                   {"content.xml", odt_content, 0, 1, 0, 0},
                   {"meta.xml", "<?xml version=\"1.0\"?><office:document-meta " ODT_NS "/>", 0,
                    1, 0, 0},
                   {"Thumbnails/thumbnail.png", png, 2000, 0, 0, 0},
                   {"META-INF/manifest.xml", odt_manifest, 0, 1, 0, 0}};
    z = raw_zip(lo, 8, &len);
    expect_translated_zip(MT_FILE_ODT, z, len, "content.xml",
                          "<text:h text:outline-level=\"1\">A TITLE</text:h>");
}
END_TEST

START_TEST(test_malformed_zips)
{
    expect_error(MT_FILE_DOCX, "PK\3\4 not really a zip", 22, NULL, "not a valid zip archive");
    expect_error(MT_FILE_ODT, "hello", 5, NULL, "not a valid zip archive");
    size_t len;
    entry nocontent[] = {{"mimetype", odt_mime, 0, 1}, {"styles.xml", odt_styles, 0, 0}};
    unsigned char *z = make_zip(nocontent, 2, &len);
    expect_error(MT_FILE_ODT, z, len, NULL, "the archive has no content.xml");
    free(z);
    entry badxml[] = {{"mimetype", odt_mime, 0, 1},
                      {"content.xml", "<?xml version=\"1.0\"?>\n<a>\n<b></a>", 0, 0}};
    z = make_zip(badxml, 2, &len);
    expect_error(MT_FILE_ODT, z, len, NULL, "odt: content.xml: line 3: invalid XML");
    free(z);
    /* A DOCTYPE (where entities live: XXE, billion laughs) is refused outright. */
    entry xxe[] = {{"word/document.xml",
                    "<?xml version=\"1.0\"?><!DOCTYPE d [<!ENTITY x SYSTEM \"file:///etc/passwd\">]>"
                    "<w:document " W "><w:body><w:p><w:r><w:t>a&x;</w:t></w:r></w:p></w:body>"
                    "</w:document>", 0, 0}};
    z = make_zip(xxe, 1, &len);
    expect_code(MT_FILE_DOCX, z, len, NULL, MT_FORMAT_INVALID,
                "docx: word/document.xml: line 1: a document type declaration");
    free(z);
    /* Zip bomb: 8 MiB of zeros deflates to a few KiB; the limits refuse it. */
    size_t big = 8u << 20;
    char *zeros = calloc(1, big);
    entry bomb[] = {{"mimetype", odt_mime, 0, 1}, {"content.xml", zeros, big, 0}};
    z = make_zip(bomb, 2, &len);
    ck_assert(len < 100000);
    mt_format_options o = mt_format_options_default();
    o.max_part_bytes = 1u << 20;
    expect_error(MT_FILE_ODT, z, len, &o, "content.xml: 8388608 bytes uncompressed, more than "
                 "the limit of 1048576");
    o = mt_format_options_default();
    o.max_total_uncompressed = 4u << 20;
    expect_error(MT_FILE_ODT, z, len, &o, "unpack to more than the limit of 4194304 bytes");
    o = mt_format_options_default();
    o.max_entries = 1;
    expect_error(MT_FILE_ODT, z, len, &o, "2 zip entries, more than the limit of 1");
    free(z);
    free(zeros);
}
END_TEST

/* A paragraph inside a text run (<w:t>): the outer paragraph's replacement freed the
 * inner one's nodes, which were then written through (heap use-after-free). Refused;
 * paragraphs nested the way Word nests them (a text box in a run) still translate. */
START_TEST(test_nested_paragraphs)
{
    size_t len;
    rentry bad[] = {{"word/document.xml",
                     "<?xml version=\"1.0\"?>\n<w:document " W "><w:body><w:p><w:r><w:t>outer"
                     "<w:p><w:r><w:t>inner</w:t></w:r></w:p></w:t></w:r></w:p></w:body>"
                     "</w:document>", 0, 1, 0, 0}};
    unsigned char *z = raw_zip(bad, 1, &len);
    expect_code(MT_FILE_DOCX, z, len, NULL, MT_FORMAT_INVALID,
                "docx: word/document.xml: line 2: <p> inside a text run <w:t>");
    free(z);
    rentry box[] = {{"word/document.xml",
                     "<?xml version=\"1.0\"?>\n<w:document " W "><w:body><w:p><w:r><w:t>before "
                     "</w:t></w:r><w:r><w:pict><w:txbxContent><w:p><w:r><w:t>in the box</w:t>"
                     "</w:r></w:p></w:txbxContent></w:pict></w:r><w:r><w:t>and after the box"
                     "</w:t></w:r></w:p></w:body></w:document>", 0, 1, 0, 0}};
    z = raw_zip(box, 1, &len);
    expect_translated_zip(MT_FILE_DOCX, z, len, "word/document.xml",
                          "<w:p><w:r><w:t/></w:r><w:r><w:pict><w:txbxContent>"
                          "<w:p><w:r><w:t xml:space=\"preserve\">IN THE BOX</w:t></w:r></w:p>"
                          "</w:txbxContent></w:pict></w:r><w:r><w:t xml:space=\"preserve\">"
                          "BEFORE AND AFTER THE BOX</w:t>");
}
END_TEST

static unsigned char *one_part_docx(const char *document, size_t doc_len, int deflate,
                                    size_t *len)
{
    rentry e[] = {{"[Content_Types].xml", docx_types, 0, 1, 0, 0},
                  {"word/document.xml", document, doc_len, deflate, 0, 0}};
    return raw_zip(e, 2, len);
}

/* Entities: a 1.3 KB document using one 60 KB entity 2,000 times (120 MB expanded) and
 * the classic billion laughs: refused at the DOCTYPE, before any expansion. */
START_TEST(test_entities)
{
    size_t n = 60000 + 2000 * 3 + 400, len;
    char *doc = malloc(n), *p = doc;
    p += sprintf(p, "<?xml version=\"1.0\"?>\n<!DOCTYPE d [<!ENTITY e \"");
    memset(p, 'x', 60000), p += 60000;
    p += sprintf(p, "\">]><w:document " W "><w:body><w:p><w:r><w:t>");
    for (int i = 0; i < 2000; i++) p += sprintf(p, "&e;");
    p += sprintf(p, "</w:t></w:r></w:p></w:body></w:document>");
    unsigned char *z = one_part_docx(doc, (size_t)(p - doc), 1, &len);
    ck_assert_uint_lt(len, 2000);
    expect_code(MT_FILE_DOCX, z, len, NULL, MT_FORMAT_INVALID,
                "word/document.xml: line 2: a document type declaration (DOCTYPE, DTD or "
                "entities): not allowed in office documents (refused)");
    free(z);
    free(doc);
    const char *laughs =
        "<?xml version=\"1.0\"?><!DOCTYPE l [<!ENTITY a \"lol\"><!ENTITY b \"&a;&a;&a;&a;\">"
        "<!ENTITY c \"&b;&b;&b;&b;\">]><office:document-content xmlns:office=\"urn:oasis:names"
        ":tc:opendocument:xmlns:office:1.0\">&c;</office:document-content>";
    rentry odt[] = {{"mimetype", odt_mime, 0, 0, 0, 0}, {"content.xml", laughs, 0, 1, 0, 0}};
    z = raw_zip(odt, 2, &len);
    expect_code(MT_FILE_ODT, z, len, NULL, MT_FORMAT_INVALID, "a document type declaration");
    free(z);
}
END_TEST

/* Bombs within the byte limits: 16 MiB of "<a/>" deflating to a few KB (libxml2 would
 * build a node per 4 bytes), a node budget, deep nesting, a huge attribute. */
START_TEST(test_xml_bombs)
{
    size_t big = 16u << 20, len;
    char *doc = malloc(big + 200), *p = doc;
    p += sprintf(p, "<?xml version=\"1.0\"?><w:document " W "><w:body>");
    while ((size_t)(p - doc) < big) memcpy(p, "<a/>", 4), p += 4;
    p += sprintf(p, "</w:body></w:document>");
    unsigned char *z = one_part_docx(doc, (size_t)(p - doc), 1, &len);
    ck_assert_uint_lt(len, 64 * 1024);
    expect_code(MT_FILE_DOCX, z, len, NULL, MT_FORMAT_TOO_LARGE,
                "word/document.xml: unpacks from ");
    ck_assert_msg(strstr(err, "more than 100 times (a zip bomb?)"), "%s", err);
    free(z);
    /* The same shape stored (no ratio to see), 40,000 nodes against a budget of 10,000. */
    p = doc + sprintf(doc, "<?xml version=\"1.0\"?><w:document " W "><w:body>");
    for (int i = 0; i < 40000; i++) memcpy(p, "<a/>", 4), p += 4;
    p += sprintf(p, "</w:body></w:document>");
    z = one_part_docx(doc, (size_t)(p - doc), 0, &len);
    mt_format_options o = mt_format_options_default();
    o.max_nodes = 10000;
    expect_code(MT_FILE_DOCX, z, len, &o, MT_FORMAT_TOO_LARGE,
                "line 1: more than 10000 XML nodes (elements, attributes, texts, comments) in the "
                "document");
    free(z);
    /* 200 nested elements, deeper than 128. */
    p = doc + sprintf(doc, "<?xml version=\"1.0\"?><w:document " W ">");
    for (int i = 0; i < 200; i++) p += sprintf(p, "<w:p>");
    for (int i = 0; i < 200; i++) p += sprintf(p, "</w:p>");
    p += sprintf(p, "</w:document>");
    z = one_part_docx(doc, (size_t)(p - doc), 1, &len);
    expect_code(MT_FILE_DOCX, z, len, NULL, MT_FORMAT_TOO_LARGE,
                "elements nested more than 128 deep (refused)");
    free(z);
    /* A 2 MiB attribute, stored. */
    p = doc + sprintf(doc, "<?xml version=\"1.0\"?><w:document " W " w:x=\"");
    memset(p, 'v', 2u << 20), p += 2u << 20;
    p += sprintf(p, "\"><w:body/></w:document>");
    z = one_part_docx(doc, (size_t)(p - doc), 0, &len);
    expect_code(MT_FILE_DOCX, z, len, NULL, MT_FORMAT_TOO_LARGE,
                "attribute 'x' of 2097152 bytes, more than the limit of 1048576");
    free(z);
    free(doc);
}
END_TEST

/* The zip layer's refusals: entry count, names, duplicates, encryption, lying sizes,
 * the sum of the XML parts read. */
START_TEST(test_hostile_zips)
{
    static const char doc[] = "<?xml version=\"1.0\"?><w:document " W "><w:body><w:p><w:r>"
                              "<w:t>Hi</w:t></w:r></w:p></w:body></w:document>";
    struct {
        const char *name;
        int encrypted, code;
        const char *want;
    } cases[] = {
        {"../../etc/cron.d/x", 0, MT_FORMAT_INVALID,
         "docx: zip entry '../../etc/cron.d/x' has a '..' component (refused)"},
        {"word/../../x", 0, MT_FORMAT_INVALID, "has a '..' component"},
        {"/etc/passwd", 0, MT_FORMAT_INVALID, "'/etc/passwd' has an absolute path"},
        {"C:/x", 0, MT_FORMAT_INVALID, "has a drive letter"},
        {"word\\..\\x", 0, MT_FORMAT_INVALID, "has a backslash"},
        {"word/document.xml", 0, MT_FORMAT_INVALID, "two zip entries have the same name"},
        {"word/media/a.png", 1, MT_FORMAT_INVALID, "zip entry 'word/media/a.png' is encrypted"},
    };
    size_t len;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rentry e[] = {{"[Content_Types].xml", docx_types, 0, 1, 0, 0},
                      {"word/document.xml", doc, 0, 1, 0, 0},
                      {cases[i].name, "x", 0, 0, cases[i].encrypted, 0}};
        unsigned char *z = raw_zip(e, 3, &len);
        expect_code(MT_FILE_DOCX, z, len, NULL, cases[i].code, cases[i].want);
        free(z);
    }
    /* An entry that inflates past its declared size. */
    rentry lie[] = {{"word/document.xml", doc, 0, 1, 0, 20}};
    unsigned char *z = raw_zip(lie, 1, &len);
    expect_code(MT_FILE_DOCX, z, len, NULL, MT_FORMAT_INVALID,
                "word/document.xml: size differs from the zip directory");
    free(z);
    /* Entry count, and XML parts under the limit alone but not together. */
    rentry many[] = {{"word/document.xml", doc, 0, 1, 0, 0}, {"word/header1.xml", doc, 0, 1, 0, 0},
                     {"a", "1", 0, 0, 0, 0}, {"b", "2", 0, 0, 0, 0}};
    z = raw_zip(many, 4, &len);
    mt_format_options o = mt_format_options_default();
    o.max_entries = 3;
    expect_code(MT_FILE_DOCX, z, len, &o, MT_FORMAT_TOO_LARGE,
                "4 zip entries, more than the limit of 3");
    o = mt_format_options_default();
    o.max_part_bytes = sizeof doc + 10;
    expect_code(MT_FILE_DOCX, z, len, &o, MT_FORMAT_TOO_LARGE,
                "word/header1.xml: 169 bytes uncompressed, with the 169 read before more than "
                "the limit of 180 bytes of XML per document");
    free(z);
}
END_TEST

/* The extracted callback sees the characters really translated (code points after
 * unzipping, not the file's bytes) and may refuse the document before any translation. */
typedef struct {
    long units;
    long long chars;
    int refuse;
} extracted_seen;

static int on_extracted(void *user, long units, long long chars, char *e, size_t elen)
{
    extracted_seen *s = ((fake *)user)->user;
    s->units = units;
    s->chars = chars;
    if (s->refuse) snprintf(e, elen, "over 10 characters per minute");
    return s->refuse;
}

START_TEST(test_extracted_count)
{
    static const char doc[] = "<?xml version=\"1.0\"?><w:document " W "><w:body><w:p><w:r>"
                              "<w:t>Grüße, </w:t></w:r><w:r><w:t>world</w:t></w:r></w:p><w:p>"
                              "<w:r><w:t>Two</w:t></w:r></w:p></w:body></w:document>";
    size_t len, n;
    unsigned char *z = one_part_docx(doc, 0, 1, &len), *out;
    extracted_seen seen = {0};
    fake f = {.user = &seen};
    mt_format_options o = mt_format_options_default();
    o.extracted = on_extracted;
    ck_assert_msg(run(MT_FILE_DOCX, z, len, &o, &f, &out, &n) == 0, "%s", err);
    free(out);
    ck_assert_int_eq(seen.units, 2);
    ck_assert_int_eq(seen.chars, 12 + 3); /* "Grüße, world" and "Two" */
    seen.refuse = 1;
    f = (fake){.user = &seen};
    out = (unsigned char *)"x";
    ck_assert_int_eq(run(MT_FILE_DOCX, z, len, &o, &f, &out, &n), MT_FORMAT_REFUSED);
    ck_assert(out == NULL);
    ck_assert_str_eq(err, "over 10 characters per minute");
    ck_assert_int_eq(f.calls, 0);
    free(z);
    /* Text formats too: "é ok" is 4 characters in 5 bytes. */
    seen = (extracted_seen){0};
    f = (fake){.user = &seen};
    ck_assert_int_eq(run(MT_FILE_TXT, "\xc3\xa9 ok\n\n", 7, &o, &f, &out, &n), 0);
    free(out);
    ck_assert_int_eq(seen.units, 1);
    ck_assert_int_eq(seen.chars, 4);
}
END_TEST

/* ---- the readers in a child process ------------------------------------------------------ */

typedef int (*translate_call)(mt_file_format, const unsigned char *, size_t,
                              const mt_format_options *, mt_format_translate_fn,
                              mt_format_progress_fn, void *, unsigned char **, size_t *, char *,
                              size_t);

/* The helper process of the isolated calls, made in main() before the tests run, and
 * the process that made it. */
static mt_format_isolator *iso;
static pid_t iso_owner;

static int isolated(mt_file_format fmt, const unsigned char *data, size_t len,
                    const mt_format_options *opt, mt_format_translate_fn translate,
                    mt_format_progress_fn progress, void *user, unsigned char **out,
                    size_t *out_len, char *e, size_t elen)
{
    return mt_format_translate_isolated(iso, fmt, data, len, opt, translate, progress, user, out,
                                        out_len, e, elen);
}

static int run_with(translate_call call, mt_file_format fmt, const void *data, size_t len,
                    const mt_format_options *opt, fake *f, unsigned char **out, size_t *out_len)
{
    err[0] = '\0';
    return call(fmt, data, len, opt, upper, progress, f, out, out_len, err, sizeof err);
}

/* A rewritten part keeps its entry's time stamp (libzip would stamp it with the clock), so
 * one document translated twice gives the same bytes: the isolated and in-process runs
 * below differed when they fell on either side of a two-second boundary. */
START_TEST(test_rewritten_parts_keep_their_time)
{
    entry de[] = {{"[Content_Types].xml", docx_types, 0, 0}, {"word/document.xml", docx_document, 0, 0}};
    size_t dlen, n;
    unsigned char *docx = make_zip(de, 2, &dlen), *out;
    mt_format_options o = mt_format_options_default();
    fake f = {0};
    ck_assert_msg(run_with(mt_format_translate, MT_FILE_DOCX, docx, dlen, &o, &f, &out, &n) == 0, "%s", err);
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *src = zip_source_buffer_create(out, n, 0, &ze);
    zip_t *za = zip_open_from_source(src, ZIP_RDONLY, &ze);
    ck_assert(za != NULL);
    zip_stat_t st;
    ck_assert_int_eq(zip_stat(za, "word/document.xml", 0, &st), 0);
    ck_assert(st.valid & ZIP_STAT_MTIME);
    ck_assert_int_eq((long long)st.mtime, (long long)FIXED_MTIME);
    zip_discard(za);
    zip_error_fini(&ze);
    free(out);
    free(docx);
}
END_TEST

/* Same output, callbacks and errors as in-process, for every format. */
START_TEST(test_isolated_same_results)
{
    static const char png[] = "\x89PNG\r\n\x1a\n\0\0\0\rIHDR binary";
    entry de[] = {{"[Content_Types].xml", docx_types, 0, 0},
                  {"word/document.xml", docx_document, 0, 0},
                  {"word/media/image1.png", png, sizeof png - 1, 1},
                  {"word/header1.xml", docx_header, 0, 0}};
    entry oe[] = {{"mimetype", odt_mime, 0, 1}, {"content.xml", odt_content, 0, 0}};
    size_t dlen, olen;
    unsigned char *docx = make_zip(de, 4, &dlen), *odt = make_zip(oe, 2, &olen);
    const char *srt = "1\n00:00:01,000 --> 00:00:02,000\nTwo\nlines\n\n";
    const char *html = "<p>Hello <b>world</b></p>";
    struct {
        mt_file_format fmt;
        const void *data;
        size_t len;
    } cases[] = {{MT_FILE_TXT, "a\n\nb c\n", 7}, {MT_FILE_SRT, srt, strlen(srt)},
                 {MT_FILE_HTML, html, strlen(html)}, {MT_FILE_DOCX, docx, dlen},
                 {MT_FILE_ODT, odt, olen}};
    mt_format_options o = mt_format_options_default();
    o.batch_units = 2;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fake a = {0}, b = {0};
        unsigned char *x, *y;
        size_t nx, ny;
        ck_assert_msg(run_with(mt_format_translate, cases[i].fmt, cases[i].data, cases[i].len,
                               &o, &a, &x, &nx) == 0, "%s", err);
        ck_assert_msg(run_with(isolated, cases[i].fmt, cases[i].data,
                               cases[i].len, &o, &b, &y, &ny) == 0, "%s", err);
        ck_assert_uint_eq(nx, ny);
        ck_assert(memcmp(x, y, nx) == 0);
        ck_assert_int_eq(a.units, b.units);
        ck_assert_int_eq(a.calls, b.calls);
        ck_assert_int_eq(a.html, b.html);
        ck_assert_int_eq(a.progress_calls, b.progress_calls);
        ck_assert_int_eq(a.last_done, b.last_done);
        free(x);
        free(y);
    }
    /* The translator's error, the reader's refusals and the extracted callback's answer
     * come back with their status and message. */
    fake f = {.fail = 1};
    unsigned char *out = (unsigned char *)"x";
    size_t n;
    ck_assert_int_eq(run_with(isolated, MT_FILE_DOCX, docx, dlen, NULL, &f,
                              &out, &n), MT_FORMAT_FAILED);
    ck_assert(out == NULL);
    ck_assert_str_eq(err, "translating unit 1: model exploded");
    rentry bad[] = {{"word/document.xml",
                     "<?xml version=\"1.0\"?>\n<w:document " W "><w:body><w:p><w:r><w:t>outer"
                     "<w:p/></w:t></w:r></w:p></w:body></w:document>", 0, 1, 0, 0}};
    size_t blen;
    unsigned char *z = raw_zip(bad, 1, &blen);
    f = (fake){0};
    ck_assert_int_eq(run_with(isolated, MT_FILE_DOCX, z, blen, NULL, &f,
                              &out, &n), MT_FORMAT_INVALID);
    ck_assert_msg(strstr(err, "<p> inside a text run <w:t>") != NULL, "%s", err);
    free(z);
    extracted_seen seen = {.refuse = 1};
    f = (fake){.user = &seen};
    o = mt_format_options_default();
    o.extracted = on_extracted;
    ck_assert_int_eq(run_with(isolated, MT_FILE_ODT, odt, olen, &o, &f,
                              &out, &n), MT_FORMAT_REFUSED);
    ck_assert_str_eq(err, "over 10 characters per minute");
    ck_assert_int_eq(seen.units, 3);
    ck_assert_int_eq(f.calls, 0);
    free(docx);
    free(odt);
}
END_TEST

/* Attributes of one element: libxml2 checks each against all earlier ones (60,000 cost
 * seconds of CPU), so a scan of the bytes refuses more than 128 before libxml2 parses.
 * Quoted values holding '>' and '=', and comments, CDATA and processing instructions
 * holding tag-like text, must not change the count. */
static char *attrs_doc(const char *before, int n, const char *value)
{
    size_t cap = strlen(before) + (size_t)n * (strlen(value) + 16) + 400;
    char *doc = malloc(cap), *p = doc;
    ck_assert(doc != NULL);
    p += sprintf(p, "<?xml version=\"1.0\"?>\n<w:document " W "><w:body>\n%s<w:p", before);
    for (int i = 0; i < n; i++) p += sprintf(p, " a%d=%s", i, value);
    sprintf(p, "><w:r><w:t>Hi</w:t></w:r></w:p></w:body></w:document>");
    return doc;
}

/* Translates doc (freed) as a .docx: status code with want in the message, or (code 0)
 * success with `units` paragraphs. */
static void expect_attrs(char *doc, const mt_format_options *o, int code, const char *want,
                         int units)
{
    size_t len;
    unsigned char *z = one_part_docx(doc, strlen(doc), 1, &len);
    if (code != 0) {
        expect_code(MT_FILE_DOCX, z, len, o, code, want);
    } else {
        fake f = {0};
        unsigned char *out;
        size_t n;
        ck_assert_msg(run(MT_FILE_DOCX, z, len, o, &f, &out, &n) == 0, "%s", err);
        ck_assert_int_eq(f.units, units);
        free(out);
    }
    free(z);
    free(doc);
}

START_TEST(test_many_attributes)
{
    expect_attrs(attrs_doc("", 60000, "''"), NULL, MT_FORMAT_TOO_LARGE,
                 "word/document.xml: line 3: an element with more than 128 attributes", 0);
    expect_attrs(attrs_doc("", 129, "\"\""), NULL, MT_FORMAT_TOO_LARGE,
                 "line 3: an element with more than 128 attributes (refused)", 0);
    expect_attrs(attrs_doc("", 128, "''"), NULL, 0, NULL, 1);
    /* 100 values of 2 '=' and a '>' each: 100 attributes, not 300, nor a tag ended early. */
    expect_attrs(attrs_doc("", 100, "'a=b>c=d'"), NULL, 0, NULL, 1);
    expect_attrs(attrs_doc("", 100, "\"x='>'=\""), NULL, 0, NULL, 1);
    /* A '>' in every value must not end the count: all 600 are seen. */
    expect_attrs(attrs_doc("", 600, "'>'"), NULL, MT_FORMAT_TOO_LARGE,
                 "line 3: an element with more than 128 attributes", 0);
    /* Tag-like text with 600 attributes in a comment, a processing instruction and a
     * CDATA section: no element, accepted. */
    char tag[600 * 12 + 20], *q = tag;
    q += sprintf(q, "<x");
    for (int i = 0; i < 600; i++) q += sprintf(q, " b%d='>'", i);
    sprintf(q, ">");
    char *around = malloc(sizeof tag * 3 + 100);
    ck_assert(around != NULL);
    sprintf(around, "<!-- %s --><?pi %s?><w:p><w:r><w:t><![CDATA[%s]]></w:t></w:r></w:p>",
            tag, tag, tag);
    expect_attrs(attrs_doc(around, 2, "''"), NULL, 0, NULL, 2);
    free(around);
    /* The limit is an option; xmlns declarations count (libxml2 checks them alike). */
    mt_format_options o = mt_format_options_default();
    o.max_attributes = 4;
    expect_attrs(attrs_doc("", 4, "''"), &o, 0, NULL, 1);
    expect_attrs(attrs_doc("", 5, "''"), &o, MT_FORMAT_TOO_LARGE,
                 "line 3: an element with more than 4 attributes", 0);
    expect_attrs(attrs_doc("", 1, "'' xmlns:x='u' xmlns:y='v' xmlns:z='t' xmlns:q='r'"), &o,
                 MT_FORMAT_TOO_LARGE, "line 3: an element with more than 4 attributes", 0);
    /* The isolated reader gets the option too. */
    char *doc = attrs_doc("", 5, "''");
    size_t len, n;
    unsigned char *z = one_part_docx(doc, strlen(doc), 1, &len), *out;
    fake f = {0};
    ck_assert_int_eq(run_with(isolated, MT_FILE_DOCX, z, len, &o, &f, &out, &n),
                     MT_FORMAT_TOO_LARGE);
    ck_assert_msg(strstr(err, "line 3: an element with more than 4 attributes"), "%s", err);
    free(z);
    free(doc);
}
END_TEST

/* A document of n_el elements at depth `depth` below the body, each with n_attr
 * attributes whose values are val_bytes long, and depth levels each declaring n_ns
 * namespaces with prefixes of their own. */
static char *attr_heavy_doc(int depth, int n_ns, int n_el, int n_attr, size_t val_bytes)
{
    size_t cap = 400 + (size_t)depth * ((size_t)n_ns * 40 + 20) +
                 (size_t)n_el * ((size_t)n_attr * (val_bytes + 16) + 40);
    char *doc = malloc(cap), *p = doc;
    ck_assert(doc != NULL);
    char *end = doc + cap; /* snprintf: gcc -O2 with ASan sees a null sprintf target */
    p += snprintf(p, (size_t)(end - p), "<?xml version=\"1.0\"?><w:document " W "><w:body>"
                  "<w:p><w:r><w:t>Hi</w:t></w:r></w:p>");
    for (int d = 0; d < depth; d++) {
        p += snprintf(p, (size_t)(end - p), "<w:r");
        for (int k = 0; k < n_ns; k++)
            p += snprintf(p, (size_t)(end - p), " xmlns:p%d_%d='u%d_%d'", d, k, d, k);
        p += snprintf(p, (size_t)(end - p), ">");
    }
    for (int e = 0; e < n_el; e++) {
        p += snprintf(p, (size_t)(end - p), "<w:x");
        for (int i = 0; i < n_attr; i++) {
            p += snprintf(p, (size_t)(end - p), " a%d='", i);
            memset(p, 'v', val_bytes), p += val_bytes;
            *p++ = '\'';
        }
        p += snprintf(p, (size_t)(end - p), "/>");
    }
    for (int d = 0; d < depth; d++) p += snprintf(p, (size_t)(end - p), "</w:r>");
    snprintf(p, (size_t)(end - p), "</w:body></w:document>");
    return doc;
}

/* Attributes are nodes too: a 9 MiB part of elements with 128 short attributes each built
 * a tree of 400 MB within a budget that counted their elements only, so each attribute
 * costs 2 nodes and its bytes 1 per 128. Namespace declarations in scope are bounded:
 * libxml2 looks each prefix up through all of them (120 levels of 127: 57 s of CPU). */
START_TEST(test_attributes_in_budget)
{
    mt_format_options o = mt_format_options_default();
    o.max_nodes = 5000;
    /* 10 elements of 100 attributes: about 2,000 nodes, accepted. */
    expect_attrs(attr_heavy_doc(0, 0, 10, 100, 0), &o, 0, NULL, 1);
    /* 40 of them: 8,000, refused where the budget runs out, before libxml2 builds them. */
    expect_attrs(attr_heavy_doc(0, 0, 40, 100, 0), &o, MT_FORMAT_TOO_LARGE,
                 "word/document.xml: line 1: attributes past the document's budget of 5000 "
                 "XML nodes (an attribute counts 2, and 1 per 128 bytes) (refused)", 0);
    /* One element whose 10 values of 64 KiB make 5,000 nodes of bytes. */
    expect_attrs(attr_heavy_doc(0, 0, 1, 10, 64 << 10), &o, MT_FORMAT_TOO_LARGE,
                 "attributes past the document's budget of 5000 XML nodes", 0);
    expect_attrs(attr_heavy_doc(0, 0, 1, 10, 32 << 10), &o, 0, NULL, 1);
    /* Namespaces: 5 levels of 20 declarations in scope pass, 10 levels do not. */
    expect_attrs(attr_heavy_doc(5, 20, 3, 3, 1), NULL, 0, NULL, 1);
    expect_attrs(attr_heavy_doc(10, 20, 3, 3, 1), NULL, MT_FORMAT_TOO_LARGE,
                 "line 1: more than 128 namespace declarations (xmlns) in scope (refused)", 0);
    o = mt_format_options_default();
    o.max_attributes = 16; /* w and 15 more */
    expect_attrs(attr_heavy_doc(1, 15, 1, 1, 1), &o, 0, NULL, 1);
    expect_attrs(attr_heavy_doc(2, 10, 1, 1, 1), &o, MT_FORMAT_TOO_LARGE,
                 "more than 16 namespace declarations (xmlns) in scope", 0);
}
END_TEST

/* A reader that runs past its limits costs its own call only: the next call works. */
START_TEST(test_isolated_limits)
{
    /* 8 MiB of XML (2 million nodes), stored: parsing it takes far more than 1 ms. */
    size_t big = 8u << 20, len, n;
    char *doc = malloc(big + 200), *p = doc;
    p += sprintf(p, "<?xml version=\"1.0\"?><w:document " W "><w:body>");
    while ((size_t)(p - doc) < big) memcpy(p, "<a/>", 4), p += 4;
    p += sprintf(p, "</w:body></w:document>");
    unsigned char *z = one_part_docx(doc, (size_t)(p - doc), 0, &len), *out;
    free(doc);
    mt_format_options o = mt_format_options_default();
    o.max_nodes = 10000000;
    o.child_wall_ms = 1;
    fake f = {0};
    ck_assert_int_eq(run_with(isolated, MT_FILE_DOCX, z, len, &o, &f, &out,
                              &n), MT_FORMAT_INVALID);
    ck_assert_str_eq(err, "docx: the document reader took longer than 1 ms and was stopped");
#if !defined(__SANITIZE_ADDRESS__)
    /* 16 MiB of address space for a tree of 2 million nodes: the reader runs out of
     * memory (an error, or killed at the limit), the caller does not. */
    o = mt_format_options_default();
    o.max_nodes = 10000000;
    o.child_memory = 16u << 20;
    f = (fake){0};
    ck_assert_int_lt(run_with(isolated, MT_FILE_DOCX, z, len, &o, &f, &out,
                              &n), 0);
    ck_assert(err[0] != '\0'); /* libxml2 may report its failed allocation as bad XML */
#endif
    free(z);
    f = (fake){0};
    ck_assert_int_eq(run_with(isolated, MT_FILE_TXT, "ok\n", 3, NULL, &f,
                              &out, &n), 0);
    ck_assert_str_eq((char *)out, "OK\n");
    free(out);
}
END_TEST

/* The pids of the live children of `parent` (from /proc). */
static int children_of(pid_t parent, pid_t *out, int cap)
{
    DIR *d = opendir("/proc");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) && n < cap) {
        char path[300], buf[512];
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t got = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[got] = '\0';
        char *r = strrchr(buf, ')'), state;
        int ppid;
        if (r && sscanf(r + 2, "%c %d", &state, &ppid) == 2 && ppid == parent && state != 'Z')
            out[n++] = (pid_t)atoi(e->d_name);
    }
    if (d) closedir(d);
    return n;
}

/* The pids of this process's live children (from /proc). */
static int child_pids(pid_t *out, int cap) { return children_of(getpid(), out, cap); }

/* The readers are forked by a helper process, not by the caller; a helper that died is
 * replaced by the next call, which succeeds. */
START_TEST(test_isolator_restarts)
{
    char e[200];
    pid_t before[16], kids[16], helper = 0;
    int nb = child_pids(before, 16);
    mt_format_isolator *own = mt_format_isolator_create(e, sizeof e);
    ck_assert_msg(own != NULL, "%s", e);
    /* the new child of this process is the helper (main's, under CK_FORK=no, was there) */
    int n = child_pids(kids, 16);
    ck_assert_int_eq(n, nb + 1);
    for (int i = 0; i < n; i++) {
        int old = 0;
        for (int j = 0; j < nb; j++) old |= kids[i] == before[j];
        if (!old) helper = kids[i];
    }
    ck_assert_int_gt(helper, 0);
    fake f = {0};
    unsigned char *out;
    size_t len;
    err[0] = '\0';
    ck_assert_int_eq(mt_format_translate_isolated(own, MT_FILE_TXT, (const unsigned char *)"a\n",
                                                  2, NULL, upper, progress, &f, &out, &len, err,
                                                  sizeof err), 0);
    free(out);
    ck_assert_int_eq(mt_format_isolator_restarts(own), 0);
    ck_assert_int_eq(kill(helper, SIGKILL), 0);
    f = (fake){0};
    ck_assert_int_eq(mt_format_translate_isolated(own, MT_FILE_TXT, (const unsigned char *)"b\n",
                                                  2, NULL, upper, progress, &f, &out, &len, err,
                                                  sizeof err), 0);
    ck_assert_str_eq((char *)out, "B\n");
    free(out);
    ck_assert_int_eq(mt_format_isolator_restarts(own), 1);
    mt_format_isolator_free(own);
    ck_assert_int_eq(child_pids(kids, 16), nb);
}
END_TEST

/* What a reader process may do, seen from outside while it waits for a translation. */
typedef struct {
    pid_t reader;         /* the grandchild that asked (0: none found) */
    char nofile[160];     /* its "Max open files" line of /proc/PID/limits */
    char fsize[160];      /* its "Max file size" line */
    int fds;              /* entries of /proc/PID/fd */
    char fd0[64];         /* where its fd 0 points */
} reader_view;

/* The line of /proc/pid/limits that starts with `name`, spaces squeezed. */
static void limit_line(pid_t pid, const char *name, char *out, size_t cap)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/limits", (int)pid);
    FILE *f = fopen(path, "r");
    out[0] = '\0';
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, name, strlen(name))) continue;
        size_t k = 0;
        for (char *c = line; *c && *c != '\n' && k + 1 < cap; c++)
            if (*c != ' ' || (k > 0 && out[k - 1] != ' ')) out[k++] = *c;
        while (k > 0 && out[k - 1] == ' ') k--;
        out[k] = '\0';
        break;
    }
    if (f) fclose(f);
}

/* The translate callback of the isolated reader runs in this process while the reader
 * (a child of the helper, which is a child of this process) waits for its answer: the
 * moment to look at the reader's limits and descriptors from outside. */
static int look_at_reader(void *user, const char *const *texts, const size_t *lens, int n, int html,
                          char **out, char *e, size_t elen)
{
    reader_view *v = ((fake *)user)->user;
    /* the helper is a child of the process that made the isolator (main's: this one, or
     * its parent when check forks each test), the reader the helper's child */
    pid_t kids[16], readers[4];
    int nk = children_of(iso_owner, kids, 16);
    struct dirent *de;
    for (int i = 0; i < nk && !v->reader; i++)
        if (children_of(kids[i], readers, 4) > 0) v->reader = readers[0];
    if (v->reader) {
        limit_line(v->reader, "Max open files", v->nofile, sizeof v->nofile);
        limit_line(v->reader, "Max file size", v->fsize, sizeof v->fsize);
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/fd", (int)v->reader);
        DIR *fd = opendir(path);
        while (fd && (de = readdir(fd)))
            if (de->d_name[0] != '.') v->fds++;
        if (fd) closedir(fd);
        snprintf(path, sizeof path, "/proc/%d/fd/0", (int)v->reader);
        ssize_t k = readlink(path, v->fd0, sizeof v->fd0 - 1);
        v->fd0[k > 0 ? k : 0] = '\0';
    }
    return upper(user, texts, lens, n, html, out, e, elen);
}

/* The reader opens nothing: its one descriptor is the socket to its helper, and it can
 * neither open another (no file, no network socket: RLIMIT_NOFILE 1) nor write a byte to
 * a file (RLIMIT_FSIZE 0), as issue 25 asks of a process that parses hostile documents. */
START_TEST(test_reader_has_no_files_or_network)
{
    reader_view v = {0};
    fake f = {0};
    f.user = &v;
    unsigned char *out;
    size_t n;
    err[0] = '\0';
    ck_assert_msg(mt_format_translate_isolated(iso, MT_FILE_TXT, (const unsigned char *)"hello\n", 6, NULL,
                                               look_at_reader, progress, &f, &out, &n, err, sizeof err) == 0,
                  "%s", err);
    ck_assert_str_eq((char *)out, "HELLO\n");
    free(out);
    ck_assert_msg(v.reader > 0, "no reader process found while it waited for its translation");
    /* Under valgrind the forked reader runs on valgrind's core, which keeps descriptors
     * of its own and answers setrlimit(RLIMIT_NOFILE) without lowering the real limit:
     * there is nothing of ours to see. */
    const char *preload = getenv("LD_PRELOAD");
    if (preload && strstr(preload, "vgpreload")) return;
    ck_assert_str_eq(v.nofile, "Max open files 1 1 files");
    ck_assert_str_eq(v.fsize, "Max file size 0 0 bytes");
    ck_assert_int_eq(v.fds, 1);
    ck_assert_msg(strncmp(v.fd0, "socket:", 7) == 0, "fd 0 is %s", v.fd0);
}
END_TEST

int main(void)
{
    mt_format_global_init();
    char e[200];
    iso = mt_format_isolator_create(e, sizeof e);
    iso_owner = getpid();
    if (!iso) {
        fprintf(stderr, "%s\n", e);
        return 1;
    }
    Suite *s = suite_create("formats");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_txt);
    tcase_add_test(tc, test_reader_has_no_files_or_network);
    tcase_add_test(tc, test_srt);
    tcase_add_test(tc, test_html);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_detect);
    tcase_add_test(tc, test_docx);
    tcase_add_test(tc, test_odt);
    tcase_add_test(tc, test_malformed_zips);
    tcase_add_test(tc, test_zip_layouts);
    tcase_add_test(tc, test_nested_paragraphs);
    tcase_add_test(tc, test_entities);
    tcase_add_test(tc, test_xml_bombs);
    tcase_add_test(tc, test_many_attributes);
    tcase_add_test(tc, test_attributes_in_budget);
    tcase_add_test(tc, test_hostile_zips);
    tcase_add_test(tc, test_extracted_count);
    tcase_add_test(tc, test_rewritten_parts_keep_their_time);
    tcase_add_test(tc, test_isolated_same_results);
    tcase_add_test(tc, test_isolated_limits);
    tcase_add_test(tc, test_isolator_restarts);
    suite_add_tcase(s, tc);
    int rc = mt_check_run(srunner_create(s));
    mt_format_isolator_free(iso);
    return rc;
}
