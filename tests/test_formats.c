/* test_formats.c: file translation with a fake translate callback (ASCII uppercasing,
 * so every expected output is exact): .txt, .srt, .html, and .docx/.odt written here
 * with libzip, checked byte for byte (untouched entries, styles, entry order and
 * compression kept); malformed files (not a zip, missing parts, invalid XML, zip bombs,
 * lying sizes, broken SubRip, invalid UTF-8) give errors that say what and where. */
#include <check.h>

#include "check_main.h"
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zip.h>

#include "formats.h"

static char err[512];

typedef struct {
    int calls, units, html, fail;
    long last_done, last_total, progress_calls;
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

static void expect_error(mt_file_format fmt, const void *in, size_t len,
                         const mt_format_options *opt, const char *want)
{
    fake f = {0};
    unsigned char *out = (unsigned char *)"x";
    size_t n;
    ck_assert_int_eq(run(fmt, in, len, opt, &f, &out, &n), -1);
    ck_assert(out == NULL);
    ck_assert_msg(strstr(err, want) != NULL, "error '%s' lacks '%s'", err, want);
}

/* ---- zip helpers ---------------------------------------------------------------------- */

typedef struct {
    const char *name, *data;
    size_t len; /* 0: strlen(data) */
    int store;  /* 1: stored uncompressed */
} entry;

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
    ck_assert_int_eq(run(MT_FILE_TXT, "a\n", 2, NULL, &f, &out, &n), -1);
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
    /* Entity expansion is not performed (billion laughs), and external entities are
     * never fetched: the document parses, the entity reference stays unexpanded. */
    entry xxe[] = {{"word/document.xml",
                    "<?xml version=\"1.0\"?><!DOCTYPE d [<!ENTITY x SYSTEM \"file:///etc/passwd\">]>"
                    "<w:document " W "><w:body><w:p><w:r><w:t>a&x;</w:t></w:r></w:p></w:body>"
                    "</w:document>", 0, 0}};
    z = make_zip(xxe, 1, &len);
    fake f = {0};
    unsigned char *out;
    size_t n;
    if (run(MT_FILE_DOCX, z, len, NULL, &f, &out, &n) == 0) {
        zipr zo = open_zip(out, n);
        char *d = entry_text(zo.za, "word/document.xml");
        ck_assert_msg(strstr(d, "root:") == NULL, "external entity expanded: %s", d);
        free(d);
        zip_close(zo.za);
        free(out);
    }
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

int main(void)
{
    mt_format_global_init();
    Suite *s = suite_create("formats");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_txt);
    tcase_add_test(tc, test_srt);
    tcase_add_test(tc, test_html);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_detect);
    tcase_add_test(tc, test_docx);
    tcase_add_test(tc, test_odt);
    tcase_add_test(tc, test_malformed_zips);
    suite_add_tcase(s, tc);
    return mt_check_run(srunner_create(s));
}
