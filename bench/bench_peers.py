#!/usr/bin/python3
"""Our engine against CTranslate2 and the PyTorch reference, same model, same input, one run.

  bench/bench_peers.py [--models en-de,de-en,base[,big]] [--lines 200] [--single-lines 20]
      [--base-lines 40] [--beam 4] [--threads 2] [--repeat 2] [--no-torch]
      [--compute-types float32,bfloat16,int8] [--chart bench-peers.png] [--cache DIR]
      [--build-dir build] [--same-dir]

For every model and setting it runs, interleaved (engine A, B, C, then again), and keeps
each engine's fastest run:
  batch32   --lines lines (--base-lines for the base model), batch 32, --threads threads
  batch1    --single-lines lines one sentence at a time, --threads threads, each sentence
            timed on its own inside one process (ours: bench/latency_tool.c through the
            translation service; CT2: bench/ct2_latency.py): latency p50/p90/p99
  1worker   the batch32 input, batch 32, one worker of one thread
  2workers  the same input decoded by two workers of one thread each in one process
            sharing one copy of the weights (ours: mt-translate --workers 2, CT2: --inter 2);
            printed with each engine's throughput gain over its 1worker run
Engines: mt-translate in every compute type this CPU offers (--compute-types; a type
refused with "not available on this CPU" is skipped with a message; MT_KERNELS from the
environment), CTranslate2 4.8.1 from ../shared/peers/ctranslate2 in float32 and int8
(skipped, with a message, when absent), and tools/reference.py (PyTorch, batch32 only;
--no-torch skips it).

Printed per row: seconds excluding start-up and model load (batch32 / 2workers: each
engine's best time on a single empty line is subtracted from its wall time, every run a
fresh process; batch1: the sum of the per-sentence times), target tokens/s
(whitespace-separated output words), peak RSS (max over the run's processes, of the sum
for concurrent workers), per-sentence latency percentiles for batch1, and the ratios
of CT2's float32 and int8 times to each engine's (> 1: faster than that CT2 type); then
our best against CT2's best. A PNG chart of tokens/s per engine and setting is written
with matplotlib when it is installed.

Models: en-de and de-en are the bundled ones, LABEL=DIR any other model directory (text input
from Multi30k test_2016_flickr, German for a LABEL ending in de-en);
base is a random transformer-base-size model (bench/make_base_model.py, made once into
--cache) fed the same English text, decoding capped at 64 steps (63 for CT2, which does
not count </s>); big the same at transformer-big size (make_base_model.py --big: d 1024,
16 heads, ffn 4096, 6+6 layers).

--same-dir: both engines read the SAME CTranslate2 directories, converted once per model
with ../shared/peers/ctranslate2/hf_to_ct2.py (float32, and --quantization int8; a stored int8
directory such as the bundled models is first widened to float32 q * scale by
tools/quantize_model.py --dequantize, as that converter reads float weights only): ours
float32 and CT2 float32 on the float32 directory, ours int8 and CT2 int8 on the int8 one
(mt-translate and latency-tool load CTranslate2 directories directly), tokenized by the
directory's own source.spm/target.spm. Only batch32 (--lines lines for every model, base
included) and batch1 run, no PyTorch; each row pair prints tokens/s of both engines, the
ratio ours/CT2 in tokens/s, and how many output lines are identical.

--build-dir: where mt-translate and latency-tool are (default build/).

OMP_WAIT_POLICY from the environment reaches every engine: on a loaded machine CTranslate2's
OpenMP threads spin at their barriers (32 base lines in float32 took it 25.5 s by default,
5.2 s with OMP_WAIT_POLICY=PASSIVE, in one measurement under load), so set it there.

Timings are noisy on a shared machine: compare ratios within one run, never across runs.
Nothing here is a test."""
import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("MT_SHARED_DIR", os.path.join(ROOT, "..", "shared"))
CT2 = os.path.join(SHARED, "peers", "ctranslate2")
PY = "/usr/bin/python3"


def run_timed(cmds, inputs, outs, env=None, stderr_out=None):
    """Runs the commands concurrently, each with its own stdin/stdout file.
    Returns (wall seconds, summed peak RSS in MiB); stderr_out (a list) gets each stderr."""
    t0 = time.monotonic()
    procs = []
    for cmd, inp, out in zip(cmds, inputs, outs):
        with open(inp, "rb") as fi, open(out, "wb") as fo:
            procs.append(subprocess.Popen(cmd, stdin=fi, stdout=fo, stderr=subprocess.PIPE, env=env))
    rss = 0
    for p in procs:
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        err = p.stderr.read().decode(errors="replace")
        if p.returncode != 0:
            sys.exit("failed (%d): %s\n%s" % (p.returncode, " ".join(p.args), err[-2000:]))
        rss += usage.ru_maxrss / 1024.0
        if stderr_out is not None:
            stderr_out.append(err)
    return time.monotonic() - t0, rss


def percentile(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, max(0, int(round(q / 100.0 * (len(v) - 1)))))]


def offered_types(args):
    """Our compute types this CPU offers, and what auto picks (from --verbose)."""
    cli = os.path.join(args.build_dir, "cli", "mt-translate")
    model = os.path.join(ROOT, "models", "en-de")
    offered = []
    for ctype in args.compute_types.split(","):
        p = subprocess.run([cli, "--model", model, "--compute-type", ctype], input="", capture_output=True,
                           text=True)
        if p.returncode == 0:
            offered.append(ctype)
        else:
            print("ours %s skipped: %s" % (ctype, p.stderr.strip()))
    p = subprocess.run([cli, "--model", model, "--compute-type", "auto", "--verbose"], input="",
                       capture_output=True, text=True)
    auto = [l for l in p.stderr.splitlines() if "compute type" in l]
    return offered, (auto[0].split("compute type ", 1)[1] if auto else "?")


def normalized(line):
    """A line with SentencePiece's word marks as spaces: CTranslate2's script decodes pieces
    that target.spm lacks (the base model's unnamed ids) verbatim, "a▁white", where our
    detokenizer writes "a white"; counted and compared alike for both engines."""
    return " ".join(line.replace("\u2581", " ").split())


def count_tokens(paths):
    n = 0
    for path in paths:
        with open(path, encoding="utf-8") as f:
            n += sum(len(normalized(line).split()) for line in f)
    return n


def write_lines(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))


def add_tokenizer_files(ct2_dir, src):
    """What `mt-models install` adds beside a CTranslate2 model so our engine can read it:
    vocab.json (first id of each piece of shared_vocabulary.json) and tokenizer_config.json.
    CTranslate2 ignores both; model.bin and the SentencePiece models are the same files."""
    tokens = json.load(open(os.path.join(ct2_dir, "shared_vocabulary.json"), encoding="utf-8"))
    vocab = {}
    for i, t in enumerate(tokens):
        vocab.setdefault(t, i)
    with open(os.path.join(ct2_dir, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    cfg = json.load(open(os.path.join(ct2_dir, "config.json")))
    tc = json.load(open(os.path.join(src, "tokenizer_config.json"))) if os.path.exists(
        os.path.join(src, "tokenizer_config.json")) else {}
    with open(os.path.join(ct2_dir, "tokenizer_config.json"), "w") as f:
        json.dump({"source_lang": tc.get("source_lang", "en"), "target_lang": tc.get("target_lang", "de"),
                   "separate_vocabs": False, "eos_token": cfg.get("eos_token") or "</s>",
                   "unk_token": cfg.get("unk_token") or "<unk>", "pad_token": "<pad>",
                   "tokenizer_class": "MarianTokenizer"}, f, indent=2)


def stored_int8(model_dir):
    """Whether model_dir/model.safetensors holds I8 matrices (the bundled models do)."""
    with open(os.path.join(model_dir, "model.safetensors"), "rb") as f:
        header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
    return any(v.get("dtype") == "I8" for k, v in header.items() if k != "__metadata__")


def float_source(src, cache, name):
    """What hf_to_ct2.py converts: src, or for a stored int8 directory (which that converter
    does not read) its float32 copy q * scale (tools/quantize_model.py --dequantize, the
    weights our float32 runs on), made once per model mtime into the cache."""
    if not stored_int8(src):
        return src
    out = os.path.join(cache, "float32-" + name)
    stamp = out + ".source-mtime"
    mtime = str(os.stat(os.path.join(src, "model.safetensors")).st_mtime)
    if not (os.path.exists(stamp) and open(stamp).read() == mtime):
        shutil.rmtree(out, ignore_errors=True)
        subprocess.run([PY, os.path.join(ROOT, "tools", "quantize_model.py"), "--dequantize", src, out],
                       check=True, stdout=subprocess.DEVNULL)
        with open(stamp, "w") as f:
            f.write(mtime)
    return out


def prepare_models(args):
    """name -> (our model dir, CT2 float32 dir or None, CT2 int8 dir or None, max length or None)."""
    os.makedirs(args.cache, exist_ok=True)
    have_ct2 = os.path.exists(os.path.join(CT2, "ct2_translate.py"))
    if not have_ct2:
        print("CTranslate2 not found at %s: its rows are skipped" % CT2)
    models = {}
    for name in args.models.split(","):
        if name in ("base", "big"):
            src = os.path.join(args.cache, name + "-model")
            if not os.path.exists(os.path.join(src, "model.safetensors")):
                subprocess.run([PY, os.path.join(ROOT, "bench", "make_base_model.py"), src] +
                               (["--big"] if name == "big" else []), check=True)
            cap = 64
        else:
            # NAME is a bundled model (models/NAME); LABEL=DIR any other model directory
            name, _, src = name.partition("=")
            src = os.path.abspath(src) if src else os.path.join(ROOT, "models", name)
            cap = None
            for fn in ("generation_config.json", "config.json"):
                path = os.path.join(src, fn)
                if cap is None and os.path.exists(path):
                    cap = json.load(open(path)).get("max_length")
            cap = cap or 256
        ct = {}
        for q in ("float32", "int8"):
            ct[q] = None
            if have_ct2:
                out = os.path.join(args.cache, "ct2-%s-%s" % (name, q))
                stamp = os.path.join(out, ".source-mtime")
                mtime = str(os.stat(os.path.join(src, "model.safetensors")).st_mtime)
                if not (os.path.exists(stamp) and open(stamp).read() == mtime):
                    subprocess.run([PY, os.path.join(CT2, "hf_to_ct2.py"), float_source(src, args.cache, name),
                                    out, "--quantization", q], check=True, stdout=subprocess.DEVNULL)
                    with open(stamp, "w") as f:
                        f.write(mtime)
                if args.same_dir:
                    add_tokenizer_files(out, src)
                ct[q] = out
        models[name] = (src, ct["float32"], ct["int8"], cap)
    return models


def engine_commands(name, model, args, setting, threads, batch):
    """(label, argv) for every engine this setting runs."""
    src, ct_f32, ct_i8, cap = model
    engines = []
    if args.same_dir:  # both engines on the same CTranslate2 directory, its own tokenizer
        for ctype, d in (("float32", ct_f32), ("int8", ct_i8)):
            if setting == "batch1":
                ours = [os.path.join(args.build_dir, "bench", "latency-tool"), d, ctype, str(threads),
                        str(args.beam), str(cap)]
                ct2 = [PY, os.path.join(ROOT, "bench", "ct2_latency.py"), d, d, ctype, str(threads),
                       str(args.beam), str(cap - 1)]
            else:
                ours = [os.path.join(args.build_dir, "cli", "mt-translate"), "--model", d, "--beam",
                        str(args.beam), "--threads", str(threads), "--batch-size", str(batch),
                        "--compute-type", ctype, "--max-length", str(cap)]
                ct2 = [PY, os.path.join(CT2, "ct2_translate.py"), "--model", d, "--tokenizer", d, "--beam",
                       str(args.beam), "--batch", str(batch), "--threads", str(threads), "--compute-type",
                       ctype, "--max-length", str(cap - 1)]
            engines += [("ours " + ctype, ours), ("CT2 " + ctype, ct2)]
        return engines
    for ctype in args.offered:
        if setting == "batch1":
            ours = [os.path.join(args.build_dir, "bench", "latency-tool"), src, ctype, str(threads),
                    str(args.beam), str(cap)]
        else:
            ours = [os.path.join(args.build_dir, "cli", "mt-translate"), "--model", src, "--beam", str(args.beam),
                    "--threads", str(threads), "--batch-size", str(batch), "--compute-type", ctype,
                    "--max-length", str(cap)]
        engines.append(("ours " + ctype, ours))
    for label, d, ctype in (("CT2 float32", ct_f32, "float32"), ("CT2 int8", ct_i8, "int8")):
        if d and setting == "batch1":
            engines.append((label, [PY, os.path.join(ROOT, "bench", "ct2_latency.py"), d, src, ctype, str(threads),
                                    str(args.beam), str(cap - 1)]))
        elif d:
            cmd = [PY, os.path.join(CT2, "ct2_translate.py"), "--model", d, "--tokenizer", src, "--beam",
                   str(args.beam), "--batch", str(batch), "--threads", str(threads), "--compute-type", ctype,
                   "--max-length", str(cap - 1)]
            engines.append((label, cmd))
    if setting == "batch32" and not args.no_torch:
        torch = [PY, os.path.join(ROOT, "tools", "reference.py"), "--model", src, "--beam", str(args.beam),
                 "--threads", str(threads), "--batch-size", str(batch)]
        torch += ["--max-length", str(cap)]
        engines.append(("PyTorch float32", torch))
    return engines


def bench_setting(name, model, lines, args, setting, work):
    workers = 2 if setting == "2workers" else 1
    threads = 1 if setting in ("1worker", "2workers") else args.threads
    batch = 1 if setting == "batch1" else 32
    engines = engine_commands(name, model, args, setting, threads, batch)
    inputs = [os.path.join(work, "%s-%s.in" % (name, setting))]
    write_lines(inputs[0], lines)
    best = {}
    outputs = {}
    args.outputs[(name, setting)] = outputs
    if setting == "batch1":  # per-sentence times measured inside each process
        for _ in range(args.repeat):
            for label, cmd in engines:
                errs = []
                out = inputs[0] + "." + label.replace(" ", "_") + ".out"
                _, rss = run_timed([cmd], inputs, [out], stderr_out=errs)
                lat = json.loads(errs[0].strip().splitlines()[-1])["latency_ms"]
                secs = sum(lat) / 1e3
                if label not in best or secs < best[label][0]:
                    best[label] = (secs, rss, count_tokens([out]), lat)
                    outputs[label] = out
        return best
    empty = os.path.join(work, "empty.in")
    write_lines(empty, [""])
    load = {}
    for _ in range(args.repeat):
        for label, cmd in engines:  # start-up + model load: one empty line
            secs, _ = run_timed([cmd], [empty], [empty + ".out"])
            load[label] = min(secs, load.get(label, secs))
    for _ in range(args.repeat):
        for label, cmd in engines:
            if workers == 2 and label.startswith("CT2"):
                cmd = cmd + ["--inter", "2"]  # CTranslate2's pool: translators of --threads threads
            elif workers == 2 and label.startswith("ours"):
                cmd = cmd + ["--workers", "2"]  # worker threads over one shared weight arena
            elif workers == 2:
                continue  # the PyTorch reference has no worker pool
            outs = [inputs[0] + "." + label.replace(" ", "_") + ".out"]
            secs, rss = run_timed([cmd], inputs, outs)
            secs = max(secs - load[label], 1e-3)
            toks = count_tokens(outs)
            if label not in best or secs < best[label][0]:
                best[label] = (secs, rss, toks, None)
            outputs[label] = outs[0]
    return best


def print_same_dir(best, outputs):
    """Ours against CTranslate2 per compute type: tokens/s ratio and identical output lines."""
    for ctype in ("float32", "int8"):
        o, c = best.get("ours " + ctype), best.get("CT2 " + ctype)
        if not (o and c):
            continue
        with open(outputs["ours " + ctype], encoding="utf-8") as f:
            lo = f.read().splitlines()
        with open(outputs["CT2 " + ctype], encoding="utf-8") as f:
            lc = f.read().splitlines()
        same = sum(normalized(a) == normalized(b) for a, b in zip(lo, lc))
        print("   %-7s ours %7.0f tok/s, CT2 %7.0f tok/s: ours/CT2 %.2fx; identical lines %d/%d" % (
            ctype, o[2] / o[0], c[2] / c[0], (o[2] / o[0]) / (c[2] / c[0]), same, max(len(lo), len(lc))))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default="en-de,de-en,base")
    p.add_argument("--lines", type=int, default=200)
    p.add_argument("--single-lines", type=int, default=20)
    p.add_argument("--base-lines", type=int, default=40)
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--compute-types", default="float32,bfloat16,int8", help="ours, those this CPU offers")
    p.add_argument("--settings", default=None, help="default batch32,batch1,1worker,2workers "
                   "(--same-dir: batch32,batch1)")
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    p.add_argument("--same-dir", action="store_true",
                   help="both engines on the same CTranslate2 directory (float32 and int8)")
    p.add_argument("--chart", default=os.path.join(ROOT, "build", "bench-peers.png"))
    p.add_argument("--cache", default=os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
                                                   "mt-bench"))
    args = p.parse_args()
    args.build_dir = os.path.abspath(args.build_dir)
    args.outputs = {}
    if args.settings is None:
        args.settings = "batch32,batch1" if args.same_dir else "batch32,batch1,1worker,2workers"
    if not os.access(os.path.join(args.build_dir, "cli", "mt-translate"), os.X_OK):
        sys.exit("build first: ninja -C %s" % args.build_dir)
    if args.same_dir:
        args.no_torch = True
        args.offered, auto = ["float32", "int8"], "-"
    else:
        args.offered, auto = offered_types(args)
    models = prepare_models(args)
    if args.same_dir and not all(m[1] and m[2] for m in models.values()):
        sys.exit("--same-dir needs CTranslate2 at %s" % CT2)
    work = os.path.join(args.cache, "work")
    os.makedirs(work, exist_ok=True)
    flags = sorted({f for line in open("/proc/cpuinfo") if line.startswith("flags")
                    for f in line.split(":")[1].split() if f.startswith(("avx512", "amx", "avx_vnni"))})
    print("CPU flags: %s; %d cores; MT_KERNELS=%s; OMP_WAIT_POLICY=%s" % (
        " ".join(flags), os.cpu_count(), os.environ.get("MT_KERNELS", "auto"),
        os.environ.get("OMP_WAIT_POLICY", "unset")))
    print("ours: compute types %s; auto on the bundled en-de picks %s" % (", ".join(args.offered), auto))
    rows = []
    one_worker = {}
    for name in models:
        lang = "de" if name.endswith("de-en") else "en"
        with gzip.open(os.path.join(SHARED, "data", "multi30k", "test_2016_flickr.%s.gz" % lang), "rt",
                       encoding="utf-8") as f:
            text = [line.rstrip("\n") for line in f]
        for setting in args.settings.split(","):
            n = args.single_lines if setting == "batch1" else (
                args.base_lines if name in ("base", "big") and not args.same_dir else args.lines)
            best = bench_setting(name, models[name], text[:n], args, setting, work)
            f32 = best.get("CT2 float32", (None,))[0]
            i8 = best.get("CT2 int8", (None,))[0]
            lat_cols = setting == "batch1"
            shape = {"1worker": ", 1 worker x 1 thread", "2workers": ", 2 workers x 1 thread"}
            print("\n== %s, %s: %d lines, beam %d%s" % (name, setting, n, args.beam,
                                                      shape.get(setting, ", %d threads" % args.threads)))
            print("   %-16s %8s %9s %8s %10s %10s" % ("engine", "seconds", "tokens/s", "RSS MiB", "vs CT2 f32",
                                                    "vs CT2 i8") +
                  ("  %8s %8s %8s" % ("p50 ms", "p90 ms", "p99 ms") if lat_cols else ""))
            for label, (secs, rss, toks, lat) in best.items():
                r32 = "%.2fx" % (f32 / secs) if f32 else "-"
                r8 = "%.2fx" % (i8 / secs) if i8 else "-"
                extra = ("  %8.1f %8.1f %8.1f" % (percentile(lat, 50), percentile(lat, 90), percentile(lat, 99))
                         if lat else "")
                print("   %-16s %8.2f %9.0f %8.0f %10s %10s" % (label, secs, toks / secs, rss, r32, r8) + extra)
                rows.append((name, setting, label, toks / secs))
            if setting == "1worker":
                one_worker[name] = best
            if setting == "2workers" and name in one_worker:
                gains = ["%s %.2fx" % (k, one_worker[name][k][0] / v[0]) for k, v in best.items()
                         if k in one_worker[name]]
                print("   2 workers vs 1 worker, throughput: " + ", ".join(gains))
            if args.same_dir:
                print_same_dir(best, args.outputs[(name, setting)])
                continue
            ours = [(v[0], k) for k, v in best.items() if k.startswith("ours")]
            peers = [(v[0], k) for k, v in best.items() if k.startswith("CT2")]
            if ours and peers:
                (o, ol), (c, cl) = min(ours), min(peers)
                print("   best: %s %.2f s vs %s %.2f s: %.2fx" % (ol, o, cl, c, c / o))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("\nmatplotlib missing (apt-get install python3-matplotlib): no chart")
        return
    groups = sorted({(r[0], r[1]) for r in rows}, key=lambda g: [r[:2] for r in rows].index(g))
    labels = sorted({r[2] for r in rows})
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(groups)), 4))
    width = 0.8 / len(labels)
    for i, label in enumerate(labels):
        vals = [next((r[3] for r in rows if (r[0], r[1]) == g and r[2] == label), 0) for g in groups]
        ax.bar([x + i * width for x in range(len(groups))], vals, width, label=label)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(groups))])
    ax.set_xticklabels(["%s\n%s" % g for g in groups], fontsize=8)
    ax.set_ylabel("target tokens/s (model load excluded)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    os.makedirs(os.path.dirname(args.chart), exist_ok=True)
    fig.savefig(args.chart, dpi=100)
    print("\nchart: %s" % args.chart)


if __name__ == "__main__":
    main()
