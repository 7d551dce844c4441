#!/usr/bin/env python3
"""The files of model/ call each other one way: the call graph between the object files
of libmtmodel (which file's undefined mt_* symbols another defines, read with nm) has no
cycle. A cycle (model.c and packed.c calling each other, as they once did) means two
files that can only be read, changed and tested together."""
import glob
import os
import subprocess
import sys
import unittest


def symbols(obj, flag):
    out = subprocess.run(["nm", flag, obj], capture_output=True, text=True, check=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if not parts:
            continue
        name = parts[-1]
        if name.startswith("mt_") and (flag == "-u" or parts[-2] in "TDRB"):
            names.add(name)
    return names


def graph(objs):
    defined = {}
    for o in objs:
        for s in symbols(o, "--defined-only"):
            defined[s] = os.path.basename(o)
    edges = {os.path.basename(o): set() for o in objs}
    for o in objs:
        for s in symbols(o, "-u"):
            if s in defined and defined[s] != os.path.basename(o):
                edges[os.path.basename(o)].add(defined[s])
    return edges


def cycles(edges):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


class ModelLayering(unittest.TestCase):
    def test_no_call_cycle(self):
        build = os.environ.get("MT_BUILD_DIR", "build")
        objs = sorted(glob.glob(os.path.join(build, "model", "libmtmodel.a.p", "*.o")))
        if not objs:
            print("SKIP: no object files under %s/model" % build)
            sys.exit(77)
        edges = graph(objs)
        self.assertIn("packed.c.o", edges["model.c.o"])  # the check sees real calls
        self.assertEqual(cycles(edges), [], "object files of model/ that call each other")


if __name__ == "__main__":
    unittest.main()
