#!/usr/bin/python3
"""HTTP side of scripts/docker-selftest.sh (standard library only), from the host.

  docker-selftest.py get URL                   exit 0 when URL answers 200
  docker-selftest.py check URL                 /health, /translate, /translate_file, /metrics
  docker-selftest.py stop-under-load URL NAME  `docker stop NAME` while 32 clients send
  docker-selftest.py spread URL SECONDS [STOP] 4 clients for SECONDS or until the file STOP
                                               exists; prints the answers and latencies
"""
import http.client
import json
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid

SENTENCES = [
    "A man rides a bicycle.", "The weather is nice today.", "Where is the train station?",
    "I would like a cup of coffee.", "The children are playing in the garden.",
    "Please close the door.", "My brother lives in Berlin.", "The book is on the table.",
    "We are going to the cinema tonight.", "How much does this cost?",
    "The dog is sleeping.", "She reads a newspaper.",
]


def split(url):
    u = urllib.parse.urlsplit(url)
    return u.hostname, u.port or 80, u.path or "/"


def request(url, method="GET", body=None, headers=None, timeout=120, conn=None):
    """(status, headers dict, body bytes); a new connection unless conn is given."""
    host, port, path = split(url)
    own = conn is None
    if own:
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        data = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data
    finally:
        if own:
            conn.close()


def translate_body(text):
    return json.dumps({"q": text, "source": "en", "target": "de"})


def cmd_get(url):
    status, _, _ = request(url, timeout=10)
    return 0 if status == 200 else 1


def cmd_check(base):
    status, _, body = request(base + "/health", timeout=30)
    assert status == 200, "/health: %d %r" % (status, body[:200])
    print("GET /health: 200 %s" % body.decode()[:100])

    status, _, body = request(base + "/translate", "POST", translate_body("Hello world. The weather is nice."),
                              {"Content-Type": "application/json"})
    assert status == 200, "/translate: %d %r" % (status, body[:300])
    text = json.loads(body)["translatedText"]
    assert text.strip(), body
    print("POST /translate 'Hello world. The weather is nice.': 200 %r" % text)

    # a file: its translation is written to the spool, which is in the tmpfs at /tmp
    boundary = uuid.uuid4().hex
    lines = "The weather is nice today.\nWhere is the train station?\n"
    form = ("--%(b)s\r\nContent-Disposition: form-data; name=\"source\"\r\n\r\nen\r\n"
            "--%(b)s\r\nContent-Disposition: form-data; name=\"target\"\r\n\r\nde\r\n"
            "--%(b)s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"two lines.txt\"\r\n"
            "Content-Type: text/plain\r\n\r\n%(f)s\r\n--%(b)s--\r\n") % {"b": boundary, "f": lines}
    status, _, body = request(base + "/translate_file", "POST", form.encode(),
                              {"Content-Type": "multipart/form-data; boundary=" + boundary})
    assert status == 200, "/translate_file: %d %r" % (status, body[:300])
    link = json.loads(body)["translatedFileUrl"]
    path = urllib.parse.urlsplit(link).path
    deadline = time.monotonic() + 120
    while True:
        status, headers, data = request(base + path, timeout=60)
        if status != 202 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert status == 200, "GET %s: %d %r" % (path, status, data[:300])
    assert data.count(b"\n") == 2 and data.strip(), data
    print("POST /translate_file (2 lines) -> GET %s: 200, %d bytes, %r" % (path, len(data), data.decode()[:80]))

    status, _, body = request(base + "/metrics", timeout=30)
    text = body.decode()
    assert status == 200 and "# TYPE" in text and "mt_http_in_flight" in text, "/metrics: %d %r" % (status, text[:200])
    print("GET /metrics: 200, %d series" % sum(1 for l in text.splitlines() if l and not l.startswith("#")))
    return 0


def cmd_stop_under_load(base, name):
    """32 clients (half on keep-alive connections, half opening one per request; as many as
    the issue's manual run had) send
    translations of 1 to 12 sentences; after 40 answers `docker stop NAME`. Every request
    must end as a correct 200, or, once the stop has begun, as a clean refusal: connection
    refused, closed or reset before any byte of an answer (the listener is gone; behind
    docker-proxy a connect still succeeds), or a 503. Anything else is a lost request."""
    inputs = [" ".join(SENTENCES[j % len(SENTENCES)] for j in range(i, i + n))
              for i, n in enumerate((1, 2, 4, 12, 3, 8, 1, 6))]
    expected = {}
    for text in inputs:
        status, _, body = request(base + "/translate", "POST", translate_body(text), {"Content-Type": "application/json"})
        assert status == 200, (status, body[:200])
        expected[text] = json.loads(body)["translatedText"]
    warmup = len(inputs)

    lock = threading.Lock()
    stats = {"ok": 0, "ok_after_stop": 0, "refused": {}, "lost": []}
    stop_at = [None]          # monotonic time `docker stop` began
    answered = threading.Event()

    def note_refused(kind):
        stats["refused"][kind] = stats["refused"].get(kind, 0) + 1

    def client(k):
        host, port, _ = split(base)
        keep = k % 2 == 0
        conn = http.client.HTTPConnection(host, port, timeout=120) if keep else None
        refusals = 0
        for i in range(150):
            text = inputs[(k + i) % len(inputs)]
            began_after_stop = stop_at[0] is not None
            try:
                status, headers, body = request(base + "/translate", "POST", translate_body(text),
                                                {"Content-Type": "application/json"}, conn=conn)
            except (ConnectionRefusedError, ConnectionResetError, http.client.RemoteDisconnected,
                    BrokenPipeError) as e:
                kind = type(e).__name__
                if conn is not None:
                    conn.close()
                    conn = http.client.HTTPConnection(host, port, timeout=120)
                with lock:
                    if stop_at[0] is None:
                        stats["lost"].append("%s before the stop" % kind)
                    else:
                        note_refused(kind)
                refusals += 1
                if refusals >= 3:
                    break
                time.sleep(0.05)
                continue
            except Exception as e:  # a timeout, an answer cut off, ...
                with lock:
                    stats["lost"].append(repr(e)[:200])
                break
            with lock:
                if status == 200 and json.loads(body).get("translatedText") == expected[text]:
                    stats["ok"] += 1
                    if stop_at[0] is not None:
                        stats["ok_after_stop"] += 1
                    if stats["ok"] >= 40:
                        answered.set()
                elif status == 503 and stop_at[0] is not None:
                    note_refused("503 " + ("with Retry-After" if "retry-after" in headers else "")
                                 + ("" if began_after_stop else " (sent as the stop began)"))
                    refusals += 1
                else:
                    stats["lost"].append("%d %r" % (status, body[:200]))
            if refusals >= 3:
                break
            if headers.get("connection", "").lower() == "close" and conn is not None:
                conn.close()
                conn = http.client.HTTPConnection(host, port, timeout=120)
        if conn is not None:
            conn.close()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(32)]
    for t in threads:
        t.start()
    if not answered.wait(300):
        print("fewer than 40 answers in 300 s")
    stop_at[0] = time.monotonic()
    r = subprocess.run(["docker", "stop", "-t", "30", name], capture_output=True, text=True, timeout=120)
    took = time.monotonic() - stop_at[0]
    for t in threads:
        t.join(timeout=300)
    logs = subprocess.run(["docker", "logs", name], capture_output=True, text=True, timeout=60)
    log = logs.stdout + logs.stderr
    served = sum(1 for l in log.splitlines()
                 if "event=access" in l and "path=/translate " in l and "status=200" in l)
    refused = sum(stats["refused"].values())
    total = stats["ok"] + refused + len(stats["lost"])
    print("requests: %d; answered correctly: %d (%d of them after `docker stop` began); "
          "refused cleanly after the stop: %d %s; lost: %d"
          % (total, stats["ok"], stats["ok_after_stop"], refused, stats["refused"], len(stats["lost"])))
    print("docker stop took %.1f s (rc %d); the server logged %d answered translations, the clients "
          "received %d (+%d before the load)" % (took, r.returncode, served, stats["ok"], warmup))
    bad = 0
    if stats["lost"]:
        print("LOST: %s" % stats["lost"][:5])
        bad = 1
    if served != stats["ok"] + warmup:
        print("the server answered %d translations, the clients got %d" % (served, stats["ok"] + warmup))
        bad = 1
    if r.returncode != 0:
        print("docker stop: %s" % r.stderr)
        bad = 1
    if stats["ok"] < 40:
        bad = 1
    return bad


def cmd_spread(base, seconds, stop_file=None):
    """4 clients send translations for SECONDS, or until stop_file exists; prints
    {answered, errors, p50_s, max_s, over_1s}."""
    import os
    seconds = float(seconds)
    lock = threading.Lock()
    res = {"answered": 0, "errors": []}
    lat = []
    end = time.monotonic() + seconds

    def going():
        return time.monotonic() < end and not (stop_file and os.path.exists(stop_file))

    def client(k):
        host, port, _ = split(base)
        conn = http.client.HTTPConnection(host, port, timeout=120)
        i = k
        while going():
            i += 1
            t0 = time.monotonic()
            try:
                status, _, body = request(base + "/translate", "POST", translate_body(SENTENCES[i % len(SENTENCES)]),
                                          {"Content-Type": "application/json"}, conn=conn)
                ok = status == 200 and json.loads(body)["translatedText"]
            except Exception as e:
                ok, status, body = False, 0, repr(e).encode()
                conn.close()
                conn = http.client.HTTPConnection(host, port, timeout=120)
            with lock:
                lat.append(time.monotonic() - t0)
                if ok:
                    res["answered"] += 1
                else:
                    res["errors"].append("%d %r" % (status, body[:120]))
        conn.close()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lat.sort()
    res.update(p50_s=round(lat[len(lat) // 2], 3) if lat else None, max_s=round(lat[-1], 3) if lat else None,
               over_250ms=sum(1 for x in lat if x > 0.25), over_1s=sum(1 for x in lat if x > 1.0))
    res["errors"] = res["errors"][:5] + (["..."] if len(res["errors"]) > 5 else [])
    print(json.dumps(res))
    return 0 if res["answered"] and not res["errors"] else 1


def main(argv):
    cmd = argv[1] if len(argv) > 1 else ""
    try:
        if cmd == "get":
            return cmd_get(argv[2])
        if cmd == "check":
            return cmd_check(argv[2])
        if cmd == "stop-under-load":
            return cmd_stop_under_load(argv[2], argv[3])
        if cmd == "spread":
            return cmd_spread(argv[2], argv[3], argv[4] if len(argv) > 4 else None)
    except (AssertionError, OSError, ValueError, KeyError, http.client.HTTPException) as e:
        print("%s: %r" % (cmd, e))
        return 1
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
