#!/usr/bin/python3
"""Train a small MarianMT-compatible Transformer and export it for the C engine.

Pipeline: joint SentencePiece unigram vocabulary (Marian ids: </s>=0, <unk>=1,
<pad>=last) -> token-bucketed batches -> Transformer (Vaswani et al. 2017) with
label smoothing, Adam and inverse-square-root learning rate -> one checkpoint per
epoch -> the best single epoch or an average of epochs, whichever has the lower
validation loss -> Hugging Face MarianMT directory (F16 safetensors,
config/tokenizer json, spm models), also rewritten after every epoch.

Run with OPENBLAS_CORETYPE=SkylakeX, LD_PRELOAD=libjemalloc.so.2 and
MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1 (jemalloc otherwise hands freed
pages back to the kernel and faults them in again every step: 2x slower).
`--self-check` tests the export round trip and the position formula and exits.
"""
import argparse
import glob
import gzip
import json
import math
import os
import random
import shutil
import sys
import tempfile
import time

import numpy as np
import sentencepiece as spm
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402
from transformer import MarianTransformer, sinusoidal_positions  # noqa: E402

EOS_ID, UNK_ID = 0, 1


def log(msg):
    print(time.strftime("%H:%M:%S"), msg, flush=True)


def read_lines(path):
    """Lines of a plain or gzip text file, without trailing newlines."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def train_spm(texts, prefix, vocab_size):
    """Train one joint unigram model with Marian's special ids (no bos/pad in spm;
    pad is appended after the spm pieces in vocab.json). The vocabulary size is a soft
    limit so that tiny corpora (tests) get fewer pieces instead of an error."""
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".txt", delete=False) as f:
        for t in texts:
            f.write(t + "\n")
        corpus = f.name
    try:
        spm.SentencePieceTrainer.train(
            input=corpus, model_prefix=prefix, vocab_size=vocab_size, model_type="unigram",
            character_coverage=1.0, bos_id=-1, eos_id=EOS_ID, unk_id=UNK_ID, pad_id=-1,
            input_sentence_size=2000000, shuffle_input_sentence=True, hard_vocab_limit=False,
            minloglevel=2)
    finally:
        os.unlink(corpus)


def encode_pairs(sp, src_lines, tgt_lines, max_len):
    """Token ids per pair: source = pieces + eos; target = pieces (start/eos added in
    collate). Pairs with an empty side or longer than max_len are dropped."""
    threads = os.cpu_count() or 1
    src_ids = sp.encode(src_lines, out_type=int, num_threads=threads)
    tgt_ids = sp.encode(tgt_lines, out_type=int, num_threads=threads)
    pairs = []
    for s, t in zip(src_ids, tgt_ids):
        if s and t and len(s) < max_len and len(t) < max_len:
            pairs.append((s + [EOS_ID], t))
    return pairs


def make_batches(pairs, max_tokens, rng):
    """Group pairs of similar length so that batch_size * longest side <= max_tokens.

    A random tie-break inside the length sort changes batch composition every epoch;
    the batch order is shuffled too.
    """
    order = sorted(range(len(pairs)),
                   key=lambda i: (len(pairs[i][1]), len(pairs[i][0]), rng.random()))
    batches, cur, longest = [], [], 0
    for i in order:
        n = max(len(pairs[i][0]), len(pairs[i][1]) + 1)
        if cur and (len(cur) + 1) * max(longest, n) > max_tokens:
            batches.append(cur)
            cur, longest = [], 0
        cur.append(i)
        longest = max(longest, n)
    if cur:
        batches.append(cur)
    rng.shuffle(batches)
    return batches


def collate(pairs, idx, pad_id, device=None):
    """Padded tensors: source ids, decoder input [start=pad] + y, labels y + [eos].
    Filled in numpy (a torch.tensor per row costs more than a GPU step's arithmetic),
    then moved to `device` in one copy each."""
    srcs = [pairs[i][0] for i in idx]
    tgts = [pairs[i][1] for i in idx]
    s_len = max(map(len, srcs))
    t_len = max(map(len, tgts)) + 1
    src = np.full((len(idx), s_len), pad_id, dtype=np.int64)
    dec = np.full((len(idx), t_len), pad_id, dtype=np.int64)
    lab = np.full((len(idx), t_len), pad_id, dtype=np.int64)
    for r, (s, t) in enumerate(zip(srcs, tgts)):
        src[r, : len(s)] = s
        dec[r, 1: len(t) + 1] = t
        lab[r, : len(t)] = t
        lab[r, len(t)] = EOS_ID
    out = (torch.from_numpy(src), torch.from_numpy(dec), torch.from_numpy(lab))
    if device is not None and device.type != "cpu":
        out = tuple(x.pin_memory().to(device, non_blocking=True) for x in out)
    return out


def batch_loss(model, src, dec, lab, smoothing, bf16):
    """(label-smoothed loss sum, nll sum, target tokens). Only non-pad positions are
    projected onto the vocabulary, which saves the largest matmul's padding."""
    with torch.autocast(src.device.type, dtype=torch.bfloat16, enabled=bf16):
        h = model(src, dec)
        mask = lab != model.pad_id
        logits = model.logits(h[mask], drop_pad=True)
    lprobs = F.log_softmax(logits.float(), dim=-1)
    y = lab[mask]
    nll = -lprobs.gather(1, y[:, None]).squeeze(1)
    smooth = -lprobs.mean(dim=1)
    loss = ((1.0 - smoothing) * nll + smoothing * smooth).sum()
    return loss, nll.sum(), y.numel()


@torch.no_grad()
def evaluate(model, pairs, pad_id, max_tokens):
    """Per-token validation NLL (no smoothing, no dropout), used for model selection."""
    model.eval()
    total, n = 0.0, 0
    device = next(model.parameters()).device
    for idx in make_batches(pairs, max_tokens, random.Random(0)):
        src, dec, lab = collate(pairs, idx, pad_id, device)
        _, nll, k = batch_loss(model, src, dec, lab, 0.0, False)
        total += nll.item()
        n += k
    model.train()
    return total / max(n, 1)


def lr_at(step, peak, warmup, prior_steps=0, prior_warmup=0):
    """Linear warmup to `peak`, then decay proportional to 1/sqrt(step).

    A run continued from a shipped model (--init-from) has a fresh optimizer: it warms
    up again over `warmup` steps, to the rate the first run's schedule had reached
    after prior_steps + step steps (its warm-up was prior_warmup)."""
    step = max(step, 1)
    if prior_steps:
        total = prior_steps + step
        return peak * min(step / warmup, 1.0) * math.sqrt(prior_warmup / max(total, prior_warmup))
    return peak * min(step / warmup, math.sqrt(warmup / step))


def model_config(args, vocab_size, pad_id):
    return {
        "model_type": "marian", "architectures": ["MarianMTModel"],
        "d_model": args.d_model, "encoder_layers": enc_layers(args),
        "decoder_layers": dec_layers(args),
        "encoder_attention_heads": args.heads, "decoder_attention_heads": args.heads,
        "encoder_ffn_dim": args.ffn, "decoder_ffn_dim": args.ffn,
        "vocab_size": vocab_size, "decoder_vocab_size": vocab_size,
        "pad_token_id": pad_id, "eos_token_id": EOS_ID, "decoder_start_token_id": pad_id,
        "forced_eos_token_id": EOS_ID, "bos_token_id": EOS_ID,
        "activation_function": "relu", "scale_embedding": True,
        "static_position_embeddings": True, "max_position_embeddings": args.max_positions,
        "share_encoder_decoder_embeddings": True, "tie_word_embeddings": True,
        "normalize_before": False, "normalize_embedding": False,
        "num_beams": 4, "max_length": 256, "bad_words_ids": [[pad_id]],
        "torch_dtype": "float16", "dropout": args.dropout, "attention_dropout": args.dropout,
        "activation_dropout": 0.0, "init_std": 0.02, "is_encoder_decoder": True,
        "num_hidden_layers": enc_layers(args),
    }


def enc_layers(args):
    return getattr(args, "encoder_layers", None) or args.layers


def dec_layers(args):
    return getattr(args, "decoder_layers", None) or args.layers


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def write_model_dir(out, model, args, sp_path, sp, history=None):
    """Write the MarianMT directory. Each file is replaced atomically so that a reader
    never sees a half-written file while training rewrites the directory."""
    os.makedirs(out, exist_ok=True)
    pad_id = model.pad_id
    vocab_size = pad_id + 1
    tensors = {}
    for name, t in model.state_dict().items():
        arr = t.detach().float().cpu().numpy()
        tensors[name] = arr if name == "final_logits_bias" else arr.astype(np.float16)
    safetensors_io.write(os.path.join(out, "model.safetensors"), tensors, {"format": "pt"})
    write_json(os.path.join(out, "config.json"), model_config(args, vocab_size, pad_id))
    write_json(os.path.join(out, "generation_config.json"), {
        "bad_words_ids": [[pad_id]], "bos_token_id": EOS_ID, "decoder_start_token_id": pad_id,
        "eos_token_id": EOS_ID, "forced_eos_token_id": EOS_ID, "max_length": 256,
        "num_beams": 4, "pad_token_id": pad_id})
    write_json(os.path.join(out, "tokenizer_config.json"), {
        "source_lang": args.src_lang, "target_lang": args.tgt_lang, "separate_vocabs": False,
        "model_max_length": args.max_positions, "eos_token": "</s>", "unk_token": "<unk>",
        "pad_token": "<pad>", "tokenizer_class": "MarianTokenizer"})
    write_json(os.path.join(out, "special_tokens_map.json"),
               {"eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"})
    vocab = {sp.id_to_piece(i): i for i in range(sp.get_piece_size())}
    vocab["<pad>"] = pad_id
    write_json(os.path.join(out, "vocab.json"), vocab)
    for name in ("source.spm", "target.spm"):
        shutil.copyfile(sp_path, os.path.join(out, name + ".tmp"))
        os.replace(os.path.join(out, name + ".tmp"), os.path.join(out, name))
    if history is not None:
        # What --init-from needs to continue the schedule on a fresh machine.
        write_json(os.path.join(out, "training.json"), history)


def checkpoints(run_dir):
    """Full (resumable) checkpoints, oldest first."""
    return sorted(glob.glob(os.path.join(run_dir, "checkpoint_*.pt")))


def snapshots(run_dir):
    """{checkpoint number: path} of the model-only snapshots kept for every checkpoint."""
    paths = glob.glob(os.path.join(run_dir, "weights_*.pt"))
    return {int(os.path.basename(p)[len("weights_"):-3]): p for p in paths}


def save_checkpoint(run_dir, model, opt, state, valid_nll, keep):
    """Write a resumable checkpoint (the last `keep` are kept) and a small model-only
    snapshot that is never deleted, so that the final selection can average the
    checkpoints around the validation optimum even when it lies far from the end.
    `state` holds the position in the data (epoch, batch, the epoch's shuffle seed)."""
    k = state["ckpt"]
    snap = os.path.join(run_dir, f"weights_{k:04d}.pt")
    torch.save({"model": model.state_dict(), "valid_nll": valid_nll, **state}, snap + ".tmp")
    os.replace(snap + ".tmp", snap)
    path = os.path.join(run_dir, f"checkpoint_{k:04d}.pt")
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "valid_nll": valid_nll,
                "torch_rng": torch.get_rng_state(), **state}, path + ".tmp")
    os.replace(path + ".tmp", path)
    for old in checkpoints(run_dir)[:-keep]:
        os.unlink(old)


def average_state(paths):
    """Parameter-wise mean of the snapshots' model states."""
    avg = None
    for p in paths:
        sd = torch.load(p, map_location="cpu")["model"]
        if avg is None:
            avg = {k: v.clone().double() for k, v in sd.items()}
        else:
            for k, v in sd.items():
                avg[k] += v.double()
    return {k: (v / len(paths)).float() for k, v in avg.items()}


def build_model(args, vocab_size, pad_id):
    return MarianTransformer(vocab_size, pad_id, args.d_model, enc_layers(args), dec_layers(args),
                             args.heads, args.ffn, args.dropout, args.dropout,
                             args.max_positions)


def finish(args, model, sp_path, sp, valid, history):
    """Pick the candidate with the lowest validation NLL among the best single
    checkpoint, the average of the last N checkpoints and the average of the N ending
    at the best one; load it into `model` and write the model directory."""
    snaps = snapshots(args.run_dir)
    if not snaps:
        return
    nll_of = {e: torch.load(p, map_location="cpu")["valid_nll"] for e, p in snaps.items()}
    best = min(nll_of, key=nll_of.get)
    epochs = sorted(snaps)
    candidates = {f"best single (checkpoint {best})": [best]}
    for end in (epochs[-1], best):
        window = [e for e in epochs if e <= end][-args.average:]
        if len(window) > 1:
            candidates[f"average of checkpoints {window[0]}-{window[-1]}"] = window
    scored = []
    for name, window in candidates.items():
        state = average_state([snaps[e] for e in window])
        model.load_state_dict(state)
        nll = evaluate(model, valid, model.pad_id, args.max_tokens)
        log(f"selection: {name}: valid nll {nll:.4f} ppl {math.exp(nll):.2f}")
        scored.append((nll, name, state))
    nll, name, state = min(scored, key=lambda x: x[0])
    model.load_state_dict(state)
    history["selected"] = {"candidate": name, "valid_nll": round(nll, 4)}
    write_model_dir(args.out, model, args, sp_path, sp, history)
    log(f"selected {name} (valid nll {nll:.4f}); wrote {args.out}")


def load_model_dir_weights(model, model_dir):
    """Load a shipped model directory's safetensors weights (F16 or F32, or a directory
    stored int8: I8 rows with float "<name>_scale" vectors, read back as q * scale, as
    the engine does) into `model`."""
    got = safetensors_io.read(os.path.join(model_dir, "model.safetensors"))
    for name in [k for k in got if k + "_scale" in got]:
        q = got[name].astype(np.float32)
        got[name] = q * got.pop(name + "_scale").astype(np.float32)[:, None]
    sd = model.state_dict()
    if set(got) != set(sd):
        sys.exit(f"{model_dir}: weights do not match the model settings "
                 f"(differing tensors: {sorted(set(got) ^ set(sd))[:5]})")
    for k, v in sd.items():
        if tuple(got[k].shape) != tuple(v.shape):
            sys.exit(f"{model_dir}: tensor {k} has shape {got[k].shape}, the settings want {tuple(v.shape)}")
    model.load_state_dict({k: torch.from_numpy(got[k].astype(np.float32)) for k in sd})


def train(args):
    """Full run: vocabulary, training until the epoch limit or the time budget
    (measured from this process's start, also after --resume), then selection."""
    t0 = time.time()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    if device.type == "cuda":
        # TF32 for the fp32 parts (the loss, the optimizer's arithmetic is elementwise).
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    os.makedirs(args.run_dir, exist_ok=True)
    rng = random.Random(args.seed)
    torch.manual_seed(args.seed)

    train_src, train_tgt = read_lines(args.train_src), read_lines(args.train_tgt)
    valid_src, valid_tgt = read_lines(args.valid_src), read_lines(args.valid_tgt)
    if len(train_src) != len(train_tgt) or len(valid_src) != len(valid_tgt):
        sys.exit("source and target files differ in line count")
    if args.max_train:
        train_src, train_tgt = train_src[: args.max_train], train_tgt[: args.max_train]
    if args.max_valid:
        valid_src, valid_tgt = valid_src[: args.max_valid], valid_tgt[: args.max_valid]

    sp_path = os.path.join(args.run_dir, "spm.model")
    prior = {}
    if args.init_from:
        # Continue a shipped model: its vocabulary, its weights, its schedule position.
        shutil.copyfile(os.path.join(args.init_from, "source.spm"), sp_path)
        hist_path = os.path.join(args.init_from, "training.json")
        if os.path.exists(hist_path):
            with open(hist_path, encoding="utf-8") as f:
                prior = json.load(f)
    elif args.spm:
        if not (args.resume and os.path.exists(sp_path)):
            shutil.copyfile(args.spm, sp_path)
    elif not (args.resume and os.path.exists(sp_path)):
        train_spm(train_src + train_tgt, os.path.join(args.run_dir, "spm"), args.vocab_size)
    sp = spm.SentencePieceProcessor(model_file=sp_path)
    if sp.id_to_piece(EOS_ID) != "</s>" or sp.id_to_piece(UNK_ID) != "<unk>":
        sys.exit("unexpected spm special ids")
    pad_id = sp.get_piece_size()
    train_pairs = encode_pairs(sp, train_src, train_tgt, args.max_positions)
    valid_pairs = encode_pairs(sp, valid_src, valid_tgt, args.max_positions)
    del train_src, train_tgt
    n_tgt = sum(len(t) + 1 for _, t in train_pairs)
    log(f"vocab {pad_id + 1} (pad {pad_id}); train pairs {len(train_pairs)} "
        f"({n_tgt} target tokens); valid pairs {len(valid_pairs)}")

    model = build_model(args, pad_id + 1, pad_id).to(device)
    log(f"parameters {sum(p.numel() for p in model.parameters())} on {device}")
    prior_steps = prior_warmup = 0
    if args.init_from:
        load_model_dir_weights(model, args.init_from)
        prior_steps = int(prior.get("steps", 0))
        prior_warmup = int(prior.get("warmup", args.warmup))
        log(f"initialised from {args.init_from} ({prior_steps} earlier steps); fresh optimizer, "
            f"warm-up {args.warmup} steps")
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, betas=(0.9, 0.98), eps=1e-9,
                           **({"fused": True} if device.type == "cuda" else {}))
    # Position in the data: epoch, index of the next batch, the seed of that epoch's
    # batching (so a resumed run rebuilds the same batches and skips those done).
    pos = {"ckpt": 0, "epoch": 1, "batch": 0, "step": 0, "tokens": 0,
           "epoch_seed": rng.randrange(1 << 30)}
    if not args.resume:
        # A new run (from scratch or --init-from) must not select among the snapshots of an
        # earlier run left in the same run directory (other numbering, other selection set).
        stale = checkpoints(args.run_dir) + sorted(snapshots(args.run_dir).values())
        for path in stale:
            os.unlink(path)
        if stale:
            log(f"removed {len(stale)} checkpoints and snapshots of an earlier run from {args.run_dir}")
    prior_minutes, prior_calls = 0.0, 0  # of the earlier calls of a resumed run
    if args.resume and checkpoints(args.run_dir):
        ck = torch.load(checkpoints(args.run_dir)[-1], map_location=device)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        torch.set_rng_state(ck["torch_rng"].cpu())
        pos = {k: ck[k] for k in pos}
        prior_steps, prior_warmup = ck.get("prior_steps", 0), ck.get("prior_warmup", 0)
        # A run goes on over several calls (tools/train_cpu.sh, one a session): its record
        # counts the minutes and calls of all of them, not only this one's.
        prior_minutes, prior_calls = ck.get("run_minutes", 0.0), ck.get("run_calls", 1)
        log(f"resumed from checkpoint {pos['ckpt']}: epoch {pos['epoch']} batch {pos['batch']} "
            f"step {pos['step']}")
    earlier_runs = list(prior.get("runs", []))
    if "this_run" in prior:
        # The directory was written at a checkpoint of a run that never reached its end
        # (stopped, or still going when it was copied): that run counts all the same.
        earlier_runs.append(dict(prior["this_run"], cut_short=True))
    if args.resume and checkpoints(args.run_dir):
        earlier_runs = ck.get("earlier_runs", earlier_runs)
    history = {"steps": prior_steps + pos["step"], "warmup": prior_warmup or args.warmup,
               "runs": earlier_runs, "seed": args.seed}

    last_ckpt_step = pos["step"]

    def checkpoint(epoch_done):
        nonlocal last_ckpt_step
        last_ckpt_step = pos["step"]
        v = evaluate(model, valid_pairs, pad_id, args.max_tokens)
        pos["ckpt"] += 1
        run_minutes = prior_minutes + (time.time() - t0) / 60
        save_checkpoint(args.run_dir, model, opt,
                        dict(pos, prior_steps=prior_steps, prior_warmup=prior_warmup,
                             earlier_runs=history["runs"], run_minutes=run_minutes,
                             run_calls=prior_calls + 1), v, args.keep)
        history["steps"] = prior_steps + pos["step"]
        history["this_run"] = {"steps": pos["step"], "target_tokens": pos["tokens"],
                               "minutes": round(run_minutes, 3), "calls": prior_calls + 1,
                               "init_from": bool(args.init_from)}
        write_model_dir(args.out, model, args, sp_path, sp, history)
        where = f"end of epoch {pos['epoch'] - 1}" if epoch_done else f"in epoch {pos['epoch']}"
        log(f"checkpoint {pos['ckpt']} ({where}) step {pos['step']}: valid nll {v:.4f} ppl {math.exp(v):.2f} "
            f"elapsed {(time.time() - t0) / 60:.1f}m")

    budget = args.time_budget_min * 60.0
    model.train()
    stopped = False
    last_ckpt = time.time()
    while pos["epoch"] <= args.epochs and not stopped:
        batches = make_batches(train_pairs, args.max_tokens, random.Random(pos["epoch_seed"]))
        ep_t0, ep_tok = time.time(), 0
        while pos["batch"] < len(batches):
            if time.time() - t0 >= budget or (args.max_steps and pos["step"] >= args.max_steps):
                stopped = True
                break
            src, dec, lab = collate(train_pairs, batches[pos["batch"]], pad_id, device)
            pos["batch"] += 1
            pos["step"] += 1
            step = pos["step"]
            if prior_steps:
                lr = lr_at(step, args.lr, args.warmup, prior_steps, prior_warmup)
            else:
                lr = lr_at(step, args.lr, args.warmup)
            for g in opt.param_groups:
                g["lr"] = lr
            loss, nll, ntok = batch_loss(model, src, dec, lab, args.label_smoothing, args.bf16)
            opt.zero_grad(set_to_none=True)
            (loss / ntok).backward()
            if args.clip_norm > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip_norm)
            opt.step()
            ep_tok += ntok
            pos["tokens"] += ntok
            if args.stop_file and os.path.exists(args.stop_file):
                log(f"{args.stop_file} exists: stopping")
                stopped = True
                break
            if step % args.log_every == 0:
                el = time.time() - t0
                tps = ep_tok / max(time.time() - ep_t0, 1e-6)
                log(f"epoch {pos['epoch']} batch {pos['batch']}/{len(batches)} step {step} "
                    f"loss {loss.item() / ntok:.3f} nll {nll.item() / ntok:.3f} lr {lr:.2e} "
                    f"tok/s {tps:.0f} elapsed {el / 60:.1f}m")
            if args.checkpoint_min and time.time() - last_ckpt >= args.checkpoint_min * 60:
                checkpoint(False)
                last_ckpt = time.time()
        if not stopped:
            log(f"end of epoch {pos['epoch']}")
            pos["epoch"] += 1
            pos["batch"] = 0
            pos["epoch_seed"] = rng.randrange(1 << 30)
            if not args.checkpoint_min:
                checkpoint(True)
                last_ckpt = time.time()
    if pos["ckpt"] == 0 or pos["step"] > last_ckpt_step:
        checkpoint(False)  # steps since the last checkpoint are kept, however few
    history["runs"] = history["runs"] + [dict(history.pop("this_run", {}),
                                              init_from=bool(args.init_from))]
    finish(args, model, sp_path, sp, valid_pairs, history)
    log(f"done in {(time.time() - t0) / 60:.1f}m")


def self_check():
    """Round-trip a tiny random model through the exporter and our reader, and check
    the vectorised position table against the formula written as a plain loop."""
    d = 16
    pe = sinusoidal_positions(7, d)
    for pos in range(7):
        for j in range(d):
            i = j if j < d // 2 else j - d // 2
            angle = pos / 10000 ** (2 * i / d)
            want = math.sin(angle) if j < d // 2 else math.cos(angle)
            assert abs(pe[pos, j].item() - want) < 1e-6, (pos, j)

    with tempfile.TemporaryDirectory() as tmp:
        texts = [f"a small test sentence number {i} with words {i * 7 % 13}" for i in range(200)]
        train_spm(texts, os.path.join(tmp, "spm"), 60)
        sp_path = os.path.join(tmp, "spm.model")
        sp = spm.SentencePieceProcessor(model_file=sp_path)
        pad_id = sp.get_piece_size()
        args = argparse.Namespace(d_model=d, layers=2, heads=2, ffn=32, dropout=0.1,
                                  max_positions=64, src_lang="en", tgt_lang="de")
        model = build_model(args, pad_id + 1, pad_id)
        out = os.path.join(tmp, "model")
        write_model_dir(out, model, args, sp_path, sp)
        got = safetensors_io.read(os.path.join(out, "model.safetensors"))
        sd = model.state_dict()
        assert set(got) == set(sd), set(got) ^ set(sd)
        for k, v in sd.items():
            want = v.numpy()
            assert got[k].shape == want.shape, k
            assert got[k].dtype == (np.float32 if k == "final_logits_bias" else np.float16), k
            assert np.allclose(got[k].astype(np.float32), want, atol=1e-3, rtol=1e-3), k
        assert not got["model.shared.weight"][pad_id].any()
        cfg = json.load(open(os.path.join(out, "config.json")))
        assert cfg == model_config(args, pad_id + 1, pad_id)
        assert cfg["vocab_size"] == pad_id + 1 == got["model.shared.weight"].shape[0]
        vocab = json.load(open(os.path.join(out, "vocab.json"), encoding="utf-8"))
        assert vocab["</s>"] == EOS_ID and vocab["<unk>"] == UNK_ID and vocab["<pad>"] == pad_id
        assert len(vocab) == pad_id + 1 and sorted(vocab.values()) == list(range(pad_id + 1))
        for name in ("generation_config.json", "tokenizer_config.json",
                     "special_tokens_map.json", "source.spm", "target.spm"):
            assert os.path.exists(os.path.join(out, name)), name
        # the reloaded F16 weights must give (nearly) the same decoder states
        model.eval()
        twin = build_model(args, pad_id + 1, pad_id).eval()
        twin.load_state_dict({k: torch.from_numpy(v.astype(np.float32)) for k, v in got.items()})
        src = torch.tensor([sp.encode("a small test") + [EOS_ID]])
        dec = torch.tensor([[pad_id] + sp.encode("number 3")])
        with torch.no_grad():
            assert torch.allclose(model(src, dec), twin(src, dec), atol=2e-2)
    print("self-check passed")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--self-check", action="store_true", help="run the export self-check and exit")
    p.add_argument("--src-lang", default="en")
    p.add_argument("--tgt-lang", default="de")
    p.add_argument("--train-src")
    p.add_argument("--train-tgt")
    p.add_argument("--valid-src")
    p.add_argument("--valid-tgt")
    p.add_argument("--out", help="model directory to write")
    p.add_argument("--run-dir", help="checkpoints, spm model and logs")
    p.add_argument("--vocab-size", type=int, default=8000, help="SentencePiece pieces (pad adds 1)")
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--layers", type=int, default=3, help="encoder and decoder layers each")
    p.add_argument("--encoder-layers", type=int, default=0, help="override --layers for the encoder")
    p.add_argument("--decoder-layers", type=int, default=0, help="override --layers for the decoder")
    p.add_argument("--spm", help="use this SentencePiece model instead of training one")
    p.add_argument("--init-from", help="continue training a model directory (its weights and "
                   "vocabulary; a fresh optimizer warming up over --warmup steps)")
    p.add_argument("--checkpoint-min", type=float, default=0,
                   help="checkpoint every N minutes instead of at the end of each epoch")
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--ffn", type=int, default=1024)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--max-positions", type=int, default=512)
    p.add_argument("--max-tokens", type=int, default=4096,
                   help="batch size in padded tokens (sentences * longest side)")
    p.add_argument("--lr", type=float, default=1e-3, help="peak learning rate")
    p.add_argument("--warmup", type=int, default=1000)
    p.add_argument("--label-smoothing", type=float, default=0.1)
    p.add_argument("--clip-norm", type=float, default=1.0)
    p.add_argument("--epochs", type=int, default=60)
    p.add_argument("--time-budget-min", type=float, default=95.0,
                   help="stop training after this many minutes of wall time")
    p.add_argument("--max-steps", type=int, default=0)
    p.add_argument("--max-train", type=int, default=0, help="use only the first N pairs")
    p.add_argument("--max-valid", type=int, default=0,
                   help="use only the first N validation pairs")
    p.add_argument("--average", type=int, default=5, help="checkpoints per average")
    p.add_argument("--keep", type=int, default=6, help="resumable checkpoints to keep")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--bf16", action="store_true", help="bfloat16 autocast (matmuls in bf16, loss in fp32)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default="cpu", help="cpu, or cuda on a machine with a GPU")
    p.add_argument("--stop-file", help="stop at the next step when this file exists "
                   "(then checkpoint, select and export as at the end of the time budget)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--log-every", type=int, default=20)
    args = p.parse_args(argv)
    if not args.self_check:
        need = ["train_src", "train_tgt", "valid_src", "valid_tgt", "out", "run_dir"]
        missing = [n for n in need if getattr(args, n) is None]
        if missing:
            p.error("missing " + ", ".join("--" + n.replace("_", "-") for n in missing))
    return args


def main():
    args = parse_args()
    if args.self_check:
        self_check()
    else:
        train(args)


if __name__ == "__main__":
    main()
