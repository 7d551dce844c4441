/* glossary.h: a glossary's entries read from DeepL's entry formats, TSV ("source<TAB>
 * target" per line) and CSV (RFC 4180: "source,target" or "source,target,source_lang,
 * target_lang" per record), with DeepL's rules: lines end in \n, \r\n or \r, empty lines
 * are skipped, terms are valid UTF-8 with their surrounding spaces trimmed, neither term
 * is empty or holds a C0 or C1 control character, U+2028/U+2029 or U+FEFF, a source term appears
 * once, and CSV language columns, when present, name the glossary's languages. Every
 * error names its line. The entries keep their order; mt_glossary_tsv() writes them
 * back as TSV (reading that gives the same entries).
 *
 * Thread-safety: parsing is a pure function; a glossary is immutable once read and may
 * be shared by any number of threads.
 */
#ifndef MT_TRANSLATOR_GLOSSARY_H
#define MT_TRANSLATOR_GLOSSARY_H

#include <stddef.h>

typedef enum { MT_GLOSSARY_TSV = 0, MT_GLOSSARY_CSV = 1 } mt_glossary_format;

/* At most this many entries in one glossary. */
enum { MT_GLOSSARY_MAX_ENTRIES = 100000 };

typedef struct mt_glossary mt_glossary;

/* Reads text[0, len) (no NUL needed). source / target: the glossary's languages, checked
 * against CSV language columns (NULL: not checked). 0 with *out set (free with
 * mt_glossary_free), or -1 with a message ("line 3: ...") and *out NULL. An input without
 * any entry is an error, as DeepL has it. */
int mt_glossary_parse(const char *text, size_t len, mt_glossary_format fmt, const char *source,
                      const char *target, mt_glossary **out, char *err, size_t errlen);
int mt_glossary_count(const mt_glossary *g);
/* Entry i's terms (NUL-terminated UTF-8, owned by g). */
const char *mt_glossary_source(const mt_glossary *g, int i);
const char *mt_glossary_target(const mt_glossary *g, int i);
/* The entries as TSV, one "source\ttarget\n" per entry (malloc'd; NULL out of memory). */
char *mt_glossary_tsv(const mt_glossary *g);
void mt_glossary_free(mt_glossary *g);

/* ---- enforcement: source terms masked before translation, target terms put back ----
 *
 * A source term occurs where its bytes stand between word boundaries (a word character
 * is an ASCII letter or digit, '_' or any non-ASCII character; a term that starts or ends
 * in another character needs no boundary there), its first letter in either case ("File"
 * matches "file"), the longest term winning where several start at one place. Nothing
 * inside a protected span (protect.h: URLs, placeholders...) or, with markup set, inside
 * an HTML tag or entity is matched. Each occurrence becomes a brace field "{N}" (N above
 * every "{digits}" the text holds), which the service keeps byte for byte and places by
 * alignment like any placeholder (MT_PROTECT_FORMAT); after translation every field
 * becomes its entry's target term, its first letter upper-cased when the occurrence's
 * was upper and the term's not and the field starts the translation. Inflected forms
 * ("files" for "file") are not matched: an entry per form, as DeepL's glossaries have it. */
typedef struct mt_glossary_masked mt_glossary_masked;

/* Masks the terms of g in text[0, len); the result copies what it needs (g may be freed
 * after). NULL only out of memory. */
mt_glossary_masked *mt_glossary_mask(const mt_glossary *g, const char *text, size_t len, int markup);
/* The masked text (NUL-terminated, owned by m) and the number of occurrences masked. */
const char *mt_glossary_masked_text(const mt_glossary_masked *m);
int mt_glossary_masked_count(const mt_glossary_masked *m);
/* translation with every mask of m replaced by its target term (a mask missing from it,
 * which the service's placement prevents, is appended after a space; extra copies are
 * dropped). malloc'd; NULL out of memory. */
char *mt_glossary_unmask(const mt_glossary_masked *m, const char *translation);
/* 1 when translation holds every masked occurrence's target term (each as often as it
 * was masked, first letter in either case, inside a longer word too: "Dateimanager"
 * holds "Datei"), else 0: a translation made without masks that already says what the
 * glossary wants. */
int mt_glossary_masked_present(const mt_glossary_masked *m, const char *translation);
void mt_glossary_masked_free(mt_glossary_masked *m);

#endif
