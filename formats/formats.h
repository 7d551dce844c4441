/* formats.h: file translation (POST /translate_file, mt-translate FILE): finds the
 * translatable text of a document, hands it to a caller-supplied batch translate call
 * and writes the document back with everything else kept.
 *
 *   .txt   every non-blank line is one unit; line endings and blank lines kept
 *   .html  the whole document is one unit translated as HTML (html = 1)
 *   .srt   each cue's text is one unit (its lines joined by "\n"); cue numbers, timings
 *          and separators are kept byte for byte
 *   .docx  each paragraph (w:p) of word/document.xml, headers, footers, foot/endnotes is
 *          one unit; the translation goes into the paragraph's text run (w:t) that held
 *          the most source text (its formatting is the paragraph's dominant one), the
 *          paragraph's other w:t are emptied, so run and paragraph properties (w:rPr,
 *          w:pPr) stay where they were
 *   .odt   each paragraph or heading (text:p, text:h) of content.xml is one unit; the
 *          translation replaces the paragraph's longest text node (keeping the span it
 *          sits in), the paragraph's other text nodes are removed
 * In .docx/.odt only those XML parts are rewritten (libxml2); the zip is updated in
 * place with libzip, so every other entry, their order and their compressed bytes stay
 * as they were (the .odt "mimetype" entry first and stored).
 *
 * Thread-safety: calls share no state and may run in several threads at once, provided
 * the process called mt_format_global_init() (libxml2's own initialisation) before
 * starting threads. Errors: -1 with a message saying what and where (part, line).
 */
#ifndef MT_FORMATS_H
#define MT_FORMATS_H

#include <stddef.h>

typedef enum {
    MT_FILE_UNKNOWN = 0,
    MT_FILE_TXT,
    MT_FILE_HTML,
    MT_FILE_SRT,
    MT_FILE_DOCX,
    MT_FILE_ODT,
} mt_file_format;

/* Translates texts[0..n) (lens[i] bytes each, not NUL-terminated), html = 1 when they
 * are HTML. Fills out[i] with malloc'd NUL-terminated translations that the caller
 * frees. Returns 0, or -1 with a message in err (then out[] is freed by the callee). */
typedef int (*mt_format_translate_fn)(void *user, const char *const *texts,
                                      const size_t *lens, int n, int html, char **out,
                                      char *err, size_t errlen);
/* Reports that `done` of `total` units are translated (first call: done = 0). */
typedef void (*mt_format_progress_fn)(void *user, long done, long total);

typedef struct {
    size_t max_input_bytes;        /* largest file accepted */
    size_t max_part_bytes;         /* largest uncompressed XML part read from a zip */
    size_t max_total_uncompressed; /* sum of a zip's declared entry sizes (zip bombs) */
    long max_entries;              /* entries in a zip */
    long max_units;                /* units (lines, cues, paragraphs) in one file */
    int batch_units;               /* units per translate call */
} mt_format_options;

/* Defaults: 10 MiB files, 64 MiB parts, 256 MiB unpacked, 10000 entries, 100000
 * units, 32 units per call. */
mt_format_options mt_format_options_default(void);

/* Initialises libxml2; call once before threads use this module. */
void mt_format_global_init(void);

/* Format from the file name's extension, else from the content; UNKNOWN if neither. */
mt_file_format mt_format_detect(const char *filename, const unsigned char *data, size_t len);
const char *mt_format_name(mt_file_format fmt);      /* "docx" ... */
const char *mt_format_mime(mt_file_format fmt);      /* Content-Type of such a file */
/* Comma-separated extensions handled (".txt,.html,...") for /frontend/settings. */
const char *mt_format_extensions(void);

/* Translates data[0..len) of format fmt into *out (malloc'd, *out_len bytes). */
int mt_format_translate(mt_file_format fmt, const unsigned char *data, size_t len,
                        const mt_format_options *opt, mt_format_translate_fn translate,
                        mt_format_progress_fn progress, void *user, unsigned char **out,
                        size_t *out_len, char *err, size_t errlen);

#endif
