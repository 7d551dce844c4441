#!/usr/bin/python3
"""The README's first command works as written: it installs what is needed (nothing when
everything is there), builds, and serves the bundled models: en->de (the default) and
de->en.

The command is read from README.md (the ```sh block after the line with the
`first-command` marker; without README.md, scripts/quickstart.sh itself) and run from
the repository root with "--port P" appended (a free loopback port; quickstart.sh hands
extra arguments to mt-server), in the background in its own process group. The test
waits for GET /health (bounded), translates a sentence in the native and the
LibreTranslate forms, checks the answer equals mt-translate's, does the same for a German
sentence with source "de" (with and without target), checks that a request naming no
language goes to en-de (the default), checks GET /languages, then stops the group.
Skipped while models/en-de/config.json does not exist.

Env: MT_BUILD_DIR, MT_SOURCE_DIR, MT_SHARED_DIR. Prints "N passed, M failed".
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_scripts as ts  # noqa: E402
from test_docker import readme_first_command  # noqa: E402

SOURCE = ts.SOURCE
MODEL = os.path.join(SOURCE, "models", "en-de")
MODEL_DE_EN = os.path.join(SOURCE, "models", "de-en")
SENTENCE = "A man in a blue shirt is riding a bike."
SENTENCE_DE = "Zwei Hunde spielen im Schnee."
HEALTH_TIMEOUT = 720  # the command may have to build first


def first_command():
    cmd = readme_first_command()
    if cmd is None:
        return "scripts/quickstart.sh", "scripts/quickstart.sh (README.md has no first-command marker)"
    return cmd, "README.md's first command"


class Quickstart(unittest.TestCase):
    def test_first_command_serves_bundled_model(self):
        if not os.path.exists(os.path.join(MODEL, "config.json")):
            self.skipTest("models/en-de/config.json does not exist yet (the bundled model is not "
                          "in the repository): the README's first command cannot serve it")
        cmd, what = first_command()
        self.assertNotIn("\n", cmd.strip(), "%s should be one command line: %r" % (what, cmd))
        self.assertIn("quickstart.sh", cmd, "%s should run scripts/quickstart.sh: %r" % (what, cmd))
        port = ts.free_port()
        line = "%s --port %d" % (cmd.strip(), port)
        print("  running (%s): %s" % (what, line))
        tmp = tempfile.mkdtemp(prefix="test_quickstart.")
        log = os.path.join(tmp, "quickstart.log")
        proc = None
        try:
            with open(log, "wb") as out:
                proc = subprocess.Popen(["bash", "-c", line], cwd=SOURCE, stdout=out, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True)
            url = "http://127.0.0.1:%d" % port
            ts.wait_health(url, proc, timeout=HEALTH_TIMEOUT, log=log)

            status, _, body = ts.http_request("POST", url + "/translate",
                                              {"text": SENTENCE, "source": "en", "target": "de"}, timeout=120)
            self.assertEqual(status, 200, body)
            answer = json.loads(body)
            translations = answer["translations"]
            self.assertEqual(len(translations), 1, answer)
            text = translations[0]["text"] if isinstance(translations[0], dict) else translations[0]
            self.assertTrue(text.strip(), answer)
            print("  %s -> %s" % (SENTENCE, text))

            status, _, body = ts.http_request("POST", url + "/translate",
                                              {"q": SENTENCE, "source": "en", "target": "de"}, timeout=120)
            self.assertEqual(status, 200, body)
            self.assertEqual(json.loads(body)["translatedText"], text)

            with open(log, "rb") as f:
                output = f.read().decode("utf-8", "replace")
            self.assertNotIn("install-deps: installing", output,
                             "install-deps.sh reinstalled packages that are present")

            # a request that names no language goes to the default model, en-de
            status, _, body = ts.http_request("POST", url + "/translate", {"text": SENTENCE}, timeout=120)
            self.assertEqual(status, 200, body)
            self.assertEqual((json.loads(body)["model"], json.loads(body)["translations"]), ("en-de", [text]))

            status, _, body = ts.http_request("POST", url + "/translate",
                                              {"text": SENTENCE_DE, "source": "de", "target": "en"}, timeout=120)
            self.assertEqual(status, 200, body)
            answer = json.loads(body)
            self.assertEqual(answer["model"], "de-en", answer)
            text_en = answer["translations"][0]
            print("  %s -> %s" % (SENTENCE_DE, text_en))
            status, _, body = ts.http_request("POST", url + "/translate", {"text": SENTENCE_DE, "source": "de"},
                                              timeout=120)
            self.assertEqual((status, json.loads(body)["translations"]), (200, [text_en]), body)

            status, _, body = ts.http_request("GET", url + "/languages", None, timeout=60)
            self.assertEqual(status, 200, body)
            targets = {lang["code"]: lang["targets"] for lang in json.loads(body)}
            self.assertEqual(targets, {"en": ["de"], "de": ["en"]})

            if os.access(ts.CLI, os.X_OK):
                for model, sentence, want in ((MODEL, SENTENCE, text), (MODEL_DE_EN, SENTENCE_DE, text_en)):
                    r = subprocess.run([ts.CLI, "--model", model], input=(sentence + "\n").encode(),
                                       capture_output=True, timeout=300)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertEqual(r.stdout.decode().rstrip("\n"), want, "server and mt-translate disagree")
        finally:
            ts.stop(proc, timeout=30)
            if proc is not None and proc.returncode not in (0, -15, 143, 130, -2):
                print("  quickstart exited with %s%s" % (proc.returncode, ts.log_tail(log, 1500)))
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(ts.run_tests(__name__))
