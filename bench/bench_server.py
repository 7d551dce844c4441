#!/usr/bin/python3
"""Benchmark of mt-server against mt-translate on the same input, in the same run.

Starts the real mt-server on a free loopback port, sends every input sentence as its own
POST /translate request from C concurrent clients (keep-alive connections) for each
concurrency in --concurrency, and reports sentences/s, source and target tokens/s (from
the server's own /metrics counters) and p50/p95/p99 request latency. The reference is
mt-translate translating the same sentences in one process with the same options, workers
and threads (its model load excluded); the server's sentence cache is off.
The server's dynamic batching should make concurrency-32 throughput at least twice
concurrency-1 throughput; --require-speedup makes that a pass/fail exit status.

Not a test: numbers depend on the machine. Loopback only; bounded in count and time.

  bench/bench_server.py --build build [--model models/en-de] [--sentences 400]
"""
import argparse
import gzip
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.environ.get("MT_SOURCE_DIR", os.path.join(HERE, "..")))
SHARED = os.path.abspath(os.environ.get("MT_SHARED_DIR", os.path.join(SRC, "..", "shared")))


def timed_run(cmd, data, limit):
    """(wall seconds, completed process) of cmd on stdin data; exits on failure."""
    t0 = time.perf_counter()
    r = subprocess.run(cmd, input=data, capture_output=True, timeout=limit)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit("bench_server: mt-translate failed: " + r.stderr.decode())
    return wall, r


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.environ.get("MT_BUILD_DIR", os.path.join(SRC, "build")))
    p.add_argument("--model", help="model directory (default: models/en-de, else a tiny random model)")
    p.add_argument("--input", help="one sentence per line (default: Multi30k test_2016_flickr.en)")
    p.add_argument("--sentences", type=int, default=400, help="sentences per phase")
    p.add_argument("--concurrency", default="1,8,32")
    p.add_argument("--workers", type=int, default=0, help="server workers (0: one per CPU)")
    p.add_argument("--threads-per-worker", type=int, default=1)
    p.add_argument("--beam", type=int, default=0, help="0: the model's default")
    p.add_argument("--max-length", type=int, default=0)
    p.add_argument("--batch-max-sentences", type=int, default=32)
    p.add_argument("--batch-max-wait-ms", type=int, default=5)
    p.add_argument("--time-limit", type=float, default=600, help="seconds per phase at most")
    p.add_argument("--require-speedup", type=float, default=0,
                   help="exit 1 unless c=32 (the largest) throughput is at least this times c=1")
    p.add_argument("--json", help="also write the results to this file")
    return p.parse_args()


def load_sentences(path, n):
    if path:
        with open(path, encoding="utf-8") as f:
            lines = [l.strip() for l in f if l.strip()]
    else:
        gz = os.path.join(SHARED, "data", "multi30k", "test_2016_flickr.en.gz")
        with gzip.open(gz, "rt", encoding="utf-8") as f:
            lines = [l.strip() for l in f if l.strip()]
    out = []
    while len(out) < n:
        out.extend(lines[: n - len(out)])
    return out


def percentile(values, q):
    if not values:
        return float("nan")
    v = sorted(values)
    k = (len(v) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


class Server:
    def __init__(self, binary, args, log_path):
        self.log_file = open(log_path, "wb")
        self.log_path = log_path
        self.proc = subprocess.Popen([binary, "--host", "127.0.0.1", "--port", "0", "--no-access-log"] + args,
                                     stdout=self.log_file, stderr=subprocess.STDOUT)
        self.port = None
        deadline = time.time() + 300
        while time.time() < deadline:
            with open(log_path, "rb") as f:
                log = f.read().decode("utf-8", "replace")
            m = re.search(r"event=listening host=\S+ port=(\d+)", log)
            if m and self.port is None:
                self.port = int(m.group(1))
            if "event=ready" in log:
                return
            if self.proc.poll() is not None:
                raise RuntimeError("mt-server exited:\n" + log)
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("mt-server did not become ready")

    def metric(self, name):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        c.request("GET", "/metrics")
        text = c.getresponse().read().decode()
        c.close()
        return sum(float(l.rsplit(" ", 1)[1]) for l in text.splitlines()
                   if l.startswith(name + " ") or l.startswith(name + "{"))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log_file.close()


def run_phase(srv, sentences, concurrency, options, time_limit):
    """Every sentence once, as its own request, from `concurrency` clients."""
    next_index = [0]
    lock = threading.Lock()
    latencies, failures = [], []
    results = [None] * len(sentences)
    deadline = time.time() + time_limit

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=300)
        while time.time() < deadline:
            with lock:
                i = next_index[0]
                next_index[0] += 1
            if i >= len(sentences):
                break
            body = dict(options, text=sentences[i])
            t0 = time.perf_counter()
            try:
                conn.request("POST", "/translate", body=json.dumps(body),
                             headers={"Content-Type": "application/json"})
                r = conn.getresponse()
                data = r.read()
                ok = r.status == 200
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=300)
                ok, data = False, str(e).encode()
            t1 = time.perf_counter()
            with lock:
                if ok:
                    latencies.append(t1 - t0)
                    results[i] = json.loads(data)["translations"][0]
                else:
                    failures.append(data[:200])
        conn.close()

    src0, tgt0 = srv.metric("mt_source_tokens_total"), srv.metric("mt_target_tokens_total")
    threads = [threading.Thread(target=client) for _ in range(concurrency)]
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    print("  (c=%d: clients used %.2f CPU s in %.2f s)" % (concurrency, time.process_time() - cpu0, wall))
    src1, tgt1 = srv.metric("mt_source_tokens_total"), srv.metric("mt_target_tokens_total")
    done = len(latencies)
    return {
        "concurrency": concurrency, "requests": done, "failures": len(failures), "wall_s": wall,
        "sentences_per_s": done / wall, "source_tokens_per_s": (src1 - src0) / wall,
        "target_tokens_per_s": (tgt1 - tgt0) / wall,
        "p50_ms": percentile(latencies, 0.50) * 1e3, "p95_ms": percentile(latencies, 0.95) * 1e3,
        "p99_ms": percentile(latencies, 0.99) * 1e3,
        "source_tokens": src1 - src0, "target_tokens": tgt1 - tgt0, "outputs": results,
    }


def main():
    a = parse_args()
    server_bin = os.path.join(a.build, "server", "mt-server")
    cli_bin = os.path.join(a.build, "cli", "mt-translate")
    for b in (server_bin, cli_bin):
        if not os.path.exists(b):
            sys.exit("bench_server: missing %s (build first)" % b)
    tmp = tempfile.mkdtemp(prefix="mt_bench_server_")
    try:
        model = a.model
        if not model:
            bundled = os.path.join(SRC, "models", "en-de")
            if os.path.exists(os.path.join(bundled, "model.safetensors")):
                model = os.path.join(tmp, "en-de")  # a snapshot: training may rewrite it
                shutil.copytree(bundled, model)
            else:
                model = os.path.join(tmp, "tiny")
                subprocess.run(["/usr/bin/python3", os.path.join(SRC, "tools", "make_test_model.py"), model],
                               check=True, capture_output=True)
        sentences = load_sentences(a.input, a.sentences)
        options, cli_args = {}, []
        if a.beam:
            options["beam_size"] = a.beam
            cli_args += ["--beam", str(a.beam)]
        if a.max_length:
            options["max_length"] = a.max_length
            cli_args += ["--max-length", str(a.max_length)]

        # Reference: the CLI on the same sentences, one process, its own batching, as many
        # workers of as many threads as the server; its start-up and model load (timed on
        # an empty input, best of 3) are subtracted, as the server's happen before phase 1.
        workers = a.workers or len(os.sched_getaffinity(0))
        cli_cmd = [cli_bin, "--model", model, "--threads", str(a.threads_per_worker), "--workers",
                   str(workers)] + cli_args
        load = min(timed_run(cli_cmd, b"", a.time_limit)[0] for _ in range(3))
        data = "".join(s + "\n" for s in sentences).encode()
        cli_wall, r = min((timed_run(cli_cmd, data, a.time_limit * 4) for _ in range(2)), key=lambda t: t[0])
        cli_wall = max(cli_wall - load, 1e-3)
        cli_out = r.stdout.decode().split("\n")[:-1]

        # The sentence cache is off: each phase sends the same sentences again, and the
        # cache would answer them without decoding (bench what decoding costs).
        args = ["--model", model, "--workers", str(a.workers), "--threads-per-worker", str(a.threads_per_worker),
                "--batch-max-sentences", str(a.batch_max_sentences), "--batch-max-wait-ms",
                str(a.batch_max_wait_ms), "--queue-capacity", "1024", "--sentence-cache-mb", "0"]
        srv = Server(server_bin, args, os.path.join(tmp, "server.log"))
        try:
            # Warm-up: first-touch allocations and caches, not counted.
            run_phase(srv, sentences[:16], 4, options, a.time_limit)
            phases = [run_phase(srv, sentences, int(c), options, a.time_limit)
                      for c in a.concurrency.split(",")]
        finally:
            srv.stop()

        tokens = phases[0]["target_tokens"] if phases[0]["requests"] == len(sentences) else float("nan")
        src_tokens = phases[0]["source_tokens"] if phases[0]["requests"] == len(sentences) else float("nan")
        print("mt-server benchmark: model %s, %d sentences per phase, workers %d, threads/worker %d"
              % (os.path.basename(model.rstrip("/")), len(sentences), workers, a.threads_per_worker))
        print("%-14s %10s %12s %12s %9s %9s %9s %6s" % ("run", "sent/s", "src tok/s", "tgt tok/s",
                                                       "p50 ms", "p95 ms", "p99 ms", "fail"))
        print("%-14s %10.1f %12.1f %12.1f %9s %9s %9s %6s" % (
            "mt-translate", len(sentences) / cli_wall, src_tokens / cli_wall, tokens / cli_wall, "-", "-", "-", "-"))
        for p in phases:
            print("%-14s %10.1f %12.1f %12.1f %9.1f %9.1f %9.1f %6d" % (
                "server c=%d" % p["concurrency"], p["sentences_per_s"], p["source_tokens_per_s"],
                p["target_tokens_per_s"], p["p50_ms"], p["p95_ms"], p["p99_ms"], p["failures"]))
        mismatches = sum(1 for p in phases for x, y in zip(p["outputs"], cli_out) if x is not None and x != y)
        first, last = phases[0], phases[-1]
        speedup = last["sentences_per_s"] / first["sentences_per_s"] if first["sentences_per_s"] else 0
        print("throughput c=%d / c=%d: %.2fx (dynamic batching; target >= 2x)"
              % (last["concurrency"], first["concurrency"], speedup))
        print("server c=%d / mt-translate: %.2fx" % (last["concurrency"],
                                                     last["sentences_per_s"] * cli_wall / len(sentences)))
        print("outputs differing from mt-translate: %d" % mismatches)
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"cli": {"wall_s": cli_wall, "sentences_per_s": len(sentences) / cli_wall},
                           "phases": [{k: v for k, v in p.items() if k != "outputs"} for p in phases],
                           "speedup": speedup, "mismatches": mismatches}, f, indent=2)
        bad = any(p["failures"] for p in phases) or mismatches
        if a.require_speedup and speedup < a.require_speedup:
            print("FAIL: speedup %.2f < %.2f" % (speedup, a.require_speedup))
            bad = True
        return 1 if bad else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
