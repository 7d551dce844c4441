#!/usr/bin/env python3
"""Public and private headers apart: model/, tokenizer/, config/ and util/ export only
include/mt/ (their public headers), so no other target is compiled with one of those
folders on its include path and none can reach a private header (model/internal.h,
packed.h, decode_opts.h, config/toml.h ...) by name. Read from the build's
compile_commands.json; tests that check internals name them by relative path."""
import json
import os
import shlex
import sys
import unittest

COMPONENTS = ("model", "tokenizer", "config", "util")


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
                    if inc == folder and not src.startswith(folder + os.sep):
                        leaks.append("%s gets -I %s/" % (os.path.relpath(src, source), comp))
            checked += 1
        self.assertGreater(checked, 50)
        self.assertEqual(leaks, [])


if __name__ == "__main__":
    unittest.main()
