"""Documents for the file-translation tests and fuzz seeds, written byte by byte
(raw_zip) so the entry order, duplicate names, flags and lying sizes are exactly what an
attacker or an office suite would send: GOOD (layouts that made libzip free the caller's
buffer) and HOSTILE (documents that must be refused, with what the error must say).
Used by tests/test_documents.py and tests/fuzz/make_document_seeds.py."""
import struct
import zlib

W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
ODT_NS = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
          'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"')


def raw_zip(entries):
    """entries: (name, bytes, options) with options a dict of deflate (bool), encrypted
    (bool), lie_size (int). Local headers, data and central directory in this order."""
    body, cd = b"", b""
    for name, data, opt in entries:
        name = name.encode()
        crc = zlib.crc32(data)
        packed = data
        if opt.get("deflate"):
            c = zlib.compressobj(9, zlib.DEFLATED, -15)
            packed = c.compress(data) + c.flush()
        method = 8 if opt.get("deflate") else 0
        flags = 1 if opt.get("encrypted") else 0
        usize = opt.get("lie_size", len(data))
        head = struct.pack("<HHHHHIIIHH", 20, flags, method, 0, 0x21, crc, len(packed), usize,
                           len(name), 0)
        cd += (struct.pack("<IH", 0x02014B50, 20) + head +
               struct.pack("<HHHII", 0, 0, 0, 0, len(body)) + name)
        body += struct.pack("<I", 0x04034B50) + head + name + packed
    return (body + cd + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries),
                                    len(cd), len(body), 0))


def docx(document, before=(), after=()):
    """A .docx whose word/document.xml comes after `before` and before `after` entries."""
    ct = (b'<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
          b'content-types"><Default Extension="xml" ContentType="application/xml"/></Types>')
    rels = (b'<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/'
            b'package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.'
            b'openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
            b'Target="word/document.xml"/></Relationships>')
    d = {"deflate": True}
    return raw_zip([("[Content_Types].xml", ct, d), ("_rels/.rels", rels, d)] + list(before) +
                   [("word/document.xml", document, d)] + list(after))


def body(paras):
    return ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<w:document %s><w:body>%s'
            '</w:body></w:document>' % (W, paras)).encode()


PNG = b"\x89PNG\r\n\x1a\n" + bytes(i * 7919 % 251 for i in range(6000))
HELLO = body("<w:p><w:r><w:t>Hello world.</w:t></w:r></w:p>")


def odt_libreoffice():
    """An .odt in LibreOffice's entry order: the picture before content.xml."""
    content = ('<?xml version="1.0" encoding="UTF-8"?><office:document-content %s '
               'office:version="1.3"><office:body><office:text><text:p>A dog runs.</text:p>'
               '</office:text></office:body></office:document-content>' % ODT_NS).encode()
    d = {"deflate": True}
    return raw_zip([("mimetype", b"application/vnd.oasis.opendocument.text", {}),
                    ("Configurations2/accelerator/current.xml", b"", {}),
                    ("Pictures/1000000100000010000000.png", PNG, {}),
                    ("styles.xml", ('<?xml version="1.0"?><office:document-styles %s/>'
                                    % ODT_NS).encode(), d),
                    ("content.xml", content, d),
                    ("meta.xml", ('<?xml version="1.0"?><office:document-meta %s/>'
                                  % ODT_NS).encode(), d),
                    ("Thumbnails/thumbnail.png", PNG[:2000], {}),
                    ("META-INF/manifest.xml", b'<?xml version="1.0"?><manifest:manifest xmlns:'
                     b'manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0"/>', d)])


# Layouts that made libzip free the caller's buffer (issue: double free, server abort).
GOOD = [
    ("last.docx", docx(HELLO), "word/document.xml"),
    ("image-first.docx", docx(HELLO, before=[("word/media/image1.png", PNG, {})]),
     "word/document.xml"),
    ("libreoffice.odt", odt_libreoffice(), "content.xml"),
]


def entity_docx():
    """1.3 KB: one 60 KB internal entity used 2,000 times (120 MB once expanded)."""
    ent = "x" * 60000
    doc = ('<?xml version="1.0"?><!DOCTYPE d [<!ENTITY e "%s">]><w:document %s><w:body><w:p>'
           '<w:r><w:t>%s</w:t></w:r></w:p></w:body></w:document>' % (ent, W, "&e;" * 2000))
    return docx(doc.encode())


def bomb_docx():
    """word/document.xml of 16 MiB of <a/>, deflating to a few KB."""
    return docx(b'<?xml version="1.0"?><w:document ' + W.encode() + b'><w:body>' +
                b"<a/>" * (4 << 20) + b"</w:body></w:document>")


# (name, document, what the error must say)
HOSTILE = [
    ("nested.docx", docx(body("<w:p><w:r><w:t>outer<w:p><w:r><w:t>inner</w:t></w:r></w:p>"
                              "</w:t></w:r></w:p>")), "inside a text run"),
    ("entities.docx", entity_docx(), "document type declaration"),
    ("bomb.docx", bomb_docx(), "a zip bomb"),
    ("traversal.docx", docx(HELLO, after=[("../../etc/cron.d/x", b"x", {})]), "'..' component"),
    ("absolute.docx", docx(HELLO, after=[("/etc/passwd", b"x", {})]), "an absolute path"),
    ("duplicate.docx", docx(HELLO, after=[("word/document.xml", HELLO, {})]),
     "two zip entries have the same name"),
    ("encrypted.docx", docx(HELLO, after=[("word/media/a.png", PNG, {"encrypted": True})]),
     "is encrypted"),
    ("lying.docx", docx(HELLO, after=[("word/footnotes.xml", body("<w:p/>"),
                                       {"deflate": True, "lie_size": 10})]),
     "size differs from the zip directory"),
]
