/* xml.c: the XML layer of .docx/.odt. See format_xml.h for the contract. */
#include "format_xml.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/SAX2.h>
#include <libxml/tree.h>

#include "format_int.h"

#define W_NS "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
#define TEXT_NS "urn:oasis:names:tc:opendocument:xmlns:text:1.0"

/* A paragraph and the nodes that hold its text (w:t elements or text nodes). */
typedef struct {
    xmlNode **nodes;
    size_t *lens; /* bytes of text each node holds */
    int n, cap;
    char *text; /* concatenated text, owned; NULL: blank, not a unit */
} para;

struct fmt_xml {
    xmlDoc *doc;
    int docx;
    para *p;
    long n, cap;
    long *units; /* indexes of the paragraphs with text */
    long n_units;
};

/* ---- parsing with limits ----------------------------------------------------------- */

typedef struct {
    const mt_format_options *opt;
    long *nodes_left;
    int code;      /* why the parser was stopped; 0 if it was not */
    char why[200]; /* and what the message says */
    startElementNsSAX2Func start;
    charactersSAXFunc characters, cdata;
    commentSAXFunc comment;
    processingInstructionSAXFunc pi;
} limits;

static void stop(xmlParserCtxtPtr ctx, int code, const char *why)
{
    limits *l = ctx->_private;
    if (!l->code) {
        l->code = code;
        snprintf(l->why, sizeof l->why, "%s", why);
    }
    xmlStopParser(ctx);
}

/* Bytes of attribute names and values that cost one node more (see attribute_nodes). */
#define ATTR_BYTES_PER_NODE 128

/* Spends n of the file's node budget (attrs: n is a start tag's attributes). */
static int take_nodes(xmlParserCtxtPtr ctx, long n, int attrs)
{
    limits *l = ctx->_private;
    if (l->code) return -1;
    if (n > *l->nodes_left) {
        *l->nodes_left = -1;
        char why[200];
        if (attrs)
            snprintf(why, sizeof why, "attributes past the document's budget of %ld XML "
                     "nodes (an attribute counts 2, and 1 per %d bytes)", l->opt->max_nodes,
                     ATTR_BYTES_PER_NODE);
        else
            snprintf(why, sizeof why, "more than %ld XML nodes (elements, attributes, texts, "
                     "comments) in the document", l->opt->max_nodes);
        stop(ctx, MT_FORMAT_TOO_LARGE, why);
        return -1;
    }
    *l->nodes_left -= n;
    return 0;
}

static int take_node(xmlParserCtxtPtr ctx) { return take_nodes(ctx, 1, 0); }

/* What a start tag's attributes cost in nodes, charged before libxml2 builds them: each
 * attribute is two nodes in the tree (the attribute and the text node of its value, over
 * 200 bytes together), each xmlns declaration one, and every ATTR_BYTES_PER_NODE bytes of
 * names and values one more, so the budget bounds the tree's memory whatever the tags
 * carry: 9 MiB of short attributes would otherwise build a tree of about 400 MB. */
static long attribute_nodes(int n_ns, int n_attr, const xmlChar **attr)
{
    size_t bytes = 0;
    for (int i = 0; i < n_attr; i++)
        bytes += strlen((const char *)attr[5 * i]) + (size_t)(attr[5 * i + 4] - attr[5 * i + 3]);
    return (long)n_ns + 2L * n_attr + (long)(bytes / ATTR_BYTES_PER_NODE);
}

static void on_subset(void *c, const xmlChar *name, const xmlChar *ext, const xmlChar *sys)
{
    (void)name, (void)ext, (void)sys;
    stop(c, MT_FORMAT_INVALID, "a document type declaration (DOCTYPE, DTD or entities): "
         "not allowed in office documents");
}

static void on_start(void *c, const xmlChar *local, const xmlChar *prefix, const xmlChar *uri,
                     int n_ns, const xmlChar **ns, int n_attr, int n_def, const xmlChar **attr)
{
    xmlParserCtxtPtr ctx = c;
    limits *l = ctx->_private;
    if (take_node(ctx) != 0) return;
    if (ctx->nameNr > l->opt->max_depth) {
        char why[200];
        snprintf(why, sizeof why, "elements nested more than %d deep", l->opt->max_depth);
        stop(ctx, MT_FORMAT_TOO_LARGE, why);
        return;
    }
    /* libxml2 looks each prefixed name up in the declarations in scope one by one (and
     * again up the tree when it builds the attribute): 120 levels declaring 127 prefixes
     * each made every later attribute cost 15,000 comparisons, 57 s of CPU for one 9 MiB
     * part. Real documents declare a few dozen, at the root. */
    if (ctx->nsNr / 2 > l->opt->max_attributes) {
        char why[200];
        snprintf(why, sizeof why, "more than %d namespace declarations (xmlns) in scope",
                 l->opt->max_attributes);
        stop(ctx, MT_FORMAT_TOO_LARGE, why);
        return;
    }
    for (int i = 0; i < n_attr; i++) {
        size_t n = (size_t)(attr[5 * i + 4] - attr[5 * i + 3]);
        if (n > l->opt->max_attr_bytes) {
            char why[200];
            snprintf(why, sizeof why, "attribute '%.40s' of %zu bytes, more than the limit "
                     "of %zu", (const char *)attr[5 * i], n, l->opt->max_attr_bytes);
            stop(ctx, MT_FORMAT_TOO_LARGE, why);
            return;
        }
    }
    if (take_nodes(ctx, attribute_nodes(n_ns, n_attr, attr), 1) != 0) return;
    l->start(c, local, prefix, uri, n_ns, ns, n_attr, n_def, attr);
}

static void on_chars(void *c, const xmlChar *s, int n)
{
    if (take_node(c) == 0) ((limits *)((xmlParserCtxtPtr)c)->_private)->characters(c, s, n);
}

static void on_cdata(void *c, const xmlChar *s, int n)
{
    if (take_node(c) == 0) ((limits *)((xmlParserCtxtPtr)c)->_private)->cdata(c, s, n);
}

static void on_comment(void *c, const xmlChar *s)
{
    if (take_node(c) == 0) ((limits *)((xmlParserCtxtPtr)c)->_private)->comment(c, s);
}

static void on_pi(void *c, const xmlChar *target, const xmlChar *data)
{
    if (take_node(c) == 0) ((limits *)((xmlParserCtxtPtr)c)->_private)->pi(c, target, data);
}

/* Where a run of bytes [p, end) first holds the string s (n bytes); end if nowhere.
 * memmem is linear in glibc (two-way), so the scan below stays linear. */
static const unsigned char *find(const unsigned char *p, const unsigned char *end,
                                 const char *s, size_t n)
{
    const unsigned char *f = memmem(p, (size_t)(end - p), s, n);
    return f ? f : end;
}

static int is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* libxml2 (2.9) checks each attribute and namespace declaration of a start tag against
 * all earlier ones of that tag, before any callback of ours runs: one element with 60,000
 * attributes costs seconds of CPU. So the raw bytes are scanned first, once, and a start
 * tag with more than max attributes is refused. The scan counts the '=' of a start tag
 * outside its quoted values (each attribute or xmlns declaration has exactly one) and
 * skips comments, CDATA sections and processing instructions. Where the markup is broken
 * it errs on counting: a quote opens a value only right after '=', and a '<' ends the
 * tag (or the value: no '<' is allowed in one), scanning on from that '<', so no start
 * tag libxml2 might still read is ever skipped. Returns the offset of the first tag
 * over the limit, or -1. */
static long too_many_attributes(const unsigned char *data, size_t len, int max)
{
    const unsigned char *p = data, *end = data + len;
    while ((p = memchr(p, '<', (size_t)(end - p))) != NULL) {
        const unsigned char *tag = p++;
        size_t left = (size_t)(end - p);
        if (left >= 3 && memcmp(p, "!--", 3) == 0) {
            p = find(p + 3, end, "-->", 3);
            continue;
        }
        if (left >= 8 && memcmp(p, "![CDATA[", 8) == 0) {
            p = find(p + 8, end, "]]>", 3);
            continue;
        }
        if (left >= 1 && *p == '?') {
            p = find(p + 1, end, "?>", 2);
            continue;
        }
        if (left >= 1 && (*p == '!' || *p == '/')) continue; /* DOCTYPE (refused), end tag */
        int n = 0;
        while (p < end && *p != '<' && *p != '>') {
            if (*p++ != '=') continue;
            if (++n > max) return (long)(tag - data);
            while (p < end && is_space(*p)) p++;
            if (p < end && (*p == '"' || *p == '\'')) {
                unsigned char q = *p++;
                while (p < end && *p != q && *p != '<') p++;
                if (p < end && *p == q) p++;
            }
        }
    }
    return -1;
}

/* The line (from 1) of data[off]. */
static long line_at(const unsigned char *data, size_t off)
{
    long line = 1;
    for (const unsigned char *p = data, *end = data + off;
         (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++)
        line++;
    return line;
}

static xmlDoc *parse(const unsigned char *data, size_t len, const char *what,
                     const mt_format_options *opt, long *nodes_left, int *code, char *err,
                     size_t errlen)
{
    if (len > INT_MAX) {
        *code = fmt_fail(MT_FORMAT_TOO_LARGE, err, errlen, "%s: too large", what);
        return NULL;
    }
    long at = too_many_attributes(data, len, opt->max_attributes);
    if (at >= 0) {
        *code = fmt_fail(MT_FORMAT_TOO_LARGE, err, errlen, "%s: line %ld: an element with "
                         "more than %d attributes (refused)", what, line_at(data, (size_t)at),
                         opt->max_attributes);
        return NULL;
    }
    xmlParserCtxtPtr ctx = xmlCreateMemoryParserCtxt((const char *)data, (int)len);
    if (!ctx) {
        *code = fmt_fail(MT_FORMAT_FAILED, err, errlen, "out of memory");
        return NULL;
    }
    /* No network, no DTD loading, no entity substitution (XML_PARSE_NOENT and
     * XML_PARSE_DTDLOAD are never set), no XML_PARSE_HUGE: libxml2 keeps its own caps. */
    xmlCtxtUseOptions(ctx, XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    limits l = {.opt = opt, .nodes_left = nodes_left};
    xmlSAXHandler *sax = ctx->sax;
    l.start = sax->startElementNs;
    l.characters = sax->characters;
    l.cdata = sax->cdataBlock;
    l.comment = sax->comment;
    l.pi = sax->processingInstruction;
    if (!l.start || !l.characters || !l.cdata || !l.comment || !l.pi) {
        xmlFreeParserCtxt(ctx);
        *code = fmt_fail(MT_FORMAT_FAILED, err, errlen, "%s: libxml2 without SAX2", what);
        return NULL;
    }
    ctx->_private = &l;
    sax->internalSubset = on_subset;
    sax->startElementNs = on_start;
    sax->characters = on_chars;
    sax->ignorableWhitespace = on_chars;
    sax->cdataBlock = on_cdata;
    sax->comment = on_comment;
    sax->processingInstruction = on_pi;
    xmlParseDocument(ctx);
    xmlDoc *doc = ctx->myDoc;
    ctx->myDoc = NULL;
    int line = ctx->input ? ctx->input->line : 0;
    if (l.code) {
        *code = fmt_fail(l.code, err, errlen, "%s: line %d: %s (refused)", what, line, l.why);
        xmlFreeDoc(doc);
        doc = NULL;
    } else if (!doc || !ctx->wellFormed) {
        /* The context keeps the first error: what and where. */
        xmlErrorPtr e = xmlCtxtGetLastError(ctx);
        char msg[256];
        snprintf(msg, sizeof msg, "%s", e && e->message ? e->message : "not well-formed");
        msg[strcspn(msg, "\n")] = '\0';
        *code = fmt_fail(e && e->code == XML_ERR_NO_MEMORY ? MT_FORMAT_FAILED
                                                          : MT_FORMAT_INVALID,
                         err, errlen, "%s: line %d: invalid XML: %s", what, e ? e->line : line,
                         msg);
        xmlFreeDoc(doc);
        doc = NULL;
    }
    ctx->_private = NULL;
    xmlFreeParserCtxt(ctx);
    return doc;
}

/* ---- paragraphs ---------------------------------------------------------------------- */

static int is_el(const xmlNode *n, const char *ns, const char *name)
{
    return n->type == XML_ELEMENT_NODE && n->ns && n->ns->href &&
           strcmp((const char *)n->ns->href, ns) == 0 &&
           strcmp((const char *)n->name, name) == 0;
}

static int is_para(const fmt_xml *x, const xmlNode *n)
{
    return x->docx ? is_el(n, W_NS, "p") : (is_el(n, TEXT_NS, "p") || is_el(n, TEXT_NS, "h"));
}

/* The node after n in document order below root, entering n's children if descend. */
static xmlNode *walk_next(xmlNode *n, const xmlNode *root, int descend)
{
    if (descend && n->type == XML_ELEMENT_NODE && n->children) return n->children;
    for (; n && n != root; n = n->parent)
        if (n->next) return n->next;
    return NULL;
}

static int para_push(para *p, xmlNode *node, size_t len)
{
    if (p->n == p->cap) {
        int cap = p->cap ? p->cap * 2 : 8;
        xmlNode **nn = realloc(p->nodes, (size_t)cap * sizeof *nn);
        if (nn) p->nodes = nn;
        size_t *nl = realloc(p->lens, (size_t)cap * sizeof *nl);
        if (nl) p->lens = nl;
        if (!nn || !nl) return -1;
        p->cap = cap;
    }
    p->nodes[p->n] = node;
    p->lens[p->n++] = len;
    return 0;
}

static size_t text_len(const xmlNode *n)
{
    return n->content ? strlen((const char *)n->content) : 0;
}

/* Collects paragraph p's text holders below its element, not entering nested paragraphs
 * (text boxes, frames: paragraphs of their own) nor ODF notes (citation and body are not
 * running text of this paragraph), and joins their text. */
static int para_collect(const fmt_xml *x, xmlNode *el, para *p)
{
    fmt_buf b = {0};
    for (xmlNode *c = el->children; c;) {
        int descend = 1;
        if (is_para(x, c) || (!x->docx && is_el(c, TEXT_NS, "note"))) {
            descend = 0;
        } else if (x->docx && is_el(c, W_NS, "t")) {
            descend = 0;
            size_t n = 0;
            for (xmlNode *t = c->children; t; t = t->next) {
                fmt_buf_put(&b, t->content ? t->content : (const xmlChar *)"", text_len(t));
                n += text_len(t);
            }
            if (para_push(p, c, n) != 0) b.oom = 1;
        } else if (!x->docx && (c->type == XML_TEXT_NODE || c->type == XML_CDATA_SECTION_NODE)) {
            fmt_buf_put(&b, c->content ? c->content : (const xmlChar *)"", text_len(c));
            if (para_push(p, c, text_len(c)) != 0) b.oom = 1;
        }
        c = walk_next(c, el, descend);
    }
    if (b.oom) {
        free(b.p);
        return -1;
    }
    if (!b.p || fmt_is_blank((const char *)b.p, b.n)) free(b.p);
    else p->text = (char *)b.p;
    return 0;
}

/* Finds every paragraph in document order (outer before nested) and its text. */
static int find_paras(fmt_xml *x, const char *what, int *code, char *err, size_t errlen)
{
    xmlNode *root = xmlDocGetRootElement(x->doc);
    for (xmlNode *c = root; c;) {
        int descend = 1;
        if (x->docx && is_el(c, W_NS, "t")) {
            descend = 0;
            for (xmlNode *t = c->children; t; t = t->next) {
                if (t->type == XML_TEXT_NODE || t->type == XML_CDATA_SECTION_NODE) continue;
                *code = fmt_fail(MT_FORMAT_INVALID, err, errlen,
                                 "%s: line %ld: <%s> inside a text run <w:t> (text runs hold "
                                 "only text; refused)", what, xmlGetLineNo(t),
                                 t->name ? (const char *)t->name : "?");
                return -1;
            }
        } else if (is_para(x, c)) {
            if (x->n == x->cap) {
                long cap = x->cap ? x->cap * 2 : 64;
                para *np = realloc(x->p, (size_t)cap * sizeof *np);
                if (!np) goto oom;
                x->p = np;
                x->cap = cap;
            }
            para *p = &x->p[x->n++];
            memset(p, 0, sizeof *p);
            if (para_collect(x, c, p) != 0) goto oom;
        }
        c = walk_next(c, root, descend);
    }
    x->units = malloc((size_t)(x->n ? x->n : 1) * sizeof *x->units);
    if (!x->units) goto oom;
    for (long i = 0; i < x->n; i++)
        if (x->p[i].text) x->units[x->n_units++] = i;
    return 0;
oom:
    *code = fmt_fail(MT_FORMAT_FAILED, err, errlen, "out of memory");
    return -1;
}

fmt_xml *fmt_xml_parse(const unsigned char *data, size_t len, int docx, const char *what,
                       const mt_format_options *opt, long *nodes_left, int *code, char *err,
                       size_t errlen)
{
    fmt_xml *x = calloc(1, sizeof *x);
    if (!x) {
        *code = fmt_fail(MT_FORMAT_FAILED, err, errlen, "out of memory");
        return NULL;
    }
    x->docx = docx;
    x->doc = parse(data, len, what, opt, nodes_left, code, err, errlen);
    if (!x->doc) {
        free(x);
        return NULL;
    }
    if (!xmlDocGetRootElement(x->doc)) {
        *code = fmt_fail(MT_FORMAT_INVALID, err, errlen, "%s: no root element", what);
        fmt_xml_free(x);
        return NULL;
    }
    if (find_paras(x, what, code, err, errlen) != 0) {
        fmt_xml_free(x);
        return NULL;
    }
    *code = MT_FORMAT_OK;
    return x;
}

long fmt_xml_count(const fmt_xml *x) { return x->n_units; }

const char *fmt_xml_text(const fmt_xml *x, long i) { return x->p[x->units[i]].text; }

void fmt_xml_replace(fmt_xml *x, long i, const char *translation)
{
    para *p = &x->p[x->units[i]];
    int best = 0;
    for (int j = 1; j < p->n; j++)
        if (p->lens[j] > p->lens[best]) best = j;
    for (int j = 0; j < p->n; j++) {
        xmlNode *t = p->nodes[j];
        if (x->docx) {
            /* A w:t holds only text nodes (find_paras refused anything else). */
            while (t->children) {
                xmlNode *c = t->children;
                xmlUnlinkNode(c);
                xmlFreeNode(c);
            }
            if (j != best) continue;
            xmlAddChild(t, xmlNewText((const xmlChar *)translation));
            /* Leading/trailing spaces in the translation must survive Word. */
            xmlNs *xml = xmlSearchNsByHref(t->doc, t, XML_XML_NAMESPACE);
            if (xml) xmlSetNsProp(t, xml, (const xmlChar *)"space", (const xmlChar *)"preserve");
        } else {
            if (j == best) xmlReplaceNode(t, xmlNewText((const xmlChar *)translation));
            else xmlUnlinkNode(t);
            xmlFreeNode(t);
        }
    }
    p->n = 0; /* the holders are gone: a second replace must not touch them */
}

int fmt_xml_dump(fmt_xml *x, unsigned char **out, size_t *len, char *err, size_t errlen)
{
    xmlChar *xml = NULL;
    int n = 0;
    xmlDocDumpMemoryEnc(x->doc, &xml, &n, "UTF-8");
    if (!xml) return fmt_fail(MT_FORMAT_FAILED, err, errlen, "out of memory");
    /* xmlFree is free() unless an application replaced it, which this program does not,
     * so the caller may free() the result. */
    *out = xml;
    *len = (size_t)n;
    return MT_FORMAT_OK;
}

void fmt_xml_free(fmt_xml *x)
{
    if (!x) return;
    for (long i = 0; i < x->n; i++) {
        free(x->p[i].nodes);
        free(x->p[i].lens);
        free(x->p[i].text);
    }
    free(x->p);
    free(x->units);
    xmlFreeDoc(x->doc);
    free(x);
}
