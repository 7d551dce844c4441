#!/usr/bin/env python3
"""HTML and protected spans through the real daemon (issue 17), with the bundled en-de model.

format "html" translates each block whole, with its inline elements put back around the
aligned output words and attributes kept byte for byte; URLs, e-mail addresses, @mentions,
#hashtags and software placeholders come back byte for byte, each exactly once. Mastodon
statuses and Weblate messages are sent the way those clients send them (LibreTranslate form,
q a list, api_key null or ""). Nothing here depends on a translation's wording except the
README's example, whose output the README shows.

Run: MT_BUILD_DIR=build MT_SOURCE_DIR=. /usr/bin/python3 tests/test_markup_pipeline.py
"""
import collections
import html.parser
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

BUILD = os.environ.get("MT_BUILD_DIR", "build")
SOURCE = os.environ.get("MT_SOURCE_DIR", ".")
SERVER = os.path.join(BUILD, "server", "mt-server")
CLI = os.path.join(BUILD, "cli", "mt-translate")
MODEL = os.path.join(SOURCE, "models", "en-de")

VOID = {"br", "img", "wbr", "hr", "input", "meta", "link", "area", "base", "col", "embed", "param", "source",
        "track"}


class Tags(html.parser.HTMLParser):
    """Start tags as written (with attributes, in order), end tags, and nesting errors."""

    def __init__(self):
        super().__init__(convert_charrefs=False)
        self.starts, self.ends, self.stack, self.errors = [], [], [], []

    def handle_starttag(self, tag, attrs):
        self.starts.append(self.get_starttag_text())
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.starts.append(self.get_starttag_text())

    def handle_endtag(self, tag):
        self.ends.append(tag)
        if not self.stack or self.stack[-1] != tag:
            self.errors.append("unexpected </%s> (open: %s)" % (tag, self.stack))
        else:
            self.stack.pop()


def tags(doc):
    p = Tags()
    p.feed(doc)
    p.close()
    return p


class Daemon:
    def __init__(self):
        self.log = tempfile.NamedTemporaryFile(prefix="mt-markup-", suffix=".log", delete=False)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MT_")}
        self.proc = subprocess.Popen([SERVER, "--model", MODEL, "--host", "127.0.0.1", "--port", "0",
                                      "--workers", "2"], stdout=self.log, stderr=subprocess.STDOUT, env=env)
        self.port = None
        deadline = time.time() + 180
        while time.time() < deadline:
            with open(self.log.name, encoding="utf-8", errors="replace") as f:
                m = re.search(r"event=listening host=\S+ port=(\d+)", f.read())
            if m:
                self.port = int(m.group(1))
                break
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        if self.port is None:
            raise RuntimeError("mt-server did not start: " + open(self.log.name).read())
        while time.time() < deadline:
            try:
                if self.request({"text": "ok"}, "/health", "GET")[0] == 200:
                    return
            except OSError:
                time.sleep(0.05)

    def request(self, body, path="/translate", method="POST"):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
        try:
            data = json.dumps(body) if method == "POST" else None
            conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            raw = r.read()
            return r.status, (json.loads(raw) if raw[:1] in (b"{", b"[") else raw)
        finally:
            conn.close()

    def stop(self):
        self.proc.terminate()
        rc = self.proc.wait(60)
        os.unlink(self.log.name)
        return rc


D = None


def setUpModule():
    global D
    if not os.path.exists(SERVER) or not os.path.isdir(MODEL):
        raise unittest.SkipTest("needs %s and the bundled model %s" % (SERVER, MODEL))
    D = Daemon()


def tearDownModule():
    if D:
        D.stop()


class MarkupPipeline(unittest.TestCase):
    def html(self, docs, form="native"):
        if form == "native":
            st, body = D.request({"text": docs, "format": "html"})
            self.assertEqual(st, 200, body)
            return body["translations"]
        st, body = D.request({"q": docs, "source": "en", "target": "de", "format": "html", "api_key": None})
        self.assertEqual(st, 200, body)
        return body["translatedText"]

    def assert_markup_kept(self, src, out):
        """Every start tag of src exactly as written, as often; every end tag; well-formed."""
        a, b = tags(src), tags(out)
        self.assertEqual(b.errors, [], out)
        self.assertEqual(b.stack, [], out)
        self.assertEqual(collections.Counter(a.starts), collections.Counter(b.starts), out)
        self.assertEqual(collections.Counter(a.ends), collections.Counter(b.ends), out)

    def test_readme_example(self):
        out = self.html(["<p>A <b>man</b> runs.</p>"])
        self.assertEqual(out, ["<p>Ein <b>Mann</b> rennt.</p>"])
        cli = subprocess.run([CLI, "--model", MODEL, "--input", "html"], input=b"<p>A <b>man</b> runs.</p>",
                             capture_output=True, timeout=300)
        self.assertEqual(cli.stdout.decode(), out[0])

    def test_nested_inline_elements(self):
        src = "<p>A <b>young <i>man</i></b> rides a <em>red <strong>bike</strong></em> down the street.</p>"
        for form in ("native", "libre"):
            out = self.html([src], form)[0]
            self.assert_markup_kept(src, out)
            self.assertTrue(out.startswith("<p>") and out.endswith("</p>"), out)
            # the nesting survives: <i> inside <b>, <strong> inside <em>
            self.assertRegex(out, r"<b>[^<]*<i>[^<]*</i>[^<]*</b>")
            self.assertRegex(out, r"<em>[^<]*<strong>[^<]*</strong>[^<]*</em>")

    def test_links_with_attributes_byte_for_byte(self):
        src = ('<p>A <a href="https://example.org/a?b=1&amp;c=2" title=\'Some "title"\' data-x=y>dog</a> '
               'runs on the <span class="hl" lang="en">beach</span>.</p>')
        out = self.html([src])[0]
        self.assert_markup_kept(src, out)
        self.assertIn('<a href="https://example.org/a?b=1&amp;c=2" title=\'Some "title"\' data-x=y>', out)

    def test_void_elements_and_entities(self):
        src = '<p>A man &amp; a woman<br>walk a dog. <img src="a.png" alt="x &lt; y"> Two &quot;kids&quot; play.</p>'
        out = self.html([src])[0]
        self.assert_markup_kept(src, out)
        self.assertEqual(out.count("<br>"), 1)
        self.assertEqual(out.count('<img src="a.png" alt="x &lt; y">'), 1)
        text = re.sub(r"<[^>]*>", "", out)
        self.assertNotRegex(text, r"&(?!amp;|lt;|gt;|quot;|#)")  # text is escaped
        self.assertNotIn("<", text)

    def test_markup_spanning_a_sentence_boundary(self):
        src = "<p>A man <b>runs. A dog</b> sleeps. <i>Two cats</i> play.</p>"
        out = self.html([src])[0]
        self.assert_markup_kept(src, out)

    def test_blocks_are_translated_apart_and_verbatim_parts_stay(self):
        src = ('<h1>A dog</h1>\n<ul><li>A <b>man</b> runs.</li><li>&nbsp;|&nbsp;</li></ul>'
               '<script>var s = "A dog.";</script><table><tr><td>A cat</td><td>sleeps</td></tr></table>'
               '<p translate="no">A dog runs.</p><!-- A comment. -->')
        out = self.html([src])[0]
        self.assert_markup_kept(src, out)
        for verbatim in ('<li>&nbsp;|&nbsp;</li>', '<script>var s = "A dog.";</script>',
                         '<p translate="no">A dog runs.</p>', "<!-- A comment. -->"):
            self.assertIn(verbatim, out)
        self.assertNotIn("A cat", out)

    def test_round_trip_of_random_markup_stays_well_formed(self):
        words = "a man rides a bike with a dog down the busy street near the old red house".split()
        inline = ["b", "i", "em", "strong", "span", "code", "sub", "sup", "u", "mark", "small", "abbr"]
        import random
        rng = random.Random(5)
        docs = []
        for _ in range(12):
            parts, stack = [], []
            for w in words[:rng.randint(5, len(words))]:
                r = rng.random()
                if r < 0.2:
                    t = rng.choice(inline)
                    parts.append('<%s class="c%d">' % (t, rng.randint(0, 9)))
                    stack.append(t)
                elif r < 0.35 and stack:
                    parts.append("</%s>" % stack.pop())
                elif r < 0.4:
                    parts.append("<br>")
                parts.append(w + " ")
            while stack:
                parts.append("</%s>" % stack.pop())
            docs.append("<p>" + "".join(parts).strip() + ".</p>")
        for src, out in zip(docs, self.html(docs)):
            self.assert_markup_kept(src, out)

    def test_return_alignments_with_html_is_400(self):
        st, body = D.request({"text": "<p>A</p>", "format": "html", "return_alignments": True})
        self.assertEqual(st, 400)
        self.assertIn("return_alignments", body["error"])


MENTION = '<span class="h-card" translate="no"><a href="https://social.example/@alice" class="u-url mention">@<span>alice</span></a></span>'
HASHTAG = '<a href="https://social.example/tags/opensource" class="mention hashtag" rel="tag">#<span>opensource</span></a>'
LINK = ('<a href="https://example.org/news/2024/a-very-long-article-name" target="_blank" rel="nofollow noopener">'
        '<span class="invisible">https://</span><span class="ellipsis">example.org/news/2024/a-ve</span>'
        '<span class="invisible">ry-long-article-name</span></a>')


class Mastodon(unittest.TestCase):
    """Statuses as Mastodon sends them to LibreTranslate: q a list, format html, api_key null or ""."""

    STATUSES = [
        "<p>Hello " + MENTION + ", look at this " + HASHTAG + " project!</p>",
        "<p>A man rides a bike " + "\U0001F6B2" + "<br>Read more: " + LINK + "</p><p>Mail help@example.org "
        "for tickets.</p>",
        "<p>" + MENTION + " " + HASHTAG + " A dog runs in the park " + "\U0001F415" + "</p>",
    ]

    def test_statuses_keep_markup_and_protected_spans(self):
        for key in (None, ""):
            st, body = D.request({"q": self.STATUSES, "source": "en", "target": "de", "format": "html",
                                  "api_key": key})
            self.assertEqual(st, 200, body)
            outs = body["translatedText"]
            self.assertEqual(len(outs), len(self.STATUSES))
            for src, out in zip(self.STATUSES, outs):
                MarkupPipeline.assert_markup_kept(self, src, out)
                for span in (MENTION, HASHTAG, LINK, "help@example.org", "\U0001F6B2", "\U0001F415", "<br>"):
                    self.assertEqual(out.count(span), src.count(span), (span, out))


class Weblate(unittest.TestCase):
    """Software messages as Weblate sends them: q a list of strings, api_key ""."""

    MESSAGES = [
        "The file %s could not be saved.",
        "Deleted %d files in %s.",
        "Copy %1$s to %2$s?",
        "Hello %(name)s, you have {count} new messages.",
        "Page {0} of {1}",
        "Visit https://weblate.org/ or write to support@example.org.",
    ]

    def test_every_placeholder_exactly_once(self):
        st, body = D.request({"q": self.MESSAGES, "source": "en", "target": "de", "api_key": ""})
        self.assertEqual(st, 200, body)
        for src, out in zip(self.MESSAGES, body["translatedText"]):
            spans = re.findall(r"%\d+\$s|%\([a-z]+\)s|%[sd]|\{\w*\}|https://\S+/|\S+@\S+\.org", src)
            self.assertTrue(spans, src)
            for span in spans:
                self.assertEqual(out.count(span), src.count(span), (src, out, span))


class SpansInContext(unittest.TestCase):
    """Spans keep the quotes, brackets and punctuation around them (issue 25 item 12, issue 29
    item 3), in text and HTML; do-not-translate links are kept (issue 25 item 11)."""

    OPEN, CLOSE = "'\"(„“‚‘«»‹›", "'\")“”‘’»«›‹"

    def enclosed(self, out, span):
        """span occurs in out between an opening and a closing quote or bracket."""
        return any(out[i - 1:i] and out[i - 1] in self.OPEN and out[i + len(span):i + len(span) + 1] in
                   tuple(self.CLOSE) for i in [m.start() for m in re.finditer(re.escape(span), out)])

    def check(self, outs, srcs):
        for src, out in zip(srcs, outs):
            for m in re.finditer(r"""(['"(])(https?://[^'")\s<]+|www\.[^'")\s<]+|%\.255s|%s|<x id="\d"/>)['")]""", src):
                span = m.group(2)
                self.assertEqual(out.count(span), src.count(span), (src, out, span))
                self.assertTrue(self.enclosed(out, span), (src, out, span))
                # not glued to a following word: the next character is not a letter
                i = out.index(span) + len(span)
                self.assertFalse(out[i + 1:i + 2].isalpha() and out[i].isalpha(), (src, out))

    TEXTS = [
        'See "https://x.io/a" (or www.x.io/b) for details.',
        "Cannot open '%.255s' (%s).",
        'Use keyID = "%s" for this key?',
        "Error when closing '%s' (%s).",
    ]

    def test_text_spans_keep_their_quotes(self):
        st, body = D.request({"q": self.TEXTS, "source": "en", "target": "de", "api_key": ""})
        self.assertEqual(st, 200, body)
        self.check(body["translatedText"], self.TEXTS)

    def test_html_spans_keep_their_quotes(self):
        docs = ["<p>" + t.replace("&", "&amp;") + "</p>" for t in self.TEXTS] + [
            '<p>Press <x id="0"/> to save and \'<x id="1"/>\' to quit.</p>']
        st, body = D.request({"text": docs, "format": "html"})
        self.assertEqual(st, 200, body)
        self.check(body["translations"], docs)

    def test_notranslate_links_are_kept(self):
        docs = ['<p>See <a class="notranslate" href="/x">the Home page</a> now.</p>',
                '<p>See <a translate="no" href="/x">the Home page</a> now.</p>',
                '<p>See <span class="menu notranslate">the Home page</span> now.</p>']
        st, body = D.request({"text": docs, "format": "html"})
        self.assertEqual(st, 200, body)
        for src, out in zip(docs, body["translations"]):
            element = src[src.index("<", 3):src.index(" now")]
            self.assertEqual(out.count(element), 1, (src, out))
        # not "do not translate": translated
        docs = ['<p>See <a translate="nope" href="/x">the house</a> now.</p>',
                '<p>See <a title="translate=no" href="/x">the house</a> now.</p>']
        st, body = D.request({"text": docs, "format": "html"})
        self.assertEqual(st, 200, body)
        for src, out in zip(docs, body["translations"]):
            self.assertNotIn("the house", out, (src, out))


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import testmain
    sys.exit(testmain.run(__name__))
