/* format_xml.h: the XML layer of .docx/.odt (libxml2): parses one part with limits,
 * finds its paragraphs and their text, puts translations back and serialises it.
 *
 * Parsing never loads a DTD, resolves an entity or touches the network: a part that
 * declares a DOCTYPE (which is where entities live: XXE, billion laughs, one entity used
 * thousands of times) is refused as soon as the declaration is read, as are parts
 * deeper than opt->max_depth, attributes longer than opt->max_attr_bytes, elements with more
 * than opt->max_attributes attributes (found by a linear scan of the bytes before libxml2,
 * whose duplicate check is quadratic in them, sees the part), more than that many xmlns
 * declarations in scope (libxml2 looks prefixes up through them one by one) and parts that
 * would take the file past its node budget (a node costs libxml2 over 100 bytes, so the
 * budget bounds memory where the byte limits cannot: 16 MiB of "<a/>" is 4 million;
 * attributes count as 2 nodes each, plus 1 per 128 bytes of their names and values).
 *
 * Paragraphs: .docx w:p, whose text is in its w:t elements (a w:t holding an element is
 * refused: text runs hold text); .odt text:p and text:h, whose text is in their text
 * nodes, ODF notes left out. A paragraph nested in another (text boxes, frames) is one of
 * its own; each text holder belongs to its innermost paragraph only, so replacing one
 * paragraph never touches another's nodes. Tree walks are iterative.
 *
 * A part belongs to one thread at a time.
 */
#ifndef MT_FORMAT_XML_H
#define MT_FORMAT_XML_H

#include <stddef.h>

#include "formats.h"

typedef struct fmt_xml fmt_xml;

/* Parses data[0..len) (what names the part in messages); *nodes_left is the file's node
 * budget, decreased by the part's nodes. NULL with the status in *code on failure. */
fmt_xml *fmt_xml_parse(const unsigned char *data, size_t len, int docx, const char *what,
                       const mt_format_options *opt, long *nodes_left, int *code, char *err,
                       size_t errlen);
long fmt_xml_count(const fmt_xml *x);             /* paragraphs with non-blank text */
const char *fmt_xml_text(const fmt_xml *x, long i); /* paragraph i's text, NUL-terminated */
/* Puts paragraph i's translation into the text holder with the most source text (its
 * run carries the paragraph's dominant formatting), the others emptied or removed. */
void fmt_xml_replace(fmt_xml *x, long i, const char *translation);
/* The part serialised as UTF-8 (malloc'd, *len bytes): 0 or MT_FORMAT_FAILED. */
int fmt_xml_dump(fmt_xml *x, unsigned char **out, size_t *len, char *err, size_t errlen);
void fmt_xml_free(fmt_xml *x);

#endif
