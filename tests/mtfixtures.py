#!/usr/bin/python3
"""Fixtures of the Python tests that run mt-server or mt-translate: one module for all,
imported by test_server.py and the other server tests (`import mtfixtures as ts`).

  SRC, BUILD, SHARED     checkout, build tree and ../shared (MT_SOURCE_DIR, MT_BUILD_DIR,
                         MT_SHARED_DIR); SERVER, CLI the binaries; BUNDLED models/en-de
  TMP                    a private temporary directory, removed at exit
  make_model, relabel    tiny random models (tools/make_test_model.py) and their language pair
  corpus_lines           English sentences (Multi30k val, or a fixed list without ../shared)
  cli_translate, cli_nbest, cli_text, cli_html   what mt-translate prints for an input
  Server                 one mt-server on a free loopback port (--port 0), ready when
                         /health answers; request / post_json / metric(s) / stop
  wait_until             polls a condition with a deadline (no fixed sleeps)
  free_port              a loopback port nobody listens on now (for a server that must be
                         given one; Server itself asks for --port 0)
  require_server         raises (an error, not a skip) when mt-server is not built
  nginx_conf             a main nginx.conf whose every path lies in a private directory
  eval_check             a tools/eval_*.py --check run on the bundled en-de model (77 without it)
  float_weights          a model directory with float weights: the bundled models are stored
                         int8, which CTranslate2's converter does not read
  tiny_ct2_dir, argos_package_dir   a CTranslate2 directory from tests/fuzz/ct2 (no peer needed)
                         and an unpacked argos-translate package around a CTranslate2 directory

Every server started is killed at exit if a test did not stop it. Standard library only.
"""
import atexit
import gzip
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SRC = os.path.abspath(os.environ.get("MT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..")))
BUILD = os.path.abspath(os.environ.get("MT_BUILD_DIR", os.path.join(SRC, "build")))
SHARED = os.path.abspath(os.environ.get("MT_SHARED_DIR", os.path.join(SRC, "..", "shared")))
SERVER = os.path.join(BUILD, "server", "mt-server")
CLI = os.path.join(BUILD, "cli", "mt-translate")
PYTHON = "/usr/bin/python3"

TMP = tempfile.mkdtemp(prefix="mt_test_%s_" % os.path.splitext(os.path.basename(sys.argv[0] or "py"))[0])
SERVERS = []  # every process started, stopped at exit


def _cleanup():
    for p in SERVERS:
        if p.poll() is None:
            p.kill()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
    shutil.rmtree(TMP, ignore_errors=True)


atexit.register(_cleanup)


# ----------------------------------------------------------------------------- fixtures

def make_model(name, seed, extra=()):
    out = os.path.join(TMP, name)
    cmd = [PYTHON, os.path.join(SRC, "tools", "make_test_model.py"), out, "--seed", str(seed)]
    cmd += list(extra)
    env = dict(os.environ, MT_SHARED_DIR=SHARED)
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if r.returncode != 0:
        raise RuntimeError("make_test_model failed: %s%s" % (r.stdout, r.stderr))
    return out


def relabel(model, source, target, out=None):
    """A model whose tokenizer_config.json names (source, target): a pair given on the
    command line must agree with it (a copy at out when given)."""
    if out:
        shutil.copytree(model, out)
        model = out
    path = os.path.join(model, "tokenizer_config.json")
    with open(path) as f:
        cfg = json.load(f)
    cfg["source_lang"], cfg["target_lang"] = source, target
    with open(path, "w") as f:
        json.dump(cfg, f)
    return model


def corpus_lines(n, seed=0):
    """English sentences from Multi30k val (or a fixed list when shared/ is absent)."""
    path = os.path.join(SHARED, "data", "multi30k", "val.en.gz")
    lines = []
    if os.path.exists(path):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            lines = [l.strip() for l in f if l.strip()]
    if not lines:
        lines = ["A man is riding a bike.", "Two dogs play in the snow.",
                 "A woman in a red dress is singing.", "Children are playing soccer in a park.",
                 "The old man reads a newspaper on a bench."]
    rnd = random.Random(seed)
    return [rnd.choice(lines) for _ in range(n)]


def cli_translate(model, lines, args=()):
    """mt-translate on lines (no newlines inside); returns its output lines."""
    for line in lines:
        assert "\n" not in line
    data = "".join(l + "\n" for l in lines)
    r = subprocess.run([CLI, "--model", model] + list(args), input=data.encode("utf-8"),
                       capture_output=True, timeout=900)
    if r.returncode != 0:
        raise RuntimeError("mt-translate failed: " + r.stderr.decode("utf-8", "replace"))
    out = r.stdout.decode("utf-8").split("\n")
    assert out[-1] == ""
    return out[:-1]


def cli_nbest(model, lines, n, args=()):
    """[[(text, score), ...] per line] from mt-translate --n-best."""
    out = cli_translate(model, lines, ["--n-best", str(n)] + list(args))
    result = [[] for _ in lines]
    for row in out:
        idx, text, score = row.split(" ||| ")
        result[int(idx)].append((text, float(score)))
    return result


def cli_text(model, text, args=()):
    """What the CLI makes of a multi-line text: each line translated, joined back."""
    lines = text.split("\n")
    out = cli_translate(model, lines, args)
    return "\n".join(out)


def cli_html(model, document):
    """mt-translate --input html on a whole document: its output, as it is."""
    r = subprocess.run([CLI, "--model", model, "--input", "html"], input=document.encode("utf-8"),
                       capture_output=True, timeout=900)
    if r.returncode != 0:
        raise RuntimeError("mt-translate failed: " + r.stderr.decode("utf-8", "replace"))
    return r.stdout.decode("utf-8")


# ----------------------------------------------------------------------------- server process

class Server:
    """One mt-server process on a free loopback port (--port 0, port read from its log)."""

    def __init__(self, args, env=None, wait_ready=True, name="server"):
        self.log_path = os.path.join(TMP, "%s-%d.log" % (name, len(SERVERS)))
        self.log_file = open(self.log_path, "wb")
        full_env = dict(os.environ)
        for k in list(full_env):
            if k.startswith("MT_") and k not in ("MT_BUILD_DIR", "MT_SOURCE_DIR", "MT_SHARED_DIR"):
                del full_env[k]
        full_env.update(env or {})
        cmd = [SERVER, "--host", "127.0.0.1", "--port", "0"] + list(args)
        self.proc = subprocess.Popen(cmd, stdout=self.log_file, stderr=subprocess.STDOUT, env=full_env)
        SERVERS.append(self.proc)
        self.port = None
        deadline = time.time() + 120
        while time.time() < deadline and self.port is None:
            m = re.search(r"event=listening host=\S+ port=(\d+)", self.log())
            if m:
                self.port = int(m.group(1))
            elif self.proc.poll() is not None:
                raise RuntimeError("mt-server exited early (%s):\n%s" % (self.proc.returncode, self.log()))
            else:
                time.sleep(0.05)
        if self.port is None:
            raise RuntimeError("mt-server did not start:\n" + self.log())
        if wait_ready:
            self.wait_ready()

    def log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def wait_ready(self, timeout=180):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("mt-server exited (%s):\n%s" % (self.proc.returncode, self.log()))
            try:
                st, _, _ = self.request("GET", "/health", timeout=5)
                if st == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("mt-server not ready:\n" + self.log())

    def request(self, method, path, body=None, headers=None, timeout=120):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            if isinstance(body, str):
                body = body.encode("utf-8")
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            conn.close()

    def post_json(self, obj, headers=None, path="/translate", timeout=120):
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        st, hd, body = self.request("POST", path, json.dumps(obj), h, timeout=timeout)
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = body
        return st, hd, parsed

    def metrics(self):
        st, _, body = self.request("GET", "/metrics")
        assert st == 200
        return body.decode("utf-8")

    def metric(self, name):
        """Sum of every sample of metric `name` (labels ignored)."""
        total = 0.0
        for line in self.metrics().splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                total += float(line.rsplit(" ", 1)[1])
        return total

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
                raise AssertionError("mt-server did not stop within %s s:\n%s" % (timeout, self.log()))
        self.log_file.close()
        return self.proc.returncode


def wait_until(fn, timeout=60, step=0.02):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if fn():
            return True
        time.sleep(step)
    return False


BUNDLED = os.path.join(SRC, "models", "en-de")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def require_server():
    if not os.path.exists(SERVER):
        raise RuntimeError("missing %s: build first" % SERVER)


def nginx_conf(tmp, http, workers=1):
    """Writes tmp/nginx.conf for Debian's nginx run unprivileged in tmp (`nginx -c CONF -p
    tmp`; as root it keeps root's user): pid, error log and every temporary path in tmp,
    `http` the lines of the http block. Returns its path."""
    path = os.path.join(tmp, "nginx.conf")
    with open(path, "w") as f:
        f.write("""%(user)sworker_processes %(w)d;
error_log %(t)s/error.log info;
pid %(t)s/nginx.pid;
events { worker_connections 512; }
http {
    client_body_temp_path %(t)s/body;
    proxy_temp_path %(t)s/proxy;
    fastcgi_temp_path %(t)s/fastcgi;
    uwsgi_temp_path %(t)s/uwsgi;
    scgi_temp_path %(t)s/scgi;
%(http)s}
""" % {"t": tmp, "w": workers, "http": http, "user": "user root root;\n" if os.geteuid() == 0 else ""})
    return path


def float_weights(model_dir, scratch):
    """model_dir, or when it is stored int8 (I8 matrices, as the bundled models are: the
    CTranslate2 converter and other float-only readers do not take them) its float32 copy
    q * scale, written to scratch (which must not exist) by tools/quantize_model.py
    --dequantize: the weights the engine runs under --compute-type float32."""
    with open(os.path.join(model_dir, "model.safetensors"), "rb") as f:
        header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
    if not any(v.get("dtype") == "I8" for k, v in header.items() if k != "__metadata__"):
        return model_dir
    subprocess.run([PYTHON, os.path.join(SRC, "tools", "quantize_model.py"), "--dequantize", model_dir, scratch],
                   check=True, capture_output=True, timeout=300)
    return scratch


def eval_check(tool, args=(), timeout=900):
    """tools/TOOL --check with mt-translate and the bundled en-de model (tools/eval_spans.py,
    tools/eval_glossary.py: they read ../shared's debian-l10n data and skip themselves
    without it): its exit status, or 77 (a skip) without the bundled model."""
    model = os.path.join(BUNDLED, "model.safetensors")
    if not os.path.exists(model):
        print("SKIP: no bundled model at %s" % model)
        return 77
    return subprocess.run([sys.executable, os.path.join(SRC, "tools", tool), "--check", *args, "--cli", CLI,
                           "--model", BUNDLED], timeout=timeout).returncode


# ----------------------------------------------------------------------------- CTranslate2 / argos

CT2_SEEDS = os.path.join(SRC, "tests", "fuzz", "ct2")  # tiny model.bin files CTranslate2's spec classes wrote
CT2_TINY_TOKENS = ["</s>", "<unk>", "<s>"] + ["t%d" % i for i in range(7)]  # their shared vocabulary


def tiny_ct2_dir(out, spm=None, seed="post_float32.bin"):
    """A CTranslate2 directory at out without the peer: tests/fuzz/ct2/SEED as model.bin, its
    shared_vocabulary.json and config.json (source eos, start token </s>, as a converted Marian
    model has), and spm copied as sentencepiece.model when given. Returns out."""
    os.makedirs(out)
    shutil.copy(os.path.join(CT2_SEEDS, seed), os.path.join(out, "model.bin"))
    with open(os.path.join(out, "shared_vocabulary.json"), "w") as f:
        json.dump(CT2_TINY_TOKENS, f)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump({"add_source_bos": False, "add_source_eos": True, "bos_token": "<s>", "decoder_start_token": "</s>",
                   "eos_token": "</s>", "layer_norm_epsilon": None, "unk_token": "<unk>"}, f)
    if spm:
        shutil.copy(spm, os.path.join(out, "sentencepiece.model"))
    return out


def argos_package_dir(out, model_dir, spm, from_code="xx", to_code="yy"):
    """An unpacked argos-translate package at out, as argos-translate leaves one under
    ~/.local/share/argos-translate/packages/: metadata.json (from_code, to_code),
    sentencepiece.model (a copy of spm) and model/ (the plain files of the CTranslate2
    directory model_dir, its own sentencepiece.model left out). Returns out."""
    os.makedirs(os.path.join(out, "model"))
    with open(os.path.join(out, "metadata.json"), "w") as f:
        json.dump({"package_version": "1.0", "argos_version": "1.9", "from_code": from_code, "to_code": to_code,
                   "type": "translate"}, f)
    shutil.copy(spm, os.path.join(out, "sentencepiece.model"))
    for name in os.listdir(model_dir):
        if name != "sentencepiece.model" and os.path.isfile(os.path.join(model_dir, name)):
            shutil.copy(os.path.join(model_dir, name), os.path.join(out, "model", name))
    return out
