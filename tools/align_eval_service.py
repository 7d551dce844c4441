#!/usr/bin/env python3
"""AER of the word alignments mt-translate --return-alignments returns (the service's word
pairs), on the hand-aligned Multi30k set of tools/align_eval.py: each gold output is forced as
a target prefix, so the pairs are over exactly the annotated words. Run from the source tree
after building: /usr/bin/python3 tools/align_eval_service.py"""
import json, subprocess, sys
sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from align_eval import read_gold
gold = read_gold("tests/data/alignments_multi30k_en_de.txt")
a_total = s_total = a_s = a_p = 0
for src, out, sure, possible in gold:
    r = subprocess.run(["build/cli/mt-translate", "--model", "models/en-de", "--beam", "1", "--output", "json",
                        "--return-alignments", "--target-prefix", out], input=(src + "\n").encode(),
                       capture_output=True, check=True)
    row = json.loads(r.stdout)
    assert row["translation"].startswith(out), (row["translation"], out)
    pairs = {tuple(p) for p in row["alignments"] if p[1] < len(out.split())}
    a_total += len(pairs); s_total += len(sure); a_s += len(pairs & sure); a_p += len(pairs & possible)
print("AER through mt-translate --return-alignments: %.3f (precision %.3f, recall %.3f)" % (
    1 - (a_s + a_p) / (a_total + s_total), a_p / a_total, a_s / s_total))
