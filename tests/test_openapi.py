#!/usr/bin/python3
"""web/openapi.json (served at GET /spec) against the README and the server.

Every example request in README.md and docs/*.md (each `curl` command, continuation lines joined) is
validated against the document: its path and method must be described, and its body
(JSON, or form fields from `-d k=v` / `-F k=v`) must match the request schema for its
content type. Also: every endpoint mt-server routes (server/*.c) and every endpoint of
issue 14 is described, every $ref resolves, and each schema's own example is valid.
Validation uses Debian's python3-jsonschema (JSON Schema 2020-12, what OpenAPI 3.1 uses).
Exits 77 (meson SKIP) when python3-jsonschema is missing.
"""
import json
import os
import re
import shlex
import sys
import unittest
from urllib.parse import urlparse

try:
    import jsonschema
except ImportError:
    print("SKIP: python3-jsonschema is not installed (scripts/install-deps.sh)")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.abspath(os.environ.get("MT_SOURCE_DIR", os.path.join(HERE, "..")))
SPEC_PATH = os.path.join(SOURCE, "web", "openapi.json")

with open(SPEC_PATH, encoding="utf-8") as f:
    SPEC = json.load(f)

REQUIRED_PATHS = {
    "/translate": "post", "/languages": "get", "/health": "get", "/metrics": "get",
    "/detect": "post", "/translate_file": "post", "/download_file/{id}": "get",
    "/frontend/settings": "get", "/suggest": "post", "/spec": "get",
    "/health/live": "get", "/health/ready": "get", "/": "get",
}


def validator(schema):
    """A 2020-12 validator for `schema`, resolving #/components/... in the document."""
    resolver = jsonschema.RefResolver.from_schema(SPEC)
    return jsonschema.Draft202012Validator(schema, resolver=resolver)


def doc_files():
    """README.md and the pages of docs/ it links to, where the examples live."""
    docs = os.path.join(SOURCE, "docs")
    names = sorted(n for n in os.listdir(docs) if n.endswith(".md")) if os.path.isdir(docs) else []
    return [os.path.join(SOURCE, "README.md")] + [os.path.join(docs, n) for n in names]


def readme_curl_commands():
    """("FILE line N", argv) of every curl command in the code blocks of README.md and docs/."""
    out = []
    for path in doc_files():
        rel = os.path.relpath(path, SOURCE)
        out += [("%s line %d" % (rel, n), argv) for n, argv in curl_commands(path)]
    return out


def curl_commands(path):
    """(line number, argv) of every curl command in one Markdown file's code blocks."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out, i = [], 0
    while i < len(lines):
        start = i
        line = lines[i]
        while line.endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line[:-1] + " " + lines[i].strip()
        i += 1
        m = re.search(r"(^|[|;&]\s*|\$\(\s*)curl\s", line)
        if not m or line.lstrip().startswith("#") or "`curl" in line:
            continue
        cmd = line[m.end() - 5:]
        cmd = re.split(r"\s[|;]\s|\)\s*$", cmd)[0]
        out.append((start + 1, shlex.split(cmd, comments=True)))
    return out


def request_of(argv):
    """(method, path, content type, body) of a curl argv; body None for no body."""
    url, method, data, forms, headers = None, None, [], [], {}
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in ("-d", "--data", "--data-binary", "--data-raw", "--data-urlencode"):
            data.append(argv[i + 1]); i += 2; continue
        if a in ("-F", "--form"):
            forms.append(argv[i + 1]); i += 2; continue
        if a in ("-H", "--header"):
            k, _, v = argv[i + 1].partition(":")
            headers[k.strip().lower()] = v.strip(); i += 2; continue
        if a in ("-X", "--request"):
            method = argv[i + 1].upper(); i += 2; continue
        if a in ("-o", "--output", "-w", "--max-time", "-u", "--user"):
            i += 2; continue
        if a.startswith("http://") or a.startswith("https://"):
            url = a
        i += 1
    if url is None:
        return None
    path = urlparse(url).path or "/"
    if forms:
        fields = {}
        for f in forms:
            k, _, v = f.partition("=")
            fields[k] = "<file>" if v.startswith("@") else v
        return method or "POST", path, "multipart/form-data", fields
    if data:
        ctype = headers.get("content-type", "application/x-www-form-urlencoded")
        if len(data) == 1 and data[0].lstrip().startswith("{"):
            return method or "POST", path, "application/json", json.loads(data[0])
        fields = {}
        for d in data:
            k, _, v = d.partition("=")
            fields[k] = v
        return method or "POST", path, "application/x-www-form-urlencoded", fields
    return method or "GET", path, None, None


def spec_path_for(path):
    if path in SPEC["paths"]:
        return path
    for p in SPEC["paths"]:
        rx = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(p)) + "$"
        if re.match(rx, path):
            return p
    return None


class OpenAPI(unittest.TestCase):
    def test_document_shape(self):
        self.assertTrue(SPEC["openapi"].startswith("3."))
        for key in ("title", "version"):
            self.assertIn(key, SPEC["info"])
        for path, ops in SPEC["paths"].items():
            for method, op in ops.items():
                self.assertIn(method, ("get", "post", "put", "delete", "patch"), path)
                self.assertTrue(op.get("responses"), "%s %s has no responses" % (method, path))

    def test_required_endpoints(self):
        for path, method in REQUIRED_PATHS.items():
            self.assertIn(path, SPEC["paths"], path)
            self.assertIn(method, SPEC["paths"][path], path)

    def test_server_routes_described(self):
        """Every API route of mt-server's route table (server/routes.c) is in the document:
        exact paths as they are, prefix routes with an id after them. The page's own files
        (index.html, app.js, style.css, the favicon) are served but are not API."""
        with open(os.path.join(SOURCE, "server", "routes.c"), encoding="utf-8") as f:
            rows = re.findall(r'\{SRV_[A-Z_| ]+, "(/[^"]*)", ([01]), (\w+),', f.read())
        self.assertTrue(rows, "no routes found in server/routes.c")
        for path, prefix, handler in rows:
            if handler == "srv_ep_static" and path not in ("/", "/spec"):
                continue
            probe = path + "some-id" if prefix == "1" else path
            self.assertIsNotNone(spec_path_for(probe), "route %s is not in web/openapi.json" % path)

    def test_refs_resolve(self):
        refs = re.findall(r'"\$ref": "([^"]+)"', json.dumps(SPEC))
        self.assertTrue(refs)
        for ref in refs:
            node = SPEC
            for part in ref.lstrip("#/").split("/"):
                self.assertIn(part, node, ref)
                node = node[part]

    def test_schema_examples_valid(self):
        checked = 0
        for name, schema in SPEC["components"]["schemas"].items():
            jsonschema.Draft202012Validator.check_schema(schema)
            if "example" in schema:
                errors = list(validator(schema).iter_errors(schema["example"]))
                self.assertFalse(errors, "%s example: %s" % (name, errors[:1]))
                checked += 1
        self.assertGreater(checked, 3)

    def test_readme_examples_valid(self):
        commands = readme_curl_commands()
        checked = 0
        for line, argv in commands:
            req = request_of(argv)
            if req is None:
                continue
            method, path, ctype, body = req
            where = "%s: %s %s" % (line, method, path)
            sp = spec_path_for(path)
            self.assertIsNotNone(sp, where + ": path not in web/openapi.json")
            op = SPEC["paths"][sp].get(method.lower())
            self.assertIsNotNone(op, where + ": method not in web/openapi.json")
            if body is not None:
                content = op["requestBody"]["content"]
                self.assertIn(ctype, content, where)
                errors = sorted(validator(content[ctype]["schema"]).iter_errors(body), key=str)
                self.assertFalse(errors, "%s: %s" % (where, "; ".join(e.message for e in errors[:3])))
            checked += 1
        # The README and docs/ have many examples; finding few means the parser broke.
        self.assertGreaterEqual(checked, 5, "only %d README requests found" % checked)
        self.assertTrue(any(w.startswith("README.md") for w, _ in commands), "no curl in README.md")

    def test_checker_rejects_bad_requests(self):
        """The checks above can fail: wrong field types and unknown fields are refused."""
        schema = SPEC["paths"]["/translate"]["post"]["requestBody"]["content"]["application/json"]["schema"]
        v = validator(schema)
        self.assertTrue(v.is_valid({"text": "Hello", "source": "en", "target": "de"}))
        self.assertTrue(v.is_valid({"q": ["a", "b"], "source": "auto", "target": "de", "alternatives": 1}))
        self.assertFalse(v.is_valid({"text": 3}))
        self.assertFalse(v.is_valid({"text": "x", "beam_sise": 4}))
        self.assertFalse(v.is_valid({"q": "x"}))  # LibreTranslate form needs a target
        self.assertFalse(v.is_valid({"text": "x", "n_best": 0}))


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    from test_scripts import run_tests
    sys.exit(run_tests(__name__))
