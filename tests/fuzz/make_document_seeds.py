#!/usr/bin/python3
"""Writes the seed corpora of the document fuzzers (committed; rerun to regenerate):

  tests/fuzz/formats/  fuzz-formats: a format byte (0 txt, 1 html, 2 srt, 3 docx, 4 odt)
                       then a whole file
  tests/fuzz/zip/      fuzz-zip: a zip archive
  tests/fuzz/xml/      fuzz-xml: a byte (even: docx part, odd: odt part) then an XML part

Real documents come from Debian's python3-docx and python3-odf (scripts/install-deps.sh);
the layouts and hostile shapes that crashed or swamped the server are written byte by
byte (tests/document_samples.py), kept small so the fuzzers start from them.
Usage: tests/fuzz/make_document_seeds.py [OUT_DIR]   (default: tests/fuzz)"""
import io
import os
import struct
import sys
import zipfile
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from document_samples import GOOD, HELLO, ODT_NS, PNG, W, body, docx  # noqa: E402


def png_1x1():
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data)))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(b"\0\xff\0\0")) + chunk(b"IEND", b""))


def python_docx():
    import docx as pydocx
    d = pydocx.Document()
    d.add_heading("A man is riding a bicycle.", level=1)
    p = d.add_paragraph("Two dogs ")
    p.add_run("play").bold = True
    p.add_run(" in the snow.").italic = True
    t = d.add_table(rows=1, cols=2)
    t.cell(0, 0).text = "A cell."
    t.cell(0, 1).text = "Another cell."
    d.add_picture(io.BytesIO(png_1x1()))
    d.add_paragraph("After the picture.")
    d.sections[0].header.paragraphs[0].text = "Page header"
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


def python_odf():
    from odf.opendocument import OpenDocumentText
    from odf.style import Style, TextProperties
    from odf.text import H, P, Span
    from odf.draw import Frame, Image
    doc = OpenDocumentText()
    bold = Style(name="B", family="text")
    bold.addElement(TextProperties(fontweight="bold"))
    doc.automaticstyles.addElement(bold)
    doc.text.addElement(H(outlinelevel=1, text="A little girl is eating an apple."))
    p = P(text="The band ")
    p.addElement(Span(stylename=bold, text="is playing"))
    p.addText(" on stage.")
    doc.text.addElement(p)
    href = doc.addPicture("Pictures/pixel.png", "image/png", png_1x1())
    frame = Frame(width="1cm", height="1cm", anchortype="paragraph")
    frame.addElement(Image(href=href))
    p2 = P(text="A picture: ")
    p2.addElement(frame)
    doc.text.addElement(p2)
    out = io.BytesIO()
    doc.write(out)
    return out.getvalue()


def part(data, name):
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return z.read(name)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    real_docx, real_odt = python_docx(), python_odf()
    nested = docx(body("<w:p><w:r><w:t>outer<w:p><w:r><w:t>inner</w:t></w:r></w:p></w:t></w:r>"
                       "</w:p>"))
    entity = docx(('<?xml version="1.0"?><!DOCTYPE d [<!ENTITY e "%s">]><w:document %s><w:body>'
                   '<w:p><w:r><w:t>%s</w:t></w:r></w:p></w:body></w:document>'
                   % ("x" * 600, W, "&e;" * 20)).encode())
    textbox = body("<w:p><w:r><w:t>before </w:t></w:r><w:r><w:pict><w:txbxContent><w:p><w:r>"
                   "<w:t>in the box</w:t></w:r></w:p></w:txbxContent></w:pict></w:r><w:r>"
                   "<w:t xml:space=\"preserve\"> after</w:t></w:r></w:p>")
    zips = {"python-docx.docx": real_docx, "odfpy.odt": real_odt, "nested.docx": nested,
            "entity.docx": entity, "textbox.docx": docx(textbox),
            "duplicate.docx": docx(HELLO, after=[("word/document.xml", HELLO, {})]),
            "encrypted.docx": docx(HELLO, after=[("a.png", PNG[:64], {"encrypted": True})]),
            "traversal.docx": docx(HELLO, after=[("../x", b"x", {})]),
            "lying.docx": docx(HELLO, after=[("word/footnotes.xml", HELLO,
                                              {"deflate": True, "lie_size": 10})])}
    for name, data, _ in GOOD:
        zips[name] = data
    seeds = {"formats": {}, "zip": {}, "xml": {}}
    for name, data in zips.items():
        fmt = b"\x04" if name.endswith(".odt") else b"\x03"
        seeds["formats"][name.replace(".", "-")] = fmt + data
        seeds["zip"][name.replace(".", "-")] = data
    seeds["xml"]["docx-python-docx"] = b"\x00" + part(real_docx, "word/document.xml")
    seeds["xml"]["docx-python-docx-header"] = b"\x00" + part(real_docx, "word/header1.xml")
    seeds["xml"]["odt-odfpy"] = b"\x01" + part(real_odt, "content.xml")
    seeds["xml"]["docx-textbox"] = b"\x00" + textbox
    seeds["xml"]["docx-nested"] = b"\x00" + part(nested, "word/document.xml")
    seeds["xml"]["docx-entity"] = b"\x00" + part(entity, "word/document.xml")
    # One element over the 512-attribute limit, values holding '>' and '=', next to a
    # comment, a PI and a CDATA section holding tag-like text that must not be counted.
    tag = "<x%s>" % "".join(" b%d='>'" % i for i in range(8))
    seeds["xml"]["docx-attributes"] = b"\x00" + body(
        "<!-- %s --><?pi %s?><w:p><w:r><w:t><![CDATA[%s]]></w:t></w:r></w:p><w:p%s><w:r>"
        "<w:t>Hi</w:t></w:r></w:p>" % (tag, tag, tag, "".join(" a%d='x=>y'" % i
                                                              for i in range(513))))
    seeds["xml"]["odt-note-cdata"] = b"\x01" + (
        '<?xml version="1.0"?><office:document-content %s><office:body><office:text><text:p>'
        'A note<text:note><text:note-body><text:p>inside</text:p></text:note-body></text:note>'
        ' and <![CDATA[raw & text]]></text:p><text:h>Title</text:h></office:text></office:body>'
        '</office:document-content>' % ODT_NS).encode()
    for corpus, files in seeds.items():
        d = os.path.join(out, corpus)
        os.makedirs(d, exist_ok=True)
        for name, data in files.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
        print("%s: %d seeds" % (d, len(files)))


if __name__ == "__main__":
    main()
