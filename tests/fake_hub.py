#!/usr/bin/python3
"""A local stand-in for the Hugging Face hub, for tests/test_mt_models.py (loopback only).

It speaks the parts of the hub's protocol that `mt-models` uses, with the real shapes:

  GET /api/models?author=A&search=S[&limit=N]   [{"id", "modelId", "downloads", "tags", ...}]
  GET /api/models/OWNER/NAME/revision/REV[?blobs=true]
      {"id", "sha" (40 hex), "config": {"architectures", "model_type"},
       "siblings": [{"rfilename", "size", "blobId", "lfs": {"sha256", "size", "pointerSize"}}]}
  GET /OWNER/NAME/resolve/REV/FILE   small files: 200 with ETag (the git blob id);
      LFS files: 302 to http://localhost:PORT/cdn/REPO/SHA256 (another host name) with X-Linked-Size and X-Linked-Etag, as the hub
      redirects to its CDN; the CDN honours Range (206 + Content-Range)

Repositories are directories ROOT/OWNER/NAME. Per-repository behaviour (`Hub.behaviour`,
a dict keyed by repo id) makes the failures the tests need:
  "token": "T"            every request about the repo needs "Authorization: Bearer T" (else 401)
  "status": 404 / 500     the revision listing answers this status
  "file_status": {F: 500} resolving file F answers this status
  "wrong_sha256": [F]     the listing gives F a wrong LFS sha256 (the bytes are the real ones)
  "cut": {F: N}           the first transfer of F is cut after N bytes (the connection is closed
                          with the body unfinished); later transfers (Range) complete it
  "stall": {F: N}         every transfer of F stops after N bytes until `Hub.release` is set
`Hub.requests` records (method, path, headers) of every request.

  tests/fake_hub.py ROOT [--port P]    serves ROOT until interrupted (for trying mt-models by hand)
"""
import argparse
import hashlib
import json
import os
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LFS_SUFFIXES = (".safetensors", ".bin", ".spm", ".h5", ".msgpack", ".ot")


def git_blob_id(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Hub:
    def __init__(self, root, port=0):
        self.root = root
        self.release = threading.Event()
        self.behaviour = {}
        self.requests = []
        self.cut_done = set()
        self.lock = threading.Lock()
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def handle(self):
                try:
                    super().handle()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # a client that gave up (disk full, interrupted): not the hub's error

            def do_GET(self):
                with hub.lock:
                    hub.requests.append(("GET", self.path, dict(self.headers)))
                try:
                    hub.handle(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    # ---- helpers ----------------------------------------------------------------------

    def repos(self):
        out = []
        for owner in sorted(os.listdir(self.root)):
            d = os.path.join(self.root, owner)
            if os.path.isdir(d):
                out += [f"{owner}/{n}" for n in sorted(os.listdir(d))
                        if os.path.isdir(os.path.join(d, n))]
        return out

    def files(self, repo):
        d = os.path.join(self.root, repo)
        return sorted(f for f in os.listdir(d) if os.path.isfile(os.path.join(d, f)))

    def read(self, repo, name):
        with open(os.path.join(self.root, repo, name), "rb") as f:
            return f.read()

    @staticmethod
    def is_lfs(name):
        return name.endswith(LFS_SUFFIXES)

    def commit(self, repo):
        return hashlib.sha1(repo.encode()).hexdigest()

    def send(self, h, status, body=b"", headers=None, content_type="application/json"):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        h.send_response(status)
        h.send_header("Content-Type", content_type)
        h.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(body)

    def authorised(self, h, repo):
        token = self.behaviour.get(repo, {}).get("token")
        if token and h.headers.get("Authorization") != f"Bearer {token}":
            self.send(h, 401, {"error": "Invalid username or password."})
            return False
        return True

    # ---- routes -----------------------------------------------------------------------

    def handle(self, h):
        url = urllib.parse.urlsplit(h.path)
        path = urllib.parse.unquote(url.path)
        query = urllib.parse.parse_qs(url.query)
        if path == "/api/models":
            return self.search(h, query)
        m = re.fullmatch(r"/api/models/([^/]+/[^/]+)/revision/([^/]+)", path)
        if m:
            return self.listing(h, m.group(1), m.group(2))
        m = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/([^/]+)", path)
        if m:
            return self.resolve(h, m.group(1), m.group(2), m.group(3))
        m = re.fullmatch(r"/cdn/([^/]+)/([0-9a-f]{64})", path)
        if m:
            return self.cdn(h, m.group(1).replace("--", "/"), m.group(2))
        self.send(h, 404, {"error": "Not Found"})

    def search(self, h, query):
        author = query.get("author", [""])[0]
        term = query.get("search", [""])[0].lower()
        limit = int(query.get("limit", ["1000"])[0])
        out = []
        for repo in self.repos():
            if author and not repo.startswith(author + "/"):
                continue
            if term and term not in repo.lower():
                continue
            out.append({"_id": self.commit(repo)[:24], "id": repo, "modelId": repo, "likes": 0,
                        "downloads": 1000 - len(out), "private": False,
                        "pipeline_tag": "translation", "library_name": "transformers",
                        "tags": ["transformers", "pytorch", "marian", "text2text-generation",
                                 "translation"], "createdAt": "2020-05-14T18:16:39.000Z"})
        self.send(h, 200, out[:limit])

    def listing(self, h, repo, rev):
        if repo not in self.repos():
            # As the hub: 401 without a token, 404 with one, and the cause in X-Error-Code.
            return self.send(h, 401 if not h.headers.get("Authorization") else 404,
                             {"error": "Repository not found"}, {"X-Error-Code": "RepoNotFound"})
        if not self.authorised(h, repo):
            return
        status = self.behaviour.get(repo, {}).get("status")
        if status:
            return self.send(h, status, {"error": f"status {status}"})
        if rev not in ("main", self.commit(repo)):
            return self.send(h, 404, {"error": f"Invalid rev id: {rev}"}, {"X-Error-Code": "RevisionNotFound"})
        wrong = self.behaviour.get(repo, {}).get("wrong_sha256", [])
        siblings, cfg = [], {}
        for name in self.files(repo):
            data = self.read(repo, name)
            s = {"rfilename": name, "size": len(data), "blobId": git_blob_id(data)}
            if self.is_lfs(name):
                sha = hashlib.sha256(data).hexdigest()
                if name in wrong:
                    sha = hashlib.sha256(b"not " + data).hexdigest()
                s["lfs"] = {"sha256": sha, "size": len(data), "pointerSize": 134}
            siblings.append(s)
            if name == "config.json":
                c = json.loads(data)
                cfg = {k: c[k] for k in ("architectures", "model_type") if k in c}
        self.send(h, 200, {"_id": self.commit(repo)[:24], "id": repo, "modelId": repo,
                           "author": repo.split("/")[0], "sha": self.commit(repo),
                           "lastModified": "2023-08-16T11:36:42.000Z", "private": False,
                           "disabled": False, "gated": False, "pipeline_tag": "translation",
                           "tags": ["transformers", "marian", "translation"], "downloads": 1,
                           "library_name": "transformers", "likes": 0, "config": cfg,
                           "cardData": {}, "siblings": siblings,
                           "createdAt": "2020-05-14T18:16:39.000Z", "usedStorage": 1})

    def resolve(self, h, repo, rev, name):
        if repo not in self.repos() or name not in self.files(repo):
            return self.send(h, 404, {"error": "Entry not found"},
                             {"X-Error-Code": "EntryNotFound"})
        if not self.authorised(h, repo):
            return
        if rev not in ("main", self.commit(repo)):
            return self.send(h, 404, {"error": "Revision Not Found"},
                             {"X-Error-Code": "RevisionNotFound"})
        status = self.behaviour.get(repo, {}).get("file_status", {}).get(name)
        if status:
            return self.send(h, status, {"error": f"status {status}"})
        data = self.read(repo, name)
        if self.is_lfs(name):
            sha = hashlib.sha256(data).hexdigest()
            # Another host name for the same server, as the hub's CDN is another host: a
            # client must not send the repository's token there.
            loc = f"http://localhost:{self.port}/cdn/{repo.replace('/', '--')}/{sha}"
            return self.send(h, 302, b"", {"Location": loc, "X-Linked-Size": str(len(data)),
                                           "X-Linked-Etag": f'"{sha}"', "X-Repo-Commit": self.commit(repo),
                                           "ETag": f'"{git_blob_id(data)}"'})
        self.send(h, 200, data, {"ETag": f'"{git_blob_id(data)}"', "X-Repo-Commit": self.commit(repo)},
                  "text/plain; charset=utf-8")

    def cdn(self, h, repo, sha):
        for name in self.files(repo) if repo in self.repos() else []:
            data = self.read(repo, name)
            if hashlib.sha256(data).hexdigest() == sha:
                break
        else:
            return self.send(h, 404, {"error": "no such object"})
        start = 0
        rng = h.headers.get("Range")
        m = re.fullmatch(r"bytes=(\d+)-", rng or "")
        if rng and (not m or int(m.group(1)) >= len(data)):
            return self.send(h, 416, b"", {"Content-Range": f"bytes */{len(data)}"})
        if m:
            start = int(m.group(1))
        cut = self.behaviour.get(repo, {}).get("cut", {}).get(name)
        key = (repo, name)
        h.send_response(206 if m else 200)
        h.send_header("Content-Type", "application/octet-stream")
        h.send_header("Content-Length", str(len(data) - start))
        h.send_header("ETag", f'"{sha}"')
        h.send_header("Accept-Ranges", "bytes")
        if m:
            h.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        h.end_headers()
        if cut is not None and key not in self.cut_done:
            with self.lock:
                self.cut_done.add(key)
            h.wfile.write(data[start:start + cut])
            h.wfile.flush()
            h.close_connection = True
            h.connection.shutdown(2)
            return
        stall = self.behaviour.get(repo, {}).get("stall", {}).get(name)
        if stall is not None:
            h.wfile.write(data[start:start + stall])
            h.wfile.flush()
            self.release.wait(60)
            start += stall
        h.wfile.write(data[start:])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("root")
    p.add_argument("--port", type=int, default=0)
    args = p.parse_args()
    hub = Hub(args.root, args.port)
    print(f"HF_ENDPOINT={hub.url}", flush=True)
    try:
        hub.server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
