#!/usr/bin/env python3
"""Public and private headers apart: every component in COMPONENTS exports only
include/mt/ (its public headers), so no other target is compiled with one of those
folders on its include path and none can reach a private header (model/internal.h,
packed.h, decode_opts.h, config/toml.h, translator/service_engine.h ...) by name. Read
from the build's compile_commands.json; tests that check internals name them by relative
path, or get the folder through the component's *_internal_dep (only the folders listed
in TESTED_FROM_INSIDE: tests/, bench/)."""
import json
import os
import re
import shlex
import sys
import unittest

COMPONENTS = ("model", "tokenizer", "config", "util", "translator", "detect", "ratelimit", "store",
              "formats", "spool", "hub")
# Components whose own tests and benchmarks may have the private folder on their path
# (through translator_internal_dep, store_internal_dep, formats_internal_dep,
# hub_internal_dep, and the clang fuzz copies): never server/ or cli/.
TESTED_FROM_INSIDE = {"translator": ("tests", "bench"), "store": ("tests",), "formats": ("tests",),
                      "hub": ("tests",)}


class IncludePaths(unittest.TestCase):
    def test_private_folders_stay_private(self):
        build = os.environ.get("MT_BUILD_DIR", "build")
        path = os.path.join(build, "compile_commands.json")
        if not os.path.exists(path):
            print("SKIP: no %s" % path)
            sys.exit(77)
        with open(path) as f:
            commands = json.load(f)
        source = os.path.realpath(os.environ.get("MT_SOURCE_DIR", os.path.join(build, "..")))
        leaks, checked = [], 0
        for entry in commands:
            directory = entry["directory"]
            src = os.path.realpath(os.path.join(directory, entry["file"]))
            args = shlex.split(entry["command"])
            for i, a in enumerate(args):
                inc = a[2:] if a.startswith("-I") and len(a) > 2 else args[i + 1] if a in ("-I", "-isystem") else None
                if inc is None:
                    continue
                inc = os.path.realpath(os.path.join(directory, inc))
                for comp in COMPONENTS:
                    folder = os.path.join(source, comp)
                    inside = [folder] + [os.path.join(source, d) for d in TESTED_FROM_INSIDE.get(comp, ())]
                    if inc == folder and not any(src.startswith(d + os.sep) for d in inside):
                        leaks.append("%s gets -I %s/" % (os.path.relpath(src, source), comp))
            checked += 1
        self.assertGreater(checked, 50)
        self.assertEqual(leaks, [])


# The engine's headers: what front ends (server/, cli/) must not reach, directly or through
# the service's public header.
ENGINE_HEADERS = {"model.h", "tokenizer.h", "translator.h", "options_search.h", "service_engine.h"}
FRONT_ENDS = ("server", "cli")


def includes(path):
    with open(path, encoding="utf-8") as f:
        return re.findall(r'^\s*#\s*include\s+"([^"]+)"', f.read(), re.M)


class FrontEndHeaders(unittest.TestCase):
    """service.h and request.h name no model, tokenizer or search type: every header a
    front-end file includes, followed through the headers it includes in turn, is none of
    the engine's."""

    def test_front_ends_reach_no_engine_header(self):
        source = os.path.realpath(os.environ.get("MT_SOURCE_DIR",
                                                 os.path.join(os.path.dirname(__file__), "..")))
        folders = [os.path.join(source, d) for d in ("include/mt", "translator", "detect", "server", "cli",
                                                   "formats", "spool", "store", "ratelimit", "hub")]

        def find(name, near):
            for d in [near] + folders:
                if os.path.exists(os.path.join(d, name)):
                    return os.path.join(d, name)
            return None

        reached, checked = [], 0
        for fe in FRONT_ENDS:
            for name in sorted(os.listdir(os.path.join(source, fe))):
                if not name.endswith((".c", ".h")):
                    continue
                start = os.path.join(source, fe, name)
                seen, todo = set(), [start]
                while todo:
                    path = todo.pop()
                    for inc in includes(path):
                        if inc in ENGINE_HEADERS:
                            reached.append("%s reaches %s (via %s)" % (os.path.relpath(start, source), inc,
                                                                       os.path.relpath(path, source)))
                        found = find(inc, os.path.dirname(path))
                        if found and found not in seen:
                            seen.add(found)
                            todo.append(found)
                checked += 1
        self.assertGreater(checked, 20)
        self.assertEqual(reached, [])


if __name__ == "__main__":
    unittest.main()
