#!/usr/bin/python3
"""Pivoting through English (translator/pivot.c): mt-server with models/de-en, models/en-de
and an en->fr model (models/en-fr, else training/en-fr, else a tiny random one) serves de->fr
in two steps. Checked over LibreTranslate's API:
- GET /languages lists fr among German's targets;
- de->fr of several texts is exactly what de->en, then en->fr of those translations give
  by hand (plain text and HTML with inline markup), and the alternatives are the second
  step's n-best on the first step's best translations;
- source "auto" reaches the pivot route (detected German); direct pairs stay direct;
- the native answer names both models ("pivot": {"via": "en", "models": [de-en, en-fr]}).
TestPivotPerStepOptions (tiny random models of 512 and 256 positions, greedy / beam 4,
length_penalty 1 / 2): each step takes its own model's defaults (a plain de->fr request
answered 400 when the first model's max_length 512 was checked against the second's 256
positions) and equals the two steps by hand (translations, scores, n-best); a given
max_length beyond a step's positions is refused naming that step; returned alignments are
refused on a pivot route.
TestPivotDeadlineAndCancel (tiny random models; a slow one never emits eos, so each of its
sentences runs 256 decoding steps): a pivot request whose deadline (--request-timeout 1)
passes during its slow first step answers 504 and its second step never runs: no more
sentences dropped than the first step had (a second step, prepared after the deadline,
would drop its own too), and a direct request on the second model still works; a pivot
request whose client goes away during the first step, or during the (slow) second step, is
cancelled (its sentences counted as dropped), and the server then stops with exit status 0
and no sanitizer report (under ASan a leak makes the exit status non-zero).
"""
import json
import os
import re
import socket
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_scripts as ts  # noqa: E402
import mtfixtures as mtf  # noqa: E402
import testmain  # noqa: E402

SOURCE = ts.SOURCE
TEXTS = ["Ein Mann fährt mit dem Fahrrad die Straße hinunter.", "Zwei Hunde spielen im Schnee.",
         "Die Kinder lesen Bücher in der Bibliothek.", "Wo ist der Bahnhof?"]
HTML = ["<p>Zwei <b>Hunde</b> spielen im Schnee.</p>", "<p>Ein Mann mit einem <i>roten</i> Hut.</p>"]


class TestPivot(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        de_en, en_de = os.path.join(SOURCE, "models", "de-en"), os.path.join(SOURCE, "models", "en-de")
        en_fr = [d for d in (os.path.join(SOURCE, "models", "en-fr"), os.path.join(SOURCE, "training", "en-fr"))
                 if os.path.exists(os.path.join(d, "config.json"))]
        if not os.path.exists(os.path.join(de_en, "config.json")):
            raise unittest.SkipTest("needs models/de-en")
        cls.tmp = tempfile.mkdtemp(prefix="test-pivot-")
        if not en_fr:
            # No trained en->fr model in the tree: a tiny random one labelled en -> fr
            # checks the same routing (the comparison is with its own two-step output).
            en_fr = [mtf.relabel(mtf.make_model("en-fr", 7), "en", "fr")]
        cls.log = os.path.join(cls.tmp, "server.log")
        port = ts.free_port()
        cls.url = "http://127.0.0.1:%d" % port
        cls.proc = ts.start_server(de_en, port, cls.log, extra=["--model", en_fr[0], "--model", en_de])

    @classmethod
    def tearDownClass(cls):
        ts.stop(cls.proc)

    def translate(self, q, source, target, **kw):
        status, _, body = ts.http_request("POST", self.url + "/translate",
                                          dict(q=q, source=source, target=target, **kw))
        self.assertEqual(status, 200, body)
        return json.loads(body)

    def test_languages(self):
        status, _, body = ts.http_request("GET", self.url + "/languages")
        self.assertEqual(status, 200)
        targets = {x["code"]: x["targets"] for x in json.loads(body)}
        self.assertIn("fr", targets["de"])
        self.assertIn("en", targets["de"])
        self.assertIn("de", targets["en"])
        with open(self.log, encoding="utf-8", errors="replace") as f:
            self.assertIn("event=pivot routes=1 via=en", f.read())

    def test_text_equals_two_steps_by_hand(self):
        via = self.translate(TEXTS, "de", "en")["translatedText"]
        by_hand = self.translate(via, "en", "fr")["translatedText"]
        got = self.translate(TEXTS, "de", "fr")["translatedText"]
        self.assertEqual(got, by_hand)
        self.assertNotEqual(got, via)

    def test_html_equals_two_steps_by_hand(self):
        via = self.translate(HTML, "de", "en", format="html")["translatedText"]
        by_hand = self.translate(via, "en", "fr", format="html")["translatedText"]
        got = self.translate(HTML, "de", "fr", format="html")["translatedText"]
        self.assertEqual(got, by_hand)
        for g in got:
            self.assertTrue(g.startswith("<p>") and g.endswith("</p>"), g)

    def test_alternatives_are_the_second_steps(self):
        via = self.translate(TEXTS, "de", "en")["translatedText"]
        by_hand = self.translate(via, "en", "fr", alternatives=2)
        got = self.translate(TEXTS, "de", "fr", alternatives=2)
        self.assertEqual(got["translatedText"], by_hand["translatedText"])
        self.assertEqual(got["alternatives"], by_hand["alternatives"])

    def test_auto_source(self):
        got = self.translate(TEXTS[1], "auto", "fr")
        self.assertEqual(got["detectedLanguage"]["language"], "de")
        via = self.translate(TEXTS[1], "de", "en")["translatedText"]
        self.assertEqual(got["translatedText"], self.translate(via, "en", "fr")["translatedText"])

    def test_native_answer_names_both_models(self):
        status, _, body = ts.http_request("POST", self.url + "/translate",
                                          {"text": TEXTS[0], "source": "de", "target": "fr"})
        self.assertEqual(status, 200, body)
        got = json.loads(body)
        self.assertEqual(got["pivot"]["via"], "en")
        self.assertEqual(got["pivot"]["models"][0], "de-en")
        self.assertEqual(got["pivot"]["models"][1], "en-fr")
        self.assertEqual((got["source"], got["target"]), ("de", "fr"))
        status, _, body = ts.http_request("POST", self.url + "/translate",
                                          {"text": TEXTS[0], "source": "de", "target": "en"})
        self.assertNotIn("pivot", json.loads(body))

    def test_direct_pairs_stay_direct(self):
        """en->de is served by models/en-de, not by some pivot; de->en by models/de-en."""
        one = self.translate("Two dogs play in the snow.", "en", "de")["translatedText"]
        self.assertNotEqual(one, "Two dogs play in the snow.")
        self.assertEqual(self.translate(TEXTS[1], "de", "en")["translatedText"],
                         self.translate([TEXTS[1]], "de", "en")["translatedText"][0])


def set_generation(model, **kw):
    """Sets keys of model's generation_config.json (num_beams, length_penalty): the model's
    own decoding defaults."""
    path = os.path.join(model, "generation_config.json")
    with open(path) as f:
        cfg = json.load(f)
    cfg.update(kw)
    with open(path, "w") as f:
        json.dump(cfg, f)
    return model


class TestPivotPerStepOptions(unittest.TestCase):
    """Each step takes its own model's decoding defaults (max_length, num_beams,
    length_penalty) and is checked against its own model's limits. Tiny random models: a
    "long" one (512 positions, max_length 512, greedy, length_penalty 1) and a "short" one
    (256 positions, max_length 200, beam 4, length_penalty 2), each also relabelled:
    de->fr goes long then short, es->it short then long."""

    @classmethod
    def setUpClass(cls):
        mtf.require_server()
        long_ = set_generation(mtf.make_model("long", 11, ["--max-positions", "512", "--max-length", "512"]),
                               num_beams=1, length_penalty=1.0)
        short = set_generation(mtf.make_model("short", 12, ["--max-positions", "256", "--max-length", "200"]),
                               num_beams=4, length_penalty=2.0)
        models = [mtf.relabel(long_, "de", "en", out=os.path.join(mtf.TMP, "long-de-en")),
                  mtf.relabel(short, "en", "fr", out=os.path.join(mtf.TMP, "short-en-fr")),
                  mtf.relabel(short, "es", "en", out=os.path.join(mtf.TMP, "short-es-en")),
                  mtf.relabel(long_, "en", "it", out=os.path.join(mtf.TMP, "long-en-it"))]
        args = []
        for m in models:
            args += ["--model", m]
        cls.server = mtf.Server(args + ["--sentence-cache-mb", "0"], name="pivot-per-step")

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def native(self, texts, source, target, status=200, **kw):
        st, _, body = self.server.post_json(dict(text=texts, source=source, target=target, **kw))
        self.assertEqual(st, status, body)
        return body

    def by_hand(self, texts, source, target, **kw):
        """The pivot's answer and the two steps by hand: de->en (one hypothesis, the request's
        options but n_best), then en->fr of its translations with the request's options."""
        got = self.native(texts, source, target, **kw)
        first = {k: v for k, v in kw.items() if k != "n_best"}
        via = self.native(texts, source, "en", **first)["translations"]
        return got, self.native(via, "en", target, **kw)

    def assert_same(self, got, hand):
        self.assertEqual(got["translations"], hand["translations"])
        self.assertEqual(len(got["scores"]), len(hand["scores"]))
        for a, b in zip(got["scores"], hand["scores"]):  # the second step's length_penalty and beam
            self.assertAlmostEqual(a, b, places=3)
        self.assertEqual(got.get("n_best"), hand.get("n_best"))

    def test_plain_request_takes_each_steps_defaults(self):
        """No options: de->fr (512-position first step, 256 second) answers 200, not 400 for the
        first model's max_length 512; es->it scores with its second model's greedy search and
        length_penalty 1, not the first's beam 4 and length_penalty 2."""
        for source, target in (("de", "fr"), ("es", "it")):
            with self.subTest(pair=source + "->" + target):
                got, hand = self.by_hand(TEXTS, source, target)
                self.assertEqual(got["pivot"]["via"], "en")
                self.assert_same(got, hand)

    def test_n_best_is_the_second_steps(self):
        for source, target in (("de", "fr"), ("es", "it")):
            with self.subTest(pair=source + "->" + target):
                got, hand = self.by_hand(TEXTS[:2], source, target, n_best=3)
                self.assertEqual(len(got["n_best"][0]), 3)
                self.assert_same(got, hand)

    def test_explicit_max_length(self):
        """A given max_length holds for both steps (as on a direct route, more than a model's
        positions is refused, not cut): within both models' limits the answer is the two steps
        with it; beyond a step's limit, 400 naming that step and its limit."""
        for source, target in (("de", "fr"), ("es", "it")):
            with self.subTest(pair=source + "->" + target):
                got, hand = self.by_hand(TEXTS, source, target, max_length=5)
                self.assert_same(got, hand)
        # direct en->fr refuses 300 (256 positions); so does de->fr in its second step
        self.assertIn("256", json.dumps(self.native(TEXTS[0], "en", "fr", status=400, max_length=300)))
        for source, target, step in (("de", "fr", "en->fr"), ("es", "it", "es->en")):
            with self.subTest(pair=source + "->" + target):
                msg = json.dumps(self.native(TEXTS[0], source, target, status=400, max_length=300))
                self.assertIn(step, msg)
                self.assertIn("limit of 256", msg)
        self.native(TEXTS[0], "de", "it", max_length=300)  # both steps have 512 positions

    def test_alignments_refused(self):
        """The second step's alignments would point into the English between the steps."""
        self.native(TEXTS[0], "en", "fr", return_alignments=True)
        msg = json.dumps(self.native(TEXTS[0], "de", "fr", status=400, return_alignments=True))
        self.assertIn("return_alignments", msg)
        self.assertIn("through en", msg)


def slow_model(name, seed, source, target):
    """A random model that never emits eos (its sentences run to max_length 256): seconds of
    work per batch even on a fast machine, so a request is still in its step when checked."""
    return mtf.relabel(mtf.make_model(name, seed, ["--eos-bias", "-50", "--d-model", "256", "--ffn", "1024",
                                                   "--layers", "2", "4", "--max-length", "256"]),
                       source, target)


def lines(tag, n):
    return ["Ein Mann fährt mit dem Fahrrad die Straße hinunter, %s Hunde spielen im Schnee %d." % (tag, i)
            for i in range(n)]


class TestPivotDeadlineAndCancel(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mtf.require_server()
        cls.models = [slow_model("slow-de-en", 3, "de", "en"),                  # de->fr: a slow first step
                      mtf.relabel(mtf.make_model("tiny-en-fr", 7), "en", "fr"),
                      mtf.relabel(mtf.make_model("tiny-es-en", 8), "es", "en"),  # es->it: a slow second step
                      slow_model("slow-en-it", 5, "en", "it")]

    def start(self, *extra):
        args = []
        for m in self.models:
            args += ["--model", m]
        server = mtf.Server(args + ["--workers", "1", "--sentence-cache-mb", "0"] + list(extra), name="pivot-deadline")
        self.addCleanup(server.stop)
        return server

    def stop_clean(self, server):
        rc = server.stop()
        log = server.log()
        self.assertEqual(rc, 0, log[-3000:])  # under ASan a leak makes this non-zero
        self.assertNotIn("Sanitizer", log)
        self.assertNotIn("runtime error:", log)

    def test_deadline_during_first_step(self):
        server = self.start("--request-timeout", "1")
        n = 24
        st, _, body = server.post_json({"q": lines("drei", n), "source": "de", "target": "fr"})
        self.assertEqual(st, 504, body)
        self.assertIn("request timeout", json.dumps(body))
        dropped = server.metric("mt_sentences_cancelled_total")
        self.assertGreater(dropped, 0)   # the first step was cut short
        self.assertLessEqual(dropped, n)  # and no second step was queued to be dropped in turn
        self.assertEqual(server.metric("mt_queue_requests"), 0)
        st, _, body = server.post_json({"q": "A dog.", "source": "en", "target": "fr"})
        self.assertEqual(st, 200, body)
        self.assertEqual(server.metric("mt_sentences_cancelled_total"), dropped)
        self.stop_clean(server)

    def gone_during(self, server, source, target, texts, step_running):
        """Sends a pivot request on a raw socket, closes it once step_running() holds, and waits
        until the server has dropped the request."""
        body = json.dumps({"q": texts, "source": source, "target": target}).encode()
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=60)
        sock.sendall(b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body) + body)
        try:
            self.assertTrue(mtf.wait_until(step_running, timeout=120), server.metrics())
        finally:
            sock.close()
        self.assertTrue(mtf.wait_until(lambda: server.metric("mt_queue_requests") == 0
                                       and server.metric("mt_workers_busy") == 0, timeout=120), server.metrics())

    def test_cancelled_in_either_step_frees_everything(self):
        """Each step is a job of its own, whose first batch the queue-wait histogram counts:
        one count, the first step computing; two, the second."""
        server = self.start()

        def step_computing(k):
            started = server.metric("mt_queue_wait_seconds_count")
            return lambda: server.metric("mt_queue_wait_seconds_count") >= started + k and \
                server.metric("mt_workers_busy") > 0
        # in the first step: the slow de->en model computing (the second cannot have begun)
        self.gone_during(server, "de", "fr", lines("vier", 16), step_computing(1))
        dropped = server.metric("mt_sentences_cancelled_total")
        self.assertGreater(dropped, 0)
        # in the second step: es->en's (tiny, quick) step done, the slow en->it model computing
        self.gone_during(server, "es", "it", lines("fünf", 4), step_computing(2))
        self.assertGreater(server.metric("mt_sentences_cancelled_total"), dropped)
        self.stop_clean(server)


if __name__ == "__main__":
    sys.exit(testmain.run(__name__))
