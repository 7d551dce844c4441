#!/usr/bin/python3
"""Records what mt-translate and mt-server answer over Multi30k val, or compares with a
recording, byte for byte: the proof that a refactoring changed no output.

  tools/check_identical.py --build build --out DIR            # record into DIR
  tools/check_identical.py --build build --out NEW --compare DIR  # record, then diff

Recorded (bundled models/en-de and models/de-en, the first --lines lines of val.en/de):
  cli_nbest.txt   mt-translate --beam 4 --n-best 2
  cli_html.html   mt-translate --beam 4 --input html over an HTML document of the lines
  cli_ids.txt     mt-translate --beam 4 --output ids
  cli_idsin.txt   mt-translate --beam 4 --input ids over cli_ids.txt's first ids of de-en
  cli_json.txt    mt-translate --beam 4 --output json --return-scores --return-alignments
  server.jsonl    one mt-server (en-de, de-en, and de-en served again as de->de so that
                  `source: "auto"` into "de" has two routes), 32 concurrent clients: native
                  and LibreTranslate requests (single texts, arrays, n_best/alternatives,
                  html, beam sizes, scores and alignments) and "auto" requests mixing German
                  and English texts; each answer's status and body, timing_ms removed, in
                  request order.
Exit status: 0 when --compare finds every file identical, 1 otherwise.
"""
import argparse
import concurrent.futures
import gzip
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, ".."))
SHARED = os.path.abspath(os.environ.get("MT_SHARED_DIR", os.path.join(SRC, "..", "shared")))


def lines_of(name, n):
    with gzip.open(os.path.join(SHARED, "data", "multi30k", name), "rt", encoding="utf-8") as f:
        return [l.rstrip("\n") for _, l in zip(range(n), f)]


def cli(build, model, args, data):
    exe = os.path.join(build, "cli", "mt-translate")
    r = subprocess.run([exe, "--model", model] + args, input=data.encode("utf-8"),
                       capture_output=True, timeout=1800)
    if r.returncode != 0:
        sys.exit("check_identical: mt-translate %s failed: %s" % (args, r.stderr.decode()))
    return r.stdout


def record_cli(build, out, en, de):
    ende, deen = os.path.join(SRC, "models", "en-de"), os.path.join(SRC, "models", "de-en")
    text = "\n".join(en) + "\n"
    files = {
        "cli_nbest.txt": cli(build, ende, ["--beam", "4", "--n-best", "2"], text),
        "cli_ids.txt": cli(build, ende, ["--beam", "4", "--output", "ids"], text),
        "cli_json.txt": cli(build, ende, ["--beam", "4", "--output", "json", "--return-scores",
                                          "--return-alignments"], "\n".join(en[:100]) + "\n"),
    }
    doc = "<html><body>\n" + "".join(
        "<p>%s <b>%s</b></p>\n" % (en[i], en[i + 1]) for i in range(0, len(en) - 1, 2)) + "</body></html>\n"
    files["cli_html.html"] = cli(build, ende, ["--beam", "4", "--input", "html"], doc)
    # ids in: de-en's own output ids of German lines are valid German source ids of en-de's
    # vocabulary (the bundled pair shares one vocabulary)
    ids = cli(build, deen, ["--beam", "2", "--output", "ids"], "\n".join(de[:150]) + "\n").decode()
    files["cli_idsin.txt"] = cli(build, deen, ["--beam", "4", "--input", "ids"], ids)
    for k, v in files.items():
        with open(os.path.join(out, k), "wb") as f:
            f.write(v)


class Server:
    def __init__(self, build, cfg_path, log_path):
        exe = os.path.join(build, "server", "mt-server")
        env = {k: v for k, v in os.environ.items() if not k.startswith("MT_")}
        self.log_path = log_path
        self.proc = subprocess.Popen([exe, "--host", "127.0.0.1", "--port", "0", "--config", cfg_path],
                                     stdout=open(log_path, "wb"), stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 300
        self.port = None
        while time.time() < deadline:
            m = re.search(r"event=listening host=\S+ port=(\d+)", open(log_path, errors="replace").read())
            if self.proc.poll() is not None:
                sys.exit("check_identical: mt-server exited:\n" + open(log_path).read())
            if m:
                self.port = int(m.group(1))
                try:
                    if self.request("GET", "/health")[0] == 200:
                        return
                except OSError:
                    pass
            time.sleep(0.05)
        sys.exit("check_identical: mt-server not ready")

    def request(self, method, path, body=None, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)


def requests_for(en, de):
    """Request bodies (path, JSON object) in a fixed order."""
    reqs = []
    for i, line in enumerate(en):
        k = i % 8
        if k == 0:
            reqs.append({"text": line, "source": "en", "target": "de"})
        elif k == 1:
            reqs.append({"text": [line, en[i - 1]], "source": "en", "target": "de", "beam_size": 4, "n_best": 2})
        elif k == 2:
            reqs.append({"q": line, "source": "en", "target": "de", "alternatives": 1})
        elif k == 3:
            reqs.append({"q": [line, de[i]], "source": "auto", "target": "de"})
        elif k == 4:
            reqs.append({"text": "<p>%s <i>%s</i></p>" % (line, en[i - 1]), "format": "html",
                         "source": "en", "target": "de"})
        elif k == 5:
            reqs.append({"text": [de[i], line, de[i - 1]], "source": "auto", "target": "de",
                         "return_scores": True, "return_alignments": True})
        elif k == 6:
            reqs.append({"q": de[i], "source": "de", "target": "en", "format": "text"})
        else:
            reqs.append({"text": [line], "source": "en", "target": "de", "beam_size": 1,
                         "max_length": 20})
    return reqs


def strip_timing(body):
    try:
        obj = json.loads(body)
    except ValueError:
        return body.decode("utf-8", "replace")
    if isinstance(obj, dict):
        obj.pop("timing_ms", None)
    return json.dumps(obj, ensure_ascii=False, sort_keys=True)


def record_server(build, out, en, de, clients):
    tmp = tempfile.mkdtemp(prefix="check-identical-")
    dede = os.path.join(tmp, "de-de")  # de-en's weights labelled de -> de (symlinks, one file edited)
    os.mkdir(dede)
    for name in os.listdir(os.path.join(SRC, "models", "de-en")):
        if name != "tokenizer_config.json":
            os.symlink(os.path.join(SRC, "models", "de-en", name), os.path.join(dede, name))
    with open(os.path.join(SRC, "models", "de-en", "tokenizer_config.json")) as f:
        tc = json.load(f)
    tc["target_lang"] = "de"
    with open(os.path.join(dede, "tokenizer_config.json"), "w") as f:
        json.dump(tc, f)
    cfg = os.path.join(tmp, "server.toml")
    with open(cfg, "w") as f:
        f.write("[server]\nport = 1\n[workers]\ncount = 2\n[batch]\nmax_wait_ms = 2\n"
                "[limits]\nmax_texts = 64\n"
                "[[models]]\npath = %s\nname = \"en-de\"\n"
                "[[models]]\npath = %s\nname = \"de-en\"\n"
                "[[models]]\npath = %s\nname = \"de-de\"\n"
                % (json.dumps(os.path.join(SRC, "models", "en-de")),
                   json.dumps(os.path.join(SRC, "models", "de-en")),
                   json.dumps(dede)))
    srv = Server(build, cfg, os.path.join(out, "server.log"))
    reqs = requests_for(en, de)

    def one(obj):
        st, body = srv.request("POST", "/translate", json.dumps(obj), {"Content-Type": "application/json"})
        return "%d %s" % (st, strip_timing(body))

    try:
        with concurrent.futures.ThreadPoolExecutor(clients) as ex:
            answers = list(ex.map(one, reqs))
    finally:
        srv.stop()
    with open(os.path.join(out, "server.jsonl"), "w", encoding="utf-8") as f:
        for a in answers:
            f.write(a + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(SRC, "build"))
    p.add_argument("--out", required=True)
    p.add_argument("--lines", type=int, default=400)
    p.add_argument("--clients", type=int, default=32)
    p.add_argument("--compare", help="a directory recorded before")
    p.add_argument("--only", choices=["cli", "server"])
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    en, de = lines_of("val.en.gz", a.lines), lines_of("val.de.gz", a.lines)
    t0 = time.time()
    if a.only != "server":
        record_cli(os.path.abspath(a.build), a.out, en, de)
    if a.only != "cli":
        record_server(os.path.abspath(a.build), a.out, en, de, a.clients)
    print("check_identical: recorded into %s in %.0f s" % (a.out, time.time() - t0))
    if not a.compare:
        return 0
    bad = 0
    for name in sorted(os.listdir(a.compare)):
        if name.endswith(".log") or not os.path.isfile(os.path.join(a.compare, name)):
            continue
        new = os.path.join(a.out, name)
        if not os.path.exists(new):
            continue
        same = open(os.path.join(a.compare, name), "rb").read() == open(new, "rb").read()
        print("%-16s %s" % (name, "identical" if same else "DIFFERENT"))
        bad += not same
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
