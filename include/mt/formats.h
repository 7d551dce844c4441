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
 * Hostile documents are refused before they cost memory or time: zips whose entries are
 * too many, too large, too compressed (bombs), encrypted, duplicated or named with ".."
 * or an absolute path; XML parts that declare a DTD or entities (XXE, entity expansion),
 * nest too deeply, hold too many nodes, elements with too many attributes or too long
 * attributes; a <w:p> inside a <w:t>.
 * No recursion whose depth the input controls, no work quadratic in the input.
 *
 * Ownership: the input buffer is borrowed: read, never written or freed, and no longer
 * referenced once the call returns; the caller frees it. The output is the caller's.
 *
 * Thread-safety: calls share no state and may run in several threads at once, provided
 * the process called mt_format_global_init() (libxml2's own initialisation) before
 * starting threads. Errors: an mt_format_status below zero with a message saying what
 * and where (part, line).
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

/* Results of mt_format_translate: 0, or one of these with a message in err. A caller
 * that answers over HTTP maps INVALID to 422, TOO_LARGE to 413, REFUSED to 429 (or what
 * the extracted callback's refusal means) and FAILED to 500. */
typedef enum {
    MT_FORMAT_OK = 0,
    MT_FORMAT_FAILED = -1,    /* our side: out of memory, the translate callback failed */
    MT_FORMAT_INVALID = -2,   /* the document is malformed, unsupported or hostile */
    MT_FORMAT_TOO_LARGE = -3, /* the document is over a size, count or ratio limit */
    MT_FORMAT_REFUSED = -4,   /* the extracted callback refused the document */
} mt_format_status;

/* Called once after the text is extracted and before the first translate call: `units`
 * units holding `chars` characters (code points) in all, e.g. for a characters-per-
 * minute limit that counts what is really translated rather than the compressed file.
 * Non-zero refuses the document (MT_FORMAT_REFUSED) with the message put in err. */
typedef int (*mt_format_extracted_fn)(void *user, long units, long long chars, char *err,
                                      size_t errlen);

typedef struct {
    size_t max_input_bytes;        /* largest file accepted */
    size_t max_part_bytes;         /* largest uncompressed XML part read from a zip; also
                                    * the limit on all XML parts read from one zip */
    size_t max_total_uncompressed; /* sum of a zip's declared entry sizes (zip bombs) */
    long max_entries;              /* entries in a zip */
    int max_ratio;                 /* uncompressed:compressed ratio of a part over 1 MiB */
    long max_nodes;                /* XML nodes (elements, texts, comments; an attribute
                                    * 2 and 1 per 128 bytes of it, an xmlns declaration 1)
                                    * of one file */
    int max_depth;                 /* element nesting depth in an XML part */
    int max_attributes;            /* attributes (xmlns declarations included) of one XML
                                    * element: libxml2 checks each against all earlier ones
                                    * (quadratic), so more are refused before it parses;
                                    * also the xmlns declarations in scope at once */
    size_t max_attr_bytes;         /* longest XML attribute value */
    long max_units;                /* units (lines, cues, paragraphs) in one file */
    int batch_units;               /* units per translate call */
    mt_format_extracted_fn extracted; /* may be NULL; gets the `user` of the call */
    /* mt_format_translate_isolated only: the reader process's limits */
    int child_cpu_seconds;  /* CPU time (RLIMIT_CPU) */
    size_t child_memory;    /* address space beyond what it inherits (RLIMIT_AS) */
    long child_wall_ms;     /* wall-clock time it may keep the caller waiting (not counting
                             * the translate, progress and extracted callbacks) */
} mt_format_options;

/* Defaults: 10 MiB files, 32 MiB of XML parts, 256 MiB unpacked, 10000 entries, ratio
 * 100, 1000000 nodes, depth 128, 128 attributes per element and xmlns declarations in
 * scope (Word and ODF elements have a handful, a root element a few dozen namespace
 * declarations: 33 at most in the documents of tests/ and Debian's), 1 MiB attribute values,
 * 100000 units, 32 units per call,
 * no extracted callback; a reader process of 30 s CPU, 1 GiB, 60 s. */
mt_format_options mt_format_options_default(void);

/* Initialises libxml2; call once before threads use this module. */
void mt_format_global_init(void);

/* Format from the file name's extension, else from the content; UNKNOWN if neither. */
mt_file_format mt_format_detect(const char *filename, const unsigned char *data, size_t len);
const char *mt_format_name(mt_file_format fmt);      /* "docx" ... */
const char *mt_format_mime(mt_file_format fmt);      /* Content-Type of such a file */
/* Comma-separated extensions handled (".txt,.html,...") for /frontend/settings. */
const char *mt_format_extensions(void);

/* Translates data[0..len) of format fmt into *out (malloc'd, *out_len bytes): 0, or an
 * mt_format_status below zero with *out NULL. data is borrowed (see Ownership above). */
int mt_format_translate(mt_file_format fmt, const unsigned char *data, size_t len,
                        const mt_format_options *opt, mt_format_translate_fn translate,
                        mt_format_progress_fn progress, void *user, unsigned char **out,
                        size_t *out_len, char *err, size_t errlen);

/* Reading documents in child processes with limits. An isolator owns a helper process
 * (a "zygote") that forks one child per call from its own single-threaded state, so a
 * child never inherits a lock that another thread of the caller held. Create it early,
 * before the caller starts threads (mt-server: before the HTTP daemon and the translation
 * workers); the helper holds only the memory the caller had then. If the helper dies, the
 * next call starts another one (forked from the calling thread then) and counts it in
 * mt_format_isolator_restarts. Thread-safety: one isolator may serve calls from any number
 * of threads at once; free it after they are done. */
typedef struct mt_format_isolator mt_format_isolator;
mt_format_isolator *mt_format_isolator_create(char *err, size_t errlen);
void mt_format_isolator_free(mt_format_isolator *iso);
long mt_format_isolator_restarts(mt_format_isolator *iso);

/* mt_format_translate with the document read and rebuilt in a child process of iso's
 * helper, so that a crash or runaway in a reader (libxml2, libzip, ours) costs this call,
 * never the caller's process. The child has CPU-time, address-space, file-size (none) and
 * open-file (none: no new file or socket) limits and only its socket open, ignores
 * SIGTERM/SIGINT/SIGHUP sent to a whole process group (the caller decides when its jobs
 * end); it sends the units to translate, progress and the extracted size, the caller's
 * callbacks run here in the calling thread and their answers go back. A child that is
 * killed, crashes or passes opt->child_wall_ms makes this call fail with
 * MT_FORMAT_INVALID and the reason ("... exceeded its CPU time limit of 30 s", "... was
 * killed (SIGKILL ...)"); a helper that cannot be reached, MT_FORMAT_FAILED. Same
 * arguments, results and thread-safety as mt_format_translate. Under AddressSanitizer the
 * address-space limit is left off (ASan reserves terabytes of it). */
int mt_format_translate_isolated(mt_format_isolator *iso, mt_file_format fmt,
                                 const unsigned char *data, size_t len,
                                 const mt_format_options *opt, mt_format_translate_fn translate,
                                 mt_format_progress_fn progress, void *user, unsigned char **out,
                                 size_t *out_len, char *err, size_t errlen);

#endif
