#!/usr/bin/python3
"""Fairness under overload (issue 25 item 6): 32 clients sending requests of mixed sizes
(1 to 20 sentences of mixed lengths) back to back for a bounded time against one worker.
Under the old scheduler (each batch built around the oldest sentence of a request that
had not started, filled by length) a started request's odd-length sentences could be
overtaken indefinitely: 7 of the first 32 requests waited out the whole request timeout
while every later arrival was served.

What is asserted is structural, not a wall-clock threshold (the machine may be loaded):
first come, first served across requests, so a request is overtaken (a request sent
after it is answered before it) only by the few that get the fresh-request concession
(one sentence each in the next batch) while it is in the queue; never by everything that
arrives while it waits. The wait distribution per arrival order (p50/p99/max) is printed
for the record.

Then admission: with a request timeout, requests the queue cannot finish in time are
refused at once with 503 and a Retry-After, not left to time out inside (504).

Environment: MT_BUILD_DIR, MT_SOURCE_DIR, MT_SHARED_DIR (as test_server.py);
MT_OVERLOAD_SECONDS (default 30) how long the load runs.
"""
import http.client
import json
import os
import random
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mtfixtures as ts  # noqa: E402  (fixtures: Server, corpus_lines, BUNDLED)

CLIENTS = 32
SIZES = (1, 1, 2, 5, 10, 20)


def sentences():
    """Sentences of mixed lengths: short ones, corpus lines and long joined ones."""
    lines = ts.corpus_lines(200, seed=25)
    short = ["Hello.", "Thank you.", "Where is the station?", "I am here.", "Good night."]
    long_ = [" ".join(lines[i:i + 3]) for i in range(0, 60, 3)]
    return short + lines + long_


def percentile(values, q):
    v = sorted(values)
    if not v:
        return 0.0
    k = min(len(v) - 1, max(0, int(round(q / 100.0 * (len(v) - 1)))))
    return v[k]


class Load:
    """CLIENTS keep-alive clients, each sending its next request as soon as the last is
    answered, until `seconds` have passed. Each record: (arrival number, size, sent,
    answered, status, retry-after) with times from one monotonic clock."""

    def __init__(self, port, seconds, seed=1):
        self.port, self.seconds = port, seconds
        self.pool = sentences()
        self.lock = threading.Lock()
        self.seq = 0
        self.records, self.errors = [], []
        self.seed = seed

    def client(self, c, until):
        rnd = random.Random(self.seed * 1000 + c)
        conn = None
        while time.monotonic() < until:
            n = rnd.choice(SIZES)
            body = json.dumps({"text": [rnd.choice(self.pool) for _ in range(n)]})
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
                with self.lock:
                    seq = self.seq
                    self.seq += 1
                    sent = time.monotonic()
                conn.request("POST", "/translate", body=body, headers={"Content-Type": "application/json"})
                r = conn.getresponse()
                r.read()
                answered = time.monotonic()
                with self.lock:
                    self.records.append((seq, n, sent, answered, r.status, r.getheader("Retry-After")))
                if r.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conn = None
            except (OSError, http.client.HTTPException) as e:
                self.errors.append(repr(e))
                if conn:
                    conn.close()
                conn = None
        if conn:
            conn.close()

    def run(self):
        until = time.monotonic() + self.seconds
        threads = [threading.Thread(target=self.client, args=(c, until)) for c in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=self.seconds + 900)
        return self.records


def overtakers(records, min_size=1):
    """For each request: how many requests of at least min_size sentences sent after it
    were answered before it."""
    by_sent = sorted(records, key=lambda r: r[2])
    out = {}
    for i, r in enumerate(by_sent):
        out[r[0]] = sum(1 for q in by_sent[i + 1:] if q[3] < r[3] and q[1] >= min_size)
    return out


def report(records, label):
    """p50/p99/max of the wait per arrival-order group, printed for the record."""
    rec = sorted(records, key=lambda r: r[0])
    waits = [r[3] - r[2] for r in rec]
    lines = ["%s: %d requests, wait p50 %.2f s, p99 %.2f s, max %.2f s" % (
        label, len(waits), percentile(waits, 50), percentile(waits, 99), max(waits) if waits else 0)]
    groups = [(0, CLIENTS)] + [(a, a + 4 * CLIENTS) for a in range(CLIENTS, len(rec), 4 * CLIENTS)]
    for a, b in groups:
        w = waits[a:b]
        if w:
            lines.append("  arrivals %4d-%4d: p50 %6.2f s  p99 %6.2f s  max %6.2f s" % (
                a, min(b, len(rec)) - 1, percentile(w, 50), percentile(w, 99), max(w)))
    print("\n".join(lines), file=sys.stderr)
    return waits


class TestFairness(unittest.TestCase):

    def test_first_come_first_served(self):
        seconds = float(os.environ.get("MT_OVERLOAD_SECONDS", "30"))
        srv = ts.Server(["--model", ts.BUNDLED, "--workers", "1", "--batch-max-sentences", "32",
                         "--sentence-cache-mb", "0", "--request-timeout", "0", "--max-texts", "64"],
                        name="fcfs")
        try:
            load = Load(srv.port, seconds)
            records = load.run()
            self.assertEqual(load.errors, [])
            self.assertTrue(records)
            self.assertEqual({r[4] for r in records}, {200})
            waits = report(records, "fcfs")
            over = overtakers(records)
            worst = max(over.values())
            multi = overtakers(records, 2)
            worst_multi = max(multi.values())
            big = [over[r[0]] for r in records if r[1] == 20]
            print("overtaken by at most %d later requests, %d of several sentences (20-sentence "
                  "requests: at most %d); median wait %.2f s, max %.2f s" % (
                      worst, worst_multi, max(big) if big else -1, percentile(waits, 50), max(waits)),
                  file=sys.stderr)
            # Later requests that may finish first: one-sentence ones, whose sentence the
            # fresh-request concession takes into the next batch (bounded by the clients:
            # each has one request in flight), and a few of several sentences whose answer
            # went out a moment before an older one finished by the same batch. The old
            # scheduler let a request be overtaken by every later one while it starved
            # (measured: 77 and 96 later requests, 64 of several sentences, in 30 s runs;
            # this one: 17-24, 4-5; once 11 on a machine loaded by other test builds, where
            # the client threads read answers of one batch late and out of order). The bound
            # leaves room for that noise and stays far below the old scheduler's 53-64.
            self.assertLessEqual(worst_multi, CLIENTS // 2, sorted(multi.values())[-10:])
            self.assertLessEqual(worst, 2 * CLIENTS, sorted(over.values())[-10:])
        finally:
            self.assertEqual(srv.stop(), 0)


class TestAdmission(unittest.TestCase):

    def test_refused_when_it_cannot_finish_in_time(self):
        """Twelve requests of 64 long sentences at once against one worker and a 4 s
        timeout: those the queue cannot finish in time are answered 503 with a Retry-After
        of at least 1 s at once; before, all were queued and most timed out inside (504)."""
        srv = ts.Server(["--model", ts.BUNDLED, "--workers", "1", "--batch-max-sentences", "16",
                         "--sentence-cache-mb", "0", "--request-timeout", "4", "--max-texts", "64"],
                        name="admission")
        try:
            pool = sentences()
            # a few batches measure the pace
            for k in range(4):
                st, _, body = srv.post_json({"text": pool[k * 16:(k + 1) * 16]}, timeout=120)
                self.assertEqual(st, 200, body)
            longs = [s for s in pool if len(s) > 120] or pool
            results = []
            lock = threading.Lock()

            def client(i):
                texts = [longs[(i * 7 + k) % len(longs)] + " %d." % k for k in range(64)]
                st, hd, body = srv.post_json({"text": texts}, timeout=600)
                with lock:
                    results.append((st, hd.get("retry-after"), body))

            threads = [threading.Thread(target=client, args=(i,)) for i in range(12)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=600)
            statuses = sorted(r[0] for r in results)
            print("admission: %s" % statuses, file=sys.stderr)
            self.assertEqual(len(results), 12)
            refused = [r for r in results if r[0] == 503]
            self.assertTrue(refused, statuses)
            for st, after, body in refused:
                self.assertGreaterEqual(int(after), 1)
                self.assertIn("would not finish", body["error"])
            self.assertTrue(all(r[0] in (200, 503, 504) for r in results), statuses)
            # what was admitted was admitted because it could finish: timeouts are the
            # exception (an estimate on a shared machine), not the rule
            self.assertLessEqual(statuses.count(504), 2, statuses)
            self.assertGreater(srv.metric("mt_requests_rejected_total"), 0)
            st, _, body = srv.post_json({"text": "After the storm."}, timeout=120)
            self.assertEqual(st, 200, body)
        finally:
            self.assertEqual(srv.stop(), 0)


if __name__ == "__main__":
    import testmain
    sys.exit(testmain.run(__name__))
