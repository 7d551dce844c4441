#!/usr/bin/python3
"""Hostile and careless clients against the real mt-server (issue 13), with raw sockets
where an HTTP library would hide the bug: request smuggling (differing Content-Length
headers, Transfer-Encoding other than chunked, chunked plus Content-Length, a negative
length), %00 in the target, Host rules, compressed bodies, API keys in the URL or empty
in the body, liveness and readiness, control bytes in the access log, and SIGHUP during
requests. Loopback only, every wait bounded.

Environment: MT_BUILD_DIR, MT_SOURCE_DIR, MT_SHARED_DIR (as test_server.py).
"""
import json
import os
import signal
import socket
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mtfixtures as ts  # noqa: E402  (fixtures: Server, make_model, cli_translate)

MODEL = None


def setUpModule():
    global MODEL
    MODEL = ts.make_model("hard-en-de", 3)


def exchange(port, data, timeout=10.0):
    """Sends raw bytes and reads until the server closes or `timeout` passes; returns
    (everything read, whether the server closed the connection)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    out = b""
    closed = False
    try:
        s.sendall(data)
        deadline = time.time() + timeout
        while time.time() < deadline:
            s.settimeout(max(0.05, deadline - time.time()))
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                closed = True
                break
            if not chunk:
                closed = True
                break
            out += chunk
    finally:
        s.close()
    return out, closed


def exchange_from(src, port, data, timeout=10.0):
    """exchange() from a chosen loopback source address (all of 127/8 is loopback on
    Linux): per-address limits see another client."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    out = b""
    try:
        s.bind((src, 0))
        s.connect(("127.0.0.1", port))
        s.sendall(data)
        deadline = time.time() + timeout
        while time.time() < deadline:
            s.settimeout(max(0.05, deadline - time.time()))
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                break
            if not chunk:
                break
            out += chunk
    finally:
        s.close()
    return out


class Tricklers:
    """n connections (from the given source addresses, round robin) that each send a
    request header one byte per `pace` seconds and never finish it; `answers` collects
    what the server wrote to each (a 408 when it reclaimed or expired one)."""

    HEADER = b"POST /translate HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 4000

    def __init__(self, port, n, sources=("127.0.0.1",), pace=0.5):
        self.stop = threading.Event()
        self.socks, self.answers, self.pos = [], {}, {}
        for i in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((sources[i % len(sources)], 0))
            s.settimeout(10)
            s.connect(("127.0.0.1", port))
            s.setblocking(False)
            self.socks.append(s)
            self.answers[s] = b""
            self.pos[s] = 0
        self.pace = pace
        self.thread = threading.Thread(target=self.run)
        self.thread.start()

    def run(self):
        while not self.stop.is_set():
            for s in self.socks:
                try:
                    chunk = s.recv(4096)
                    self.answers[s] += chunk
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    pass
                if self.pos[s] < len(self.HEADER):
                    try:
                        s.send(self.HEADER[self.pos[s]:self.pos[s] + 1])
                        self.pos[s] += 1
                    except OSError:
                        self.pos[s] = len(self.HEADER)
            self.stop.wait(self.pace)  # the trickle's pace, not a wait for a condition

    def count(self, fragment):
        return sum(1 for a in list(self.answers.values()) if fragment in a)

    def close(self):
        self.stop.set()
        self.thread.join(timeout=60)
        for s in self.socks:
            s.close()


def statuses(raw):
    return [int(line.split()[1]) for line in raw.split(b"\r\n") if line.startswith(b"HTTP/1.")]


class HeldRequests:
    """n connections from `src` that each send a whole POST /translate header with
    'Expect: 100-continue' and none of its body: requests the server is reading, which
    count against the connection limits. The interim '100 Continue' comes once the server
    has read the header and taken the request in, so a test waits for it (all_in) before
    it probes. Probing earlier races the server's threads: a probe whose header is read
    before a held connection's is counted in its place, and the held one, now over the
    limit, is refused (503), after which every probe is let in (the ASan suite run once
    saw 200s for 20 s that way)."""

    def __init__(self, port, n, src="127.0.0.1", headers=b""):
        self.port, self.src, self.headers = port, src, headers
        self.socks, self.got, self.replaced = [], {}, []
        for _ in range(n):
            self.socks.append(self.open())

    def open(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.got[s] = [b"", False]  # what the server wrote, whether it closed
        try:
            s.bind((self.src, 0))
            s.settimeout(10)
            s.connect(("127.0.0.1", self.port))
            s.sendall(b"POST /translate HTTP/1.1\r\nHost: x\r\n" + self.headers + b"Content-Type: application/json\r\n"
                      b"Expect: 100-continue\r\nContent-Length: 100\r\n\r\n")
            s.setblocking(False)
        except OSError:
            s.close()
            raise
        return s

    def read(self):
        for s in self.socks:
            got = self.got[s]
            while not got[1]:
                try:
                    chunk = s.recv(4096)
                except (BlockingIOError, InterruptedError):
                    break
                except OSError:
                    chunk = b""
                got[0] += chunk
                got[1] = not chunk

    def settled(self):
        """Every connection taken in (100 Continue), or answered otherwise or closed."""
        self.read()
        return all(statuses(self.got[s][0]) or self.got[s][1] for s in self.socks)

    def all_in(self):
        """Every connection taken in and still held: only '100 Continue', still open."""
        self.read()
        return all(statuses(self.got[s][0]) == [100] and not self.got[s][1] for s in self.socks)

    def replace_refused(self):
        """Replaces each connection answered otherwise than 100 Continue, or closed, by a new one."""
        self.read()
        for i, s in enumerate(self.socks):
            data, closed = self.got[s]
            if closed or any(st != 100 for st in statuses(data)):
                self.replaced.append(self.describe_one(s))
                s.close()
                self.socks[i] = self.open()

    def describe_one(self, s):
        data, closed = self.got[s]
        lines = [ln.decode("latin-1") for ln in data.split(b"\r\n") if ln.startswith(b"HTTP/1.")]
        return "%s (%s)" % (" + ".join(lines) or "nothing", "closed" if closed else "open")

    def describe(self):
        """What each held connection got, for failure messages."""
        self.read()
        out = [self.describe_one(s) for s in self.socks]
        counts = {}
        for r in self.replaced:
            counts[r] = counts.get(r, 0) + 1
        return out + ["replaced %d got %s" % (n, r) for r, n in counts.items()]

    def close(self):
        for s in self.socks:
            s.close()


BODY = json.dumps({"text": "a b c"}).encode()
GET_HEALTH = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
GET_HEALTH_CLOSE = b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"


class TestSmuggling(unittest.TestCase):
    """Ambiguous framing gets one answer and a closed connection: what follows the headers
    is never run as a second request."""

    @classmethod
    def setUpClass(cls):
        cls.srv = ts.Server(["--model", MODEL, "--workers", "1"], name="smuggle")

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == 0

    def one_answer(self, data, status):
        raw, closed = exchange(self.srv.port, data)
        self.assertEqual(statuses(raw), [status], raw[:400])
        self.assertTrue(closed, "the connection was left open")
        self.assertNotIn(b'"status":"ok"', raw)  # the pipelined GET /health never ran
        return raw

    def test_two_different_content_lengths(self):
        raw = self.one_answer(b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                              b"Content-Length: %d\r\nContent-Length: 5\r\n\r\n" % len(BODY) + BODY
                              + GET_HEALTH, 400)
        self.assertIn(b"Content-Length", raw)

    def test_transfer_encoding_gzip_chunked(self):
        self.one_answer(b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        b"Transfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n" + GET_HEALTH, 501)

    def test_chunked_and_content_length(self):
        chunked = b"%x\r\n" % len(BODY) + BODY + b"\r\n0\r\n\r\n"
        self.one_answer(b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        b"Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n" + chunked + GET_HEALTH, 400)

    def test_negative_content_length(self):
        raw, closed = exchange(self.srv.port, b"POST /translate HTTP/1.1\r\nHost: x\r\n"
                               b"Content-Type: application/json\r\nContent-Length: -1\r\n\r\n" + BODY + GET_HEALTH)
        self.assertTrue(closed)
        # libmicrohttpd 0.9.75 (Debian 12) refuses this before any callback of ours runs, and
        # writes its 400 status line twice; what we hold it to: only 400s, the connection
        # closed, and nothing after the headers run as a request.
        self.assertEqual(set(statuses(raw)), {400}, raw[:400])
        self.assertNotIn(b'"status":"ok"', raw)

    def test_plain_chunked_still_works(self):
        chunked = b"%x\r\n" % len(BODY) + BODY + b"\r\n0\r\n\r\n"
        raw, _ = exchange(self.srv.port, b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + chunked)
        self.assertEqual(statuses(raw), [200], raw[:400])


class TestTargetsAndHeaders(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = ts.Server(["--model", MODEL, "--workers", "1"], name="targets")

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == 0

    def status_of(self, request):
        raw, _ = exchange(self.srv.port, request, timeout=5)
        st = statuses(raw)
        self.assertTrue(st, raw[:300])
        return st[0]

    def test_nul_in_the_path_is_not_found(self):
        self.assertEqual(self.status_of(b"GET /health%00 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"), 404)
        self.assertEqual(self.status_of(b"POST /translate%00x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                        + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(BODY) + BODY), 404)

    def test_nul_in_the_query_is_bad_request(self):
        self.assertEqual(self.status_of(b"GET /health?x=%00 HTTP/1.1\r\nHost: x\r\n\r\n"), 400)

    def test_host_rules(self):
        self.assertEqual(self.status_of(b"GET /health HTTP/1.1\r\n\r\n"), 400)
        self.assertEqual(self.status_of(b"GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), 400)
        self.assertEqual(self.status_of(b"GET /health HTTP/1.0\r\n\r\n"), 200)  # 1.0 needs none

    def test_compressed_body_is_unsupported_media_type(self):
        import gzip
        body = gzip.compress(BODY)
        st, _, answer = self.srv.request("POST", "/translate", body, {
            "Content-Type": "application/json", "Content-Encoding": "gzip"})
        self.assertEqual(st, 415, answer)
        self.assertIn(b"Content-Encoding", answer)

    def test_liveness_and_readiness(self):
        for path, want in (("/health/live", "alive"), ("/health/ready", "ok"), ("/health", "ok")):
            st, _, body = self.srv.request("GET", path)
            self.assertEqual(st, 200, path)
            self.assertEqual(json.loads(body)["status"], want)

    def test_control_bytes_are_escaped_in_the_access_log(self):
        self.status_of(b"GET /he%01llo%0aevent=forged HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        ok = ts.wait_until(lambda: "\\x01" in self.srv.log(), timeout=60)
        self.assertTrue(ok, self.srv.log()[-2000:])
        self.assertNotIn("\nevent=forged", self.srv.log())


class TestApiKeyPlaces(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = ts.Server(["--model", MODEL, "--api-key", "k1"], name="keys")

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == 0

    def test_key_in_the_url(self):
        st, _, body = self.srv.post_json({"q": "a b", "target": "de"}, path="/translate?api_key=k1")
        self.assertEqual(st, 200, body)
        st, _, _ = self.srv.post_json({"q": "a b", "target": "de"}, path="/translate?api_key=nope")
        self.assertEqual(st, 403)

    def test_empty_body_key_with_a_header_key(self):
        st, _, body = self.srv.post_json({"q": "a b", "target": "de", "api_key": ""}, {"X-API-Key": "k1"})
        self.assertEqual(st, 200, body)
        st, _, _ = self.srv.post_json({"q": "a b", "target": "de", "api_key": ""})
        self.assertEqual(st, 403)


class TestSighup(unittest.TestCase):
    """SIGHUP is logged and ignored: every request in flight is answered, the server stays
    up, and SIGTERM still drains."""

    def test_sighup_during_requests(self):
        srv = ts.Server(["--model", MODEL, "--workers", "1", "--sentence-cache-mb", "0"], name="hup")
        results = []
        lock = threading.Lock()

        def client(i):
            st, _, body = srv.post_json({"text": ["w%d x y z %d" % (i, k) for k in range(8)]}, timeout=120)
            with lock:
                results.append(st)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        # three SIGHUPs while requests are in flight, each once the last was handled
        self.assertTrue(ts.wait_until(lambda: srv.metric("mt_queue_requests") >= 1, timeout=120))
        for k in range(3):
            srv.proc.send_signal(signal.SIGHUP)
            self.assertTrue(ts.wait_until(lambda: srv.log().count("sighup_ignored") > k, timeout=60))
        for t in threads:
            t.join(timeout=180)
        try:
            self.assertEqual(results, [200] * 16)
            self.assertIsNone(srv.proc.poll())
            self.assertEqual(srv.request("GET", "/health")[0], 200)
            self.assertIn("sighup_ignored", srv.log())
        finally:
            self.assertEqual(srv.stop(), 0)


class TestMetricsAccess(unittest.TestCase):
    """/metrics is protected like the API once keys exist: an API key or the metrics key
    opens it, --metrics-public makes it open; it reports build_info and process_* metrics."""

    def test_protected_with_keys(self):
        srv = ts.Server(["--model", MODEL, "--api-key", "k1", "--metrics-key", "scrape"], name="metrics-keys")
        try:
            self.assertEqual(srv.request("GET", "/metrics")[0], 403)
            self.assertEqual(srv.request("GET", "/metrics", headers={"X-API-Key": "wrong"})[0], 403)
            self.assertEqual(srv.request("GET", "/metrics", headers={"X-API-Key": "k1"})[0], 200)
            self.assertEqual(srv.request("GET", "/metrics", headers={"Authorization": "Bearer scrape"})[0], 200)
            self.assertEqual(srv.request("GET", "/metrics?api_key=scrape")[0], 200)
            # the metrics key opens nothing else
            st, _, _ = srv.post_json({"q": "a b", "target": "de"}, {"X-API-Key": "scrape"})
            self.assertEqual(st, 403)
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_public_and_process_metrics(self):
        srv = ts.Server(["--model", MODEL, "--api-key", "k1", "--metrics-public"], name="metrics-public")
        try:
            st, _, body = srv.request("GET", "/metrics")
            self.assertEqual(st, 200)
            text = body.decode()
            values = {}
            for line in text.splitlines():
                if line and not line.startswith("#"):
                    name, value = line.rsplit(" ", 1)
                    values[name] = float(value)
            self.assertEqual(values['mt_build_info{version="0.1.0"}'], 1)
            with open("/proc/%d/statm" % srv.proc.pid) as f:
                rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            self.assertGreater(values["process_resident_memory_bytes"], rss / 2)
            self.assertLess(values["process_resident_memory_bytes"], rss * 2)
            self.assertGreaterEqual(values["process_open_fds"], 3)
            self.assertLess(abs(values["process_start_time_seconds"] - time.time()), 600)
            self.assertGreater(values["process_cpu_seconds_total"], 0)
            for t in ("process_cpu_seconds_total counter", "process_resident_memory_bytes gauge"):
                self.assertIn("# TYPE " + t, text)
        finally:
            self.assertEqual(srv.stop(), 0)


class TestSlowClients(unittest.TestCase):
    """Slowloris: connections that trickle one header byte at a time cannot lock others out.
    A full table reclaims the connection that has waited longest for its header (408);
    with none to reclaim, or over --max-connections-per-ip, a connection gets 503 at once
    and is closed; a request not received whole within --receive-timeout gets 408 and is
    closed."""

    def test_tricklers_are_cut_and_others_served(self):
        srv = ts.Server(["--model", MODEL, "--max-connections", "8", "--max-connections-per-ip", "0",
                         "--receive-timeout", "6"], name="slow")
        tr = None
        try:
            tr = Tricklers(srv.port, 12, pace=0.2)
            # over the limit, each newcomer takes the slot of the trickler that has waited
            # longest for its header (408), so a normal client is served at once
            self.assertTrue(ts.wait_until(lambda: tr.count(b"reclaimed") >= 4, timeout=30, step=0.1))
            raw = exchange_from("127.0.0.1", srv.port, GET_HEALTH_CLOSE, timeout=10)
            self.assertEqual(statuses(raw), [200], raw[:300])
            # the rest are cut after receive_timeout (408)
            self.assertTrue(ts.wait_until(lambda: tr.count(b"408") == 12, timeout=60, step=0.2),
                            sorted(set(tr.answers.values()))[:4])
            self.assertEqual(tr.count(b" 503 "), 0)
        finally:
            if tr:
                tr.close()
            self.assertEqual(srv.stop(), 0)

    def test_full_of_requests_being_read_is_503(self):
        """Connections whose header is in are being served and never reclaimed: with all
        slots held by them a newcomer gets 503 with Retry-After, closed at once."""
        srv = ts.Server(["--model", MODEL, "--max-connections", "4", "--max-connections-per-ip", "0",
                         "--receive-timeout", "300"], name="full-busy")
        held = None
        try:
            held = HeldRequests(srv.port, 4)
            # Probing before all four are taken in would rightly reclaim one whose header is
            # not read yet (408). Until the server has closed it, the readiness check's
            # connection can fill the table for a moment too: a held one reclaimed so is
            # replaced.
            ok = ts.wait_until(lambda: held.replace_refused() or held.all_in(), timeout=60, step=0.05)
            self.assertTrue(ok, held.describe())
            raw, closed = exchange(srv.port, GET_HEALTH_CLOSE, timeout=10)
            self.assertEqual(statuses(raw), [503], (raw[:300], held.describe()))
            self.assertIn(b"Retry-After", raw)
            self.assertTrue(closed)
            self.assertTrue(held.all_in(), held.describe())  # none of them was reclaimed for it
            held.close()
            self.assertTrue(ts.wait_until(lambda: srv.request("GET", "/health", timeout=5)[0] == 200, timeout=20))
        finally:
            if held:
                held.close()
            self.assertEqual(srv.stop(), 0)

    def test_per_address_limit(self):
        # from an address no other connection used (the readiness check's from 127.0.0.1
        # may not be closed yet, and would count)
        srv = ts.Server(["--model", MODEL, "--max-connections-per-ip", "4", "--receive-timeout", "300"],
                        name="perip")
        held = None
        try:
            held = HeldRequests(srv.port, 4, src="127.0.0.5")
            # each is counted from its accept; its 100 Continue says it was (a probe accepted
            # first would take its place, and the held one be refused)
            self.assertTrue(ts.wait_until(held.settled, timeout=60, step=0.05), held.describe())
            self.assertTrue(held.all_in(), held.describe())
            raw = exchange_from("127.0.0.5", srv.port, GET_HEALTH_CLOSE, timeout=10)
            self.assertEqual(statuses(raw), [503], (raw[:300], held.describe()))
            self.assertIn(b"this address", raw)
            raw = exchange_from("127.0.0.1", srv.port, GET_HEALTH_CLOSE, timeout=10)  # others are served
            self.assertEqual(statuses(raw), [200], raw[:300])
            self.assertTrue(held.all_in(), held.describe())
            held.close()
            ok = ts.wait_until(lambda: statuses(exchange_from("127.0.0.5", srv.port, GET_HEALTH_CLOSE,
                                                              timeout=5)) == [200], timeout=30, step=0.2)
            self.assertTrue(ok, "127.0.0.5 still refused after its connections closed")
        finally:
            if held:
                held.close()
            self.assertEqual(srv.stop(), 0)


class TestTableFull(unittest.TestCase):
    """70 connections trickling a request header from one address against
    --max-connections 64 used to get every other client a 503 for as long as they stayed
    (the per-address limit was off by default and slots were never reclaimed from
    connections without a whole header). Now the per-address limit is on by default, and
    a full table reclaims the connection that has waited longest for its header (408)
    before it refuses anyone."""

    def test_one_address_cannot_lock_others_out(self):
        srv = ts.Server(["--model", MODEL, "--max-connections", "64", "--receive-timeout", "300"],
                        name="table-one-addr")
        tr = None
        try:
            tr = Tricklers(srv.port, 70)
            # all are in once the six over the limit were refused (the table holds 64 of them)
            ok = ts.wait_until(lambda: tr.count(b" 503 ") >= 6, timeout=120, step=0.2)
            self.assertTrue(ok, (sorted(set(tr.answers.values()))[:4], srv.log()[-3000:]))
            for src in ("127.0.0.2", "127.0.0.3"):
                raw = exchange_from(src, srv.port, GET_HEALTH_CLOSE, timeout=10)
                self.assertEqual(statuses(raw), [200], (src, raw[:300], srv.log()[-3000:]))
            self.assertIn(b"this address", b"".join(tr.answers.values()))  # the six were refused so
        finally:
            if tr:
                tr.close()
            self.assertEqual(srv.stop(), 0)

    def test_full_table_reclaims_header_waiters(self):
        # no per-address limit, as before: the table itself fills with tricklers
        srv = ts.Server(["--model", MODEL, "--max-connections", "64", "--max-connections-per-ip", "0",
                         "--receive-timeout", "300"], name="table-full")
        tr = None
        try:
            tr = Tricklers(srv.port, 70)
            # the 65th..70th trickler each took the slot of the oldest one (408)
            ok = ts.wait_until(lambda: tr.count(b"reclaimed") >= 6, timeout=60, step=0.2)
            self.assertTrue(ok, "no trickler was reclaimed: %r" % sorted(set(tr.answers.values()))[:5])
            self.assertEqual(tr.count(b" 503 "), 0)
            for src in ("127.0.0.2", "127.0.0.1"):
                raw = exchange_from(src, srv.port, GET_HEALTH_CLOSE, timeout=10)
                self.assertEqual(statuses(raw), [200], raw[:300])
            # the first newcomer took a trickler's slot; the second found the first's free
            self.assertTrue(ts.wait_until(lambda: tr.count(b"reclaimed") >= 7, timeout=30))
            self.assertIn("connection_reclaimed", srv.log())
        finally:
            if tr:
                tr.close()
            self.assertEqual(srv.stop(), 0)


class TestTrustedProxies(unittest.TestCase):
    """server.trusted_proxies: X-Forwarded-For / Forwarded from a listed proxy name the
    client for the rate limits, the per-address limit and the access log; the same
    headers from anyone else are ignored."""

    @classmethod
    def setUpClass(cls):
        cls.srv = ts.Server(["--model", MODEL, "--trusted-proxies", "127.0.0.2/32, ::1",
                             "--req-limit", "3", "--max-connections-per-ip", "2", "--receive-timeout", "300"],
                            name="proxies")

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == 0

    def post(self, src, headers=b""):
        body = json.dumps({"q": "a b", "source": "en", "target": "de"}).encode()
        raw = exchange_from(src, self.srv.port, b"POST /translate HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                            b"Content-Type: application/json\r\n" + headers +
                            b"Content-Length: %d\r\n\r\n" % len(body) + body, timeout=30)
        st = statuses(raw)
        self.assertEqual(len(st), 1, raw[:300])
        return st[0]

    def test_rate_limit_by_forwarded_client(self):
        xff = b"X-Forwarded-For: 203.0.113.7, 10.0.0.1\r\n"  # 10.0.0.1: the client (nearest untrusted)
        self.assertEqual([self.post("127.0.0.2", xff) for _ in range(4)], [200, 200, 200, 429])
        self.assertEqual(self.post("127.0.0.2", b"X-Forwarded-For: 10.0.0.2\r\n"), 200)
        self.assertEqual(self.post("127.0.0.2", b'Forwarded: for="10.0.0.3:5555";proto=http\r\n'), 200)
        self.assertEqual(self.post("127.0.0.2", b"Forwarded: for=10.0.0.1\r\n"), 429)  # same client
        self.assertTrue(ts.wait_until(lambda: "remote=10.0.0.1 " in self.srv.log(), timeout=10))
        self.assertIn("remote=10.0.0.3 ", self.srv.log())

    def test_headers_from_others_are_ignored(self):
        got = [self.post("127.0.0.4", b"X-Forwarded-For: 10.9.9.%d\r\n" % i) for i in range(4)]
        self.assertEqual(got, [200, 200, 200, 429])
        self.assertNotIn("remote=10.9.9.", self.srv.log())

    def test_per_address_limit_behind_the_proxy(self):
        # two connections of one forwarded client, header in, body pending; each counts for
        # 10.0.1.1 from when its header is read, which its 100 Continue says (a probe read
        # first would count in its place and the held one be refused)
        held = HeldRequests(self.srv.port, 2, src="127.0.0.2", headers=b"X-Forwarded-For: 10.0.1.1\r\n")
        try:
            self.assertTrue(ts.wait_until(held.settled, timeout=60, step=0.05), held.describe())
            self.assertTrue(held.all_in(), held.describe())
            raw = exchange_from("127.0.0.2", self.srv.port, b"GET /health HTTP/1.1\r\nHost: x\r\n"
                                b"X-Forwarded-For: 10.0.1.1\r\nConnection: close\r\n\r\n", timeout=10)
            self.assertEqual(statuses(raw), [503], (raw[:300], held.describe()))
            self.assertIn(b"this address", raw)
            # the proxy's other clients, and the proxy's own address, are not held back
            for xff in (b"X-Forwarded-For: 10.0.1.2\r\n", b""):
                raw = exchange_from("127.0.0.2", self.srv.port, b"GET /health HTTP/1.1\r\nHost: x\r\n" + xff +
                                    b"Connection: close\r\n\r\n", timeout=10)
                self.assertEqual(statuses(raw), [200], (xff, raw[:300]))
            self.assertTrue(held.all_in(), held.describe())  # still held, untouched by the probes
        finally:
            held.close()


def multipart(fields, files, boundary="hardB0undary"):
    """A multipart/form-data body: fields {name: value}, files [(name, filename, bytes)]."""
    out = b""
    for k, v in fields.items():
        out += ("--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n%s\r\n" % (boundary, k, v)).encode()
    for name, filename, data in files:
        out += ("--%s\r\nContent-Disposition: form-data; name=\"%s\"; filename=\"%s\"\r\n"
                "Content-Type: application/octet-stream\r\n\r\n" % (boundary, name, filename)).encode() + data + b"\r\n"
    out += ("--%s--\r\n" % boundary).encode()
    return out, "multipart/form-data; boundary=" + boundary


def upload_from(src, port, filename, data, fields=None, headers=b""):
    """POST /translate_file over a raw socket from loopback address src: (status,
    headers dict, parsed body)."""
    body, ctype = multipart(dict({"source": "en", "target": "de"}, **(fields or {})), [("file", filename, data)])
    raw = exchange_from(src, port, b"POST /translate_file HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                        b"Content-Type: " + ctype.encode() + b"\r\n" + headers +
                        b"Content-Length: %d\r\n\r\n" % len(body) + body, timeout=30)
    head, _, payload = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    hd = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
    return int(lines[0].split()[1]), hd, json.loads(payload) if payload.startswith(b"{") else payload


def wait_download(srv, url, timeout=120):
    """Polls the download until it is no longer running: (status, headers, body)."""
    path = "/download_file/" + url.rsplit("/download_file/", 1)[1]
    got = []
    ts.wait_until(lambda: got.append(srv.request("GET", path, timeout=30)) or got[-1][0] != 202,
                  timeout=timeout, step=0.05)
    return got[-1]


def docx_with_text(chars):
    """A .docx whose text is `chars` characters: 4 KB deflated, whatever its text."""
    import io
    import zipfile
    para = "The cat sat on the mat. " * 40
    n = max(1, chars // len(para))
    doc = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<w:document xmlns:w="http://'
           'schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>' +
           "".join("<w:p><w:r><w:t>%s</w:t></w:r></w:p>" % para for _ in range(n)) + "</w:body></w:document>")
    ct = ('<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/'
          '2006/content-types"><Override PartName="/word/document.xml" ContentType="application/'
          'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>')
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", ct)
        z.writestr("_rels/.rels", '<?xml version="1.0"?><Relationships xmlns="http://schemas.'
                   'openxmlformats.org/package/2006/relationships"/>')
        z.writestr("word/document.xml", doc)
    return buf.getvalue(), n * len(para)


class TestFileLimits(unittest.TestCase):
    """64 uploads of 4 bytes from one address used to fill the spool for an hour, every
    other client getting 503 with 'Retry-After: 1'. Now one client (an address, or a valid
    key) holds at most limits.max_file_jobs_per_client files (429), others still get in,
    and every refusal's Retry-After says when the first slot that would let it in frees."""

    def test_one_client_cannot_fill_the_spool(self):
        srv = ts.Server(["--model", MODEL, "--workers", "1"], name="files-per-client")
        try:
            answers = [upload_from("127.0.0.1", srv.port, "f%d.txt" % i, b"a b\n") for i in range(64)]
            ok = [a for a in answers if a[0] == 200]
            refused = [a for a in answers if a[0] != 200]
            self.assertEqual(len(ok), 8, [a[0] for a in answers])  # the default per client
            self.assertEqual({a[0] for a in refused}, {429})
            for st, hd, body in refused:
                # the earliest of its files expires a file_ttl (3600 s) after it finished
                self.assertGreater(int(hd["retry-after"]), 3000, hd)
                self.assertIn("per client", body["error"])
            for src in ("127.0.0.2", "127.0.0.3"):
                st, hd, body = upload_from(src, srv.port, "other.txt", b"a b\n")
                self.assertEqual(st, 200, body)
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_full_spool_says_when_a_slot_frees(self):
        srv = ts.Server(["--model", MODEL, "--workers", "1", "--max-file-jobs", "2",
                         "--max-file-jobs-per-client", "0", "--file-ttl", "600"], name="files-full")
        try:
            for i in range(2):
                st, _, body = upload_from("127.0.0.%d" % (i + 1), srv.port, "a.txt", b"a b\n")
                self.assertEqual(st, 200, body)
            st, hd, body = upload_from("127.0.0.3", srv.port, "a.txt", b"a b\n")
            self.assertEqual(st, 503, body)
            self.assertGreater(int(hd["retry-after"]), 500, hd)  # not 1
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_characters_are_counted_after_extraction(self):
        """A 4 KB .docx holding 40,000 characters used to pass a 5,000-characters-per-minute
        limit (its compressed size was counted); its job now fails with the reason."""
        data, chars = docx_with_text(40000)
        self.assertLess(len(data), 5000)
        srv = ts.Server(["--model", MODEL, "--workers", "1", "--char-limit-per-minute", "5000"], name="files-chars")
        try:
            st, _, body = upload_from("127.0.0.1", srv.port, "big.docx", data)
            self.assertEqual(st, 200, body)
            st, _, raw = wait_download(srv, body["translatedFileUrl"])
            self.assertEqual(st, 422, raw[:300])
            self.assertIn(b"%d characters" % chars, raw)
            # a small one from someone else still passes
            small, _ = docx_with_text(900)
            st, _, body = upload_from("127.0.0.2", srv.port, "small.docx", small)
            self.assertEqual(st, 200, body)
            st, _, raw = wait_download(srv, body["translatedFileUrl"])
            self.assertEqual(st, 200, raw[:300])
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_valid_keys_are_counted_apart_from_their_address(self):
        """With API keys, a client presenting a valid key is that key, wherever it comes
        from: two keys behind one address each have the whole per-client limit, and a key
        that reached it is refused from another address too. Without a key (or with a
        wrong one) nothing is accepted, so no address-only client shares the count."""
        srv = ts.Server(["--model", MODEL, "--workers", "1", "--api-key", "kA", "--api-key", "kB",
                         "--max-file-jobs-per-client", "2"], name="files-per-key")
        try:
            def up(key=None, src="127.0.0.1", header=False):
                fields = {"api_key": key} if key and not header else None
                headers = b"X-API-Key: %s\r\n" % key.encode() if key and header else b""
                return upload_from(src, srv.port, "k.txt", b"a b\n", fields=fields, headers=headers)

            for i in range(2):
                st, _, body = up("kA")
                self.assertEqual(st, 200, (i, body))
            st, hd, body = up("kA")
            self.assertEqual(st, 429, body)
            self.assertIn("per client", body["error"])
            self.assertIn("retry-after", hd)
            # the same key in a header, or from another address, is the same client
            self.assertEqual(up("kA", header=True)[0], 429)
            self.assertEqual(up("kA", src="127.0.0.2")[0], 429)
            # another valid key from the same address is another client, with its own limit
            for i in range(2):
                st, _, body = up("kB", header=i == 1)
                self.assertEqual(st, 200, (i, body))
            self.assertEqual(up("kB")[0], 429)
            # no key or a wrong one: refused before counting (keys are required)
            for key in (None, "nope"):
                st, _, body = up(key)
                self.assertEqual(st, 403, (key, body))
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_keys_on_an_open_server_count_as_the_address(self):
        """Without configured keys no key is valid: a different api_key per upload does not
        buy a fresh allowance, the uploads count as their address."""
        import secrets
        srv = ts.Server(["--model", MODEL, "--workers", "1", "--max-file-jobs-per-client", "2"],
                        name="files-open-keys")
        try:
            got = [upload_from("127.0.0.1", srv.port, "o.txt", b"a b\n",
                               fields={"api_key": secrets.token_hex(8)})[0] for _ in range(4)]
            self.assertEqual(got, [200, 200, 429, 429])
            self.assertEqual(upload_from("127.0.0.2", srv.port, "o.txt", b"a b\n")[0], 200)
        finally:
            self.assertEqual(srv.stop(), 0)


class TestFileJobAtShutdown(unittest.TestCase):
    """SIGTERM while a file job translates: the shutdown's abort cancels its chunk or refuses
    the next one. That was logged as a failure of ours (status=500, "translation was
    cancelled") or as "the translation queue is full"; it is now the job stopped because
    the server is shutting down (503), and the server still exits 0."""

    def test_file_job_stopped_by_sigterm_says_shutting_down(self):
        # about 20 s of work here (one batch of 160 units done after 0.5 s): far from done
        # when the first units are, even on a much faster machine
        srv = ts.Server(["--model", MODEL, "--workers", "1", "--batch-max-sentences", "1", "--beam", "8",
                         "--drain-timeout", "0"], name="files-shutdown")
        stopped = False
        try:
            text = "".join("Line %d: the cat sat on the mat near the house number %d.\n" % (i, i * 7)
                           for i in range(8000)).encode()
            st, _, body = upload_from("127.0.0.1", srv.port, "long.txt", text)
            self.assertEqual(st, 200, body)
            path = "/download_file/" + body["translatedFileUrl"].rsplit("/download_file/", 1)[1]

            def started():  # some units done, the job still running
                st, _, raw = srv.request("GET", path, timeout=30)
                self.assertEqual(st, 202, raw[:300])  # finished before the signal: make the file longer
                return json.loads(raw)["done"] > 0

            self.assertTrue(ts.wait_until(started, timeout=120, step=0.05), srv.log())
            self.assertEqual(srv.stop(), 0, srv.log())
            stopped = True
            log = srv.log()
            lines = [ln for ln in log.splitlines() if "event=files" in ln and "units_done=" in ln]
            self.assertEqual(len(lines), 1, log)
            self.assertIn('msg="stopped: the server is shutting down" status=503', lines[0])
            self.assertNotIn("queue is full", log)
            self.assertNotIn('msg="translation failed"', log)
        finally:
            if not stopped:
                srv.stop()


class TestRateLimitClients(unittest.TestCase):
    """Rate limits key on a valid API key only: on a server without keys a different
    api_key per request bought a fresh allowance (20 of 20 passed a limit of 5). /suggest
    is limited (it was never: the database grew 50 MB/s)."""

    def test_unknown_keys_count_as_the_address(self):
        import secrets
        srv = ts.Server(["--model", MODEL, "--workers", "1", "--req-limit", "5"], name="rl-open")
        try:
            got = [srv.post_json({"q": "a b", "source": "en", "target": "de",
                                  "api_key": secrets.token_hex(8)})[0] for _ in range(20)]
            self.assertEqual(got, [200] * 5 + [429] * 15)
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_valid_keys_are_clients_of_their_own(self):
        srv = ts.Server(["--model", MODEL, "--workers", "1", "--req-limit", "2", "--api-key", "k1",
                         "--api-key", "k2"], name="rl-keys")
        try:
            req = {"q": "a b", "source": "en", "target": "de"}
            self.assertEqual([srv.post_json(dict(req, api_key="k1"))[0] for _ in range(3)], [200, 200, 429])
            # the same key in a header is the same client; another valid key is another
            self.assertEqual(srv.post_json(req, {"X-API-Key": "k1"})[0], 429)
            self.assertEqual([srv.post_json(req, {"Authorization": "Bearer k2"})[0] for _ in range(3)],
                             [200, 200, 429])
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_suggest_is_limited(self):
        db = os.path.join(ts.TMP, "suggest-limit.db")
        srv = ts.Server(["--model", MODEL, "--workers", "1", "--suggestions-db", db, "--suggest-limit", "3"],
                        name="rl-suggest")
        try:
            sug = {"q": "Hello", "s": "Hallo", "source": "en", "target": "de"}
            got = [srv.post_json(sug, path="/suggest")[0] for _ in range(5)]
            self.assertEqual(got, [200, 200, 200, 429, 429])
            st, hd, body = srv.post_json(sug, path="/suggest")
            self.assertGreaterEqual(int(hd["retry-after"]), 1)
            self.assertIn("suggestions", body["error"])
        finally:
            self.assertEqual(srv.stop(), 0)


class TestSmallFileAndKeyFixes(unittest.TestCase):
    """Item 15: long names keep their extension; an empty Bearer header does not hide a
    valid X-API-Key; the Host header is not copied into the download URL; a crashed
    server leaves no user's file behind; a failed file job logs its reason."""

    def test_long_name_keeps_its_extension(self):
        srv = ts.Server(["--model", MODEL, "--workers", "1"], name="longname")
        try:
            name = "n" * 300 + ".txt"
            st, _, body = upload_from("127.0.0.1", srv.port, name, b"a b\n")
            self.assertEqual(st, 200, body)
            st, hd, raw = wait_download(srv, body["translatedFileUrl"])
            self.assertEqual(st, 200, raw[:200])
            disp = hd["content-disposition"]
            self.assertTrue(disp.endswith('.txt"'), disp)
            self.assertLessEqual(len(disp.split('filename="', 1)[1]) - 1, 255)
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_empty_bearer_does_not_hide_x_api_key(self):
        srv = ts.Server(["--model", MODEL, "--workers", "1", "--api-key", "k1"], name="bearer")
        try:
            body = json.dumps({"q": "a b", "source": "en", "target": "de"}).encode()
            for auth in (b"Bearer ", b"Bearer    ", b"Bearer\t"):
                raw, _ = exchange(srv.port, b"POST /translate HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                                  b"Content-Type: application/json\r\nAuthorization: " + auth + b"\r\n"
                                  b"X-API-Key: k1\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
                self.assertEqual(statuses(raw), [200], (auth, raw[:300]))
            self.assertEqual(srv.post_json({"q": "a", "target": "de"}, {"Authorization": "Bearer "})[0], 403)
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_host_header_is_not_the_download_url(self):
        srv = ts.Server(["--model", MODEL, "--workers", "1"], name="host-url")
        pub = ts.Server(["--model", MODEL, "--workers", "1", "--public-url", "https://mt.example.org/"],
                        name="public-url")
        try:
            for server, prefix in ((srv, "/download_file/"), (pub, "https://mt.example.org/download_file/")):
                st, _, body = upload_from("127.0.0.1", server.port, "a.txt", b"a b\n",
                                          headers=b"X-Forwarded-Host: evil.example\r\n")
                self.assertEqual(st, 200, body)
                # the raw Host of upload_from is "x": a client could send any
                url = body["translatedFileUrl"]
                self.assertTrue(url.startswith(prefix), url)
                self.assertNotIn("evil", url)
                self.assertNotIn("//x/", url)
                self.assertRegex(url.rsplit("/", 1)[1], r"^[0-9a-f]{32}$")
        finally:
            self.assertEqual(srv.stop(), 0)
            self.assertEqual(pub.stop(), 0)

    def test_a_crash_leaves_no_users_file(self):
        import shutil
        import tempfile
        tmp = tempfile.mkdtemp(prefix="mt_crash_tmp_")
        srv = ts.Server(["--model", MODEL, "--workers", "1"], env={"TMPDIR": tmp}, name="crash-spool")
        try:
            st, _, body = upload_from("127.0.0.1", srv.port, "secret.txt", b"my secret words\n")
            self.assertEqual(st, 200, body)
            st, _, raw = wait_download(srv, body["translatedFileUrl"])
            self.assertEqual(st, 200, raw[:200])
            srv.proc.kill()
            srv.proc.wait(timeout=30)
            left = [os.path.join(d, f) for d, _, fs in os.walk(tmp) for f in fs] + \
                   [d for d, _, _ in os.walk(tmp) if d != tmp]
            self.assertEqual(left, [])
        finally:
            srv.stop()
            shutil.rmtree(tmp, ignore_errors=True)

    def test_failed_job_logs_its_reason(self):
        srv = ts.Server(["--model", MODEL, "--workers", "1"], name="fail-reason")
        try:
            st, _, body = upload_from("127.0.0.1", srv.port, "broken.docx", b"PK\x03\x04 not a zip at all")
            if st == 200:
                st, _, raw = wait_download(srv, body["translatedFileUrl"])
                self.assertEqual(st, 422, raw[:300])
                reason = json.loads(raw)["error"]
                self.assertTrue(ts.wait_until(lambda: "event=files" in srv.log(), timeout=10))
                line = [ln for ln in srv.log().splitlines() if "event=files" in ln][-1]
                self.assertIn("reason=", line)
                self.assertIn(reason.split(": ", 1)[1][:20], line.replace('\\"', '"'))
            else:
                self.assertIn(st, (400, 415, 422), body)  # refused at upload: nothing to log
        finally:
            self.assertEqual(srv.stop(), 0)


class TestHalfClose(unittest.TestCase):
    """A client that sends a whole request and then shuts down its sending side (as nc -N
    and some proxies do) is answered, then closed; the access log shows 200, not 499. The
    request waits behind a big one on the only worker, so the server sees the half-close
    long before its answer is ready; and again when the answer comes from the sentence
    cache at once."""

    def half_closed_request(self, port, body):
        s = socket.create_connection(("127.0.0.1", port), timeout=60)
        try:
            s.sendall(b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n" % len(body) + body)
            s.shutdown(socket.SHUT_WR)
            out = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    return out
                out += chunk
        finally:
            s.close()

    def test_answered_then_closed(self):
        srv = ts.Server(["--model", ts.BUNDLED, "--workers", "1", "--batch-max-sentences", "64"], name="halfclose")
        try:
            big = {"text": ["Sentence number %d is about a man who rides a red bicycle down a long street." % i
                            for i in range(128)]}
            t = threading.Thread(target=srv.post_json, args=(big,), kwargs={"timeout": 300})
            t.start()
            # the big request is on the only worker (not a fixed sleep: a loaded machine may
            # take long to get there)
            self.assertTrue(ts.wait_until(lambda: srv.metric("mt_workers_busy") >= 1, timeout=120))
            body = json.dumps({"text": "A dog runs in the park."}).encode()
            raw = self.half_closed_request(srv.port, body)
            # an interim 100 Continue may come first: it tells a half-close from a close
            self.assertIn(statuses(raw), ([200], [100, 200]), raw[:300])
            self.assertIn(b"Hund", raw)
            raw = self.half_closed_request(srv.port, body)  # now a sentence-cache hit
            self.assertIn(statuses(raw), ([200], [100, 200]), raw[:300])
            t.join(timeout=300)
            self.assertNotIn("status=499", srv.log())
        finally:
            self.assertEqual(srv.stop(), 0)


class TestPathologicalText(unittest.TestCase):
    """A 19,990-character "word", and an HTML text node of 3,000 character references, took
    a worker 20-30 s each: such runs of more than 64 characters without a space are kept
    as sent (like protected spans) and never reach the tokenizer or the search, while the
    words around them are translated."""

    @classmethod
    def setUpClass(cls):
        cls.srv = ts.Server(["--model", ts.BUNDLED, "--workers", "1", "--max-text-chars", "20000"], name="patho")

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == 0

    def test_long_word_is_kept(self):
        word = "x" * 19990
        st, _, body = self.srv.post_json({"text": word}, timeout=60)
        self.assertEqual(st, 200, body)
        self.assertEqual(body["translations"], [word])
        st, _, body = self.srv.post_json({"text": "A man rides %s down the street." % ("y" * 100)}, timeout=60)
        self.assertEqual(st, 200, body)
        self.assertIn("y" * 100, body["translations"][0])
        self.assertIn("Mann", body["translations"][0])

    def test_character_references_are_kept(self):
        html = "<p>" + "&#x61;" * 3000 + "</p>"
        st, _, body = self.srv.post_json({"q": html, "source": "en", "target": "de", "format": "html"}, timeout=60)
        self.assertEqual(st, 200, body)
        self.assertEqual(body["translatedText"], html)


class TestFairShare(unittest.TestCase):
    """A one-sentence request that arrives while a 128-text request is being translated on
    the only worker is answered before the big one finishes (its sentences go into the next
    batch, not behind all of the big request's), and both answers are what mt-translate
    gives."""

    def test_small_request_overtakes(self):
        srv = ts.Server(["--model", ts.BUNDLED, "--workers", "1", "--batch-max-sentences", "8",
                         "--sentence-cache-mb", "0"], name="fair")
        try:
            texts = ["Sentence %d is about a man who rides a red bicycle down a long and busy street." % i
                     for i in range(128)]
            done = {}

            def big():
                done["big"] = srv.post_json({"text": texts}, timeout=600)
                done["big_at"] = time.time()

            t = threading.Thread(target=big)
            t.start()
            self.assertTrue(ts.wait_until(lambda: srv.metric("mt_queue_requests") >= 1, timeout=60))
            self.assertTrue(ts.wait_until(lambda: srv.metric("mt_workers_busy") >= 1, timeout=120))
            st, _, small = srv.post_json({"text": "A dog runs in the park."}, timeout=600)
            small_at = time.time()
            self.assertEqual(st, 200, small)
            self.assertFalse("big_at" in done, "the small request waited for the whole big one")
            t.join(timeout=600)
            self.assertLess(small_at, done["big_at"])
            self.assertEqual(done["big"][0], 200)
            self.assertEqual(done["big"][2]["translations"], ts.cli_translate(ts.BUNDLED, texts))
            self.assertEqual(small["translations"], ts.cli_translate(ts.BUNDLED, ["A dog runs in the park."]))
        finally:
            self.assertEqual(srv.stop(), 0)


def proc_status_mib(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) // 1024
    raise KeyError(key)


class TestMemoryAfterSpike(unittest.TestCase):
    """One request of 64 long texts in a single batch grows a worker's scratch memory by
    hundreds of MiB (the decoder's caches grow with batch x beam x length); it used to stay
    resident for good. A worker that goes idle after a big batch now hands it back: resident
    memory returns to near where it was, while the high-water mark proves the spike was real."""

    def test_memory_returns_after_a_spike(self):
        srv = ts.Server(["--model", ts.BUNDLED, "--workers", "1", "--sentence-cache-mb", "0",
                         "--batch-max-sentences", "128", "--batch-max-tokens", "65536"], name="spike")
        try:
            with open("/proc/%d/maps" % srv.proc.pid) as f:
                if "libasan" in f.read():
                    self.skipTest("AddressSanitizer keeps freed memory in quarantine")
            st, _, body = srv.post_json({"text": "A dog runs."})
            self.assertEqual(st, 200, body)
            base = proc_status_mib(srv.proc.pid, "VmRSS")
            texts = [" ".join("Sentence %d is about a man with a red bicycle and a dog in a very long "
                              "street number %d." % (i, k) for k in range(3)) for i in range(64)]
            st, _, body = srv.post_json({"text": texts}, timeout=600)
            self.assertEqual(st, 200, body)
            peak = proc_status_mib(srv.proc.pid, "VmHWM")
            self.assertGreater(peak - base, 100, "the spike did not grow memory; the test proves nothing")
            returned = ts.wait_until(
                lambda: proc_status_mib(srv.proc.pid, "VmRSS") - base < (peak - base) // 5, timeout=60)
            now = proc_status_mib(srv.proc.pid, "VmRSS")
            self.assertTrue(returned, "resident %d MiB after a spike to %d MiB (before: %d MiB)" % (now, peak, base))
            st, _, body = srv.post_json({"text": texts[:2]}, timeout=600)  # still serves after trimming
            self.assertEqual(st, 200, body)
            self.assertEqual(body["translations"], ts.cli_translate(ts.BUNDLED, texts[:2]))
        finally:
            self.assertEqual(srv.stop(), 0)


class TestHostileLoad(unittest.TestCase):
    """32 keep-alive clients x 2,000 mixed requests (MT_HOSTILE_REQUESTS changes the count):
    native and LibreTranslate translations checked against mt-translate, batches, health,
    languages, malformed JSON, wrong types and unknown paths, while hostile connections run
    alongside: tricklers (one header byte every 0.3 s, cut by the receive timeout),
    smugglers (differing Content-Length; chunked plus Content-Length with a second request
    hidden in the body), half-closers (a whole request, then shutdown(SHUT_WR)) and garbage
    bytes. Every well-formed request must get its correct answer, every hostile one its
    refusal, and the server must still be healthy and stop cleanly."""

    CLIENTS = 32

    def client(self, port, seed, n, lines, expect, failures, counts):
        import http.client
        import random
        rnd = random.Random(seed)
        conn = None
        for _ in range(n):
            kind = rnd.randrange(8)
            i, j = rnd.randrange(len(lines)), rnd.randrange(len(lines))
            if kind == 0:
                req, want = ("POST", "/translate", {"text": lines[i]}), (200, {"translations": [expect[i]]})
            elif kind == 1:
                req, want = ("POST", "/translate", {"text": [lines[i], lines[j]]}), \
                    (200, {"translations": [expect[i], expect[j]]})
            elif kind == 2:
                req, want = ("POST", "/translate", {"q": lines[i], "source": "en", "target": "de"}), \
                    (200, {"translatedText": expect[i]})
            elif kind == 3:
                req, want = ("GET", "/health", None), (200, None)
            elif kind == 4:
                req, want = ("GET", "/languages", None), (200, None)
            elif kind == 5:
                req, want = ("POST", "/translate", b'{"text": ['), (400, None)
            elif kind == 6:
                req, want = ("POST", "/translate", {"text": 5}), (400, None)
            else:
                req, want = ("GET", "/no-such-path", None), (404, None)
            method, path, body = req
            if isinstance(body, dict):
                body = json.dumps(body).encode()
            for attempt in range(3):
                try:
                    if conn is None:
                        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                    conn.request(method, path, body=body,
                                 headers={"Content-Type": "application/json"} if body else {})
                    r = conn.getresponse()
                    data = r.read()
                    if r.getheader("Connection", "").lower() == "close":
                        conn.close()
                        conn = None
                    break
                except (OSError, http.client.HTTPException) as e:
                    # a closed keep-alive connection is retried once on a new one; any
                    # other failure counts
                    if conn:
                        conn.close()
                    conn = None
                    if attempt == 2:
                        failures.append("%s %s: %r" % (method, path, e))
                        r = None
            if r is None:
                continue
            counts[kind] = counts.get(kind, 0) + 1
            if r.status != want[0]:
                failures.append("%s %s %r: %d %r" % (method, path, body[:80] if body else b"", r.status, data[:200]))
            elif want[1] is not None and {k: json.loads(data).get(k) for k in want[1]} != want[1]:
                failures.append("%s %r: %r != %r" % (path, body[:80], data[:200], want[1]))
        if conn:
            conn.close()

    def hostile(self, port, stop, kind, tally):
        import random
        rnd = random.Random(kind)
        body = json.dumps({"text": "a b c"}).encode()
        while not stop.is_set():
            try:
                if kind == "trickle":
                    s = socket.create_connection(("127.0.0.1", port), timeout=10)
                    got = b""
                    try:
                        for b in b"POST /translate HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100:
                            if stop.is_set():
                                break
                            s.send(bytes([b]))
                            time.sleep(0.3)
                    except OSError:
                        pass
                    try:
                        s.settimeout(2)
                        got = s.recv(4096)
                    except OSError:
                        pass
                    s.close()
                    tally.append((kind, statuses(got)))
                elif kind == "smuggle-cl":
                    raw, closed = exchange(port, b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n"
                                           b"Content-Length: 3\r\n\r\n" % len(body) + body, timeout=10)
                    tally.append((kind, statuses(raw), closed))
                elif kind == "smuggle-te":
                    hidden = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
                    raw, closed = exchange(port, b"POST /translate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                                           b"Content-Length: %d\r\n\r\n0\r\n\r\n" % (5 + len(hidden)) + hidden,
                                           timeout=10)
                    tally.append((kind, statuses(raw), closed))
                elif kind == "half-close":
                    s = socket.create_connection(("127.0.0.1", port), timeout=30)
                    s.sendall(b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                              b"Content-Length: %d\r\n\r\n" % len(body) + body)
                    s.shutdown(socket.SHUT_WR)
                    got = b""
                    while True:
                        chunk = s.recv(65536)
                        if not chunk:
                            break
                        got += chunk
                    s.close()
                    tally.append((kind, statuses(got), b"translations" in got))
                else:
                    junk = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 300))) + b"\r\n\r\n"
                    raw, closed = exchange(port, junk, timeout=10)
                    tally.append((kind, statuses(raw), closed))
            except OSError as e:
                tally.append((kind, "error %r" % e))

    def test_load_with_hostile_connections(self):
        n = int(os.environ.get("MT_HOSTILE_REQUESTS", "2000"))
        lines = sorted(set(ts.corpus_lines(60, seed=13)))
        expect = ts.cli_translate(MODEL, lines)
        srv = ts.Server(["--model", MODEL, "--workers", "2", "--max-connections", "64",
                         "--receive-timeout", "3"], name="hostile-load")
        stop = threading.Event()
        tally, failures, counts = [], [], {}
        kinds = ["trickle"] * 4 + ["smuggle-cl", "smuggle-te", "half-close", "half-close", "garbage", "garbage"]
        bad = [threading.Thread(target=self.hostile, args=(srv.port, stop, k, tally)) for k in kinds]
        good = [threading.Thread(target=self.client, args=(srv.port, c, n, lines, expect, failures, counts))
                for c in range(self.CLIENTS)]
        t0 = time.time()
        try:
            for t in bad + good:
                t.start()
            for t in good:
                t.join(timeout=1800)
            self.assertFalse(any(t.is_alive() for t in good), "clients still running after 30 min")
            elapsed = time.time() - t0
            stop.set()
            for t in bad:
                t.join(timeout=60)
            print("hostile load: %d requests in %.1f s; hostile exchanges: %s" % (
                sum(counts.values()), elapsed,
                {k: sum(1 for x in tally if x[0] == k) for k in set(kinds)}), file=sys.stderr)
            odd = [e for e in tally if not (e[0] == "trickle" and e[1] == [408]) and
                   not (e[0].startswith("smuggle") and e[1] == [400] and e[2]) and
                   not (e[0] == "half-close" and e[1] in ([200], [100, 200]) and e[2]) and
                   not (e[0] == "garbage" and e[2] and all(400 <= st < 500 for st in e[1]))]
            self.assertEqual(failures[:10], [])
            self.assertLessEqual(len(odd), 4, odd[:20])  # the tricklers cut short by stop
            self.assertEqual(sum(counts.values()), self.CLIENTS * n)
            self.assertEqual(len(counts), 8)
            for entry in tally:
                kind = entry[0]
                self.assertIsInstance(entry[1], list, entry)
                if kind == "trickle":
                    self.assertIn(entry[1], ([408], []), entry)  # [] only for the one cut by stop
                elif kind.startswith("smuggle"):
                    self.assertEqual(entry[1], [400], entry)  # never a second answer
                    self.assertTrue(entry[2], entry)
                elif kind == "half-close":
                    # the watcher may probe a half-closed client with an interim 100 first
                    self.assertIn(entry[1], ([200], [100, 200]), entry)
                    self.assertTrue(entry[2], entry)
                else:
                    self.assertTrue(entry[2], entry)  # garbage: refused (or dropped) and closed
                    self.assertTrue(all(400 <= st < 500 for st in entry[1]), entry)
            self.assertTrue(any(e[0] == "trickle" and e[1] == [408] for e in tally))
            self.assertTrue(any(e[0] == "half-close" for e in tally))
            st, _, body = srv.post_json({"text": lines[:3]})
            self.assertEqual((st, body["translations"]), (200, expect[:3]))
        finally:
            stop.set()
            for t in bad:
                t.join(timeout=60)
            self.assertEqual(srv.stop(), 0)


if __name__ == "__main__":
    import testmain
    sys.exit(testmain.run(__name__))
