"""Streaming LM data preparation at scale: a generated lm1b-format shard set, prepared in bounded memory.

Generates N sentences (default 2,000,000) in the One Billion Word release layout
(``training-monolingual.tokenized.shuffled/news.en-000NN-of-00100`` + two held-out shards) in a
temporary folder outside the repository, then runs ``prepare_task("lm1b", ...)`` (split files +
vocab.txt) and ``WordVocab.load`` in a child process, and reports the child's wall time, throughput
and peak RSS. Targets: peak RSS < 1 GiB, >= 1M sentences/minute.

Usage::

    python scripts/bench_data.py                      # 2M sentences -> results/bench_data_cpu.md
    python scripts/bench_data.py --sentences 20000 --out /tmp/b.md   # a quick check
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from softmax_zoo.files import write_text

HELDOUT_SENTENCES = 6000  # about the size of one real held-out shard
CHILD = """
import json, sys, time
from softmax_zoo.data.prepare import prepare_task
from softmax_zoo.data.tokenizers import WordVocab
raw, out = sys.argv[1], sys.argv[2]
t0, c0 = time.perf_counter(), time.process_time()
meta = prepare_task("lm1b", raw_dir=raw, out_dir=out)
t1, c1 = time.perf_counter(), time.process_time()
vocab = WordVocab.load(out + "/lm1b/vocab.txt", min_count=3)
t2 = time.perf_counter()
print(json.dumps({"prepare_s": t1 - t0, "prepare_cpu_s": c1 - c0, "vocab_load_s": t2 - t1, "splits": meta["splits"],
                  "vocab_types": meta["vocab_size"], "vocab_min3": len(vocab)}))
"""


def generate(root: Path, n_sentences: int, n_shards: int, vocab_size: int, seed: int) -> int:
    """Write Zipf-distributed sentences (mean ~25 words, as in lm1b) as release shards; returns bytes written."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    lengths = rng.integers(2, 10, size=vocab_size)
    chars = "".join(rng.choice(letters, size=int(lengths.sum())))
    ends = np.cumsum(lengths).tolist()
    words = np.array([chars[e - k : e] + str(i) for i, (e, k) in enumerate(zip(ends, lengths.tolist()))], dtype=object)
    cdf = np.cumsum(1.0 / np.arange(1, vocab_size + 1))  # Zipf, exponent 1
    cdf /= cdf[-1]
    train_dir = root / "training-monolingual.tokenized.shuffled"
    held_dir = root / "heldout-monolingual.tokenized.shuffled"
    train_dir.mkdir(parents=True)
    held_dir.mkdir(parents=True)
    n_train = n_sentences - 2 * HELDOUT_SENTENCES
    if n_train < n_shards:
        raise ValueError(f"--sentences must be >= {2 * HELDOUT_SENTENCES + n_shards}, got {n_sentences}")
    files = [train_dir / f"news.en-{k + 1:05d}-of-00100" for k in range(n_shards)]
    counts = [n_train // n_shards + (k < n_train % n_shards) for k in range(n_shards)]
    files += [held_dir / f"news.en.heldout-{k:05d}-of-00050" for k in (0, 1)]
    counts += [HELDOUT_SENTENCES, HELDOUT_SENTENCES]
    total = 0
    for path, n in zip(files, counts):
        sent_len = 1 + rng.poisson(24, size=n)
        ids = np.searchsorted(cdf, rng.random(int(sent_len.sum())))
        toks = words[ids]
        ends = np.cumsum(sent_len)
        starts = ends - sent_len
        text = "\n".join(" ".join(toks[a:b]) for a, b in zip(starts.tolist(), ends.tolist())) + "\n"
        path.write_text(text, encoding="utf-8")
        total += len(text.encode("utf-8"))
    return total


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor() or "unknown CPU")
    return f"{cpu}, {os.cpu_count()} logical CPUs, Python {platform.python_version()}, {platform.system()} {platform.release()}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sentences", type=int, default=2_000_000)
    ap.add_argument("--shards", type=int, default=20)
    ap.add_argument("--vocab", type=int, default=500_000, help="generated word types (Zipf)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="results/bench_data_cpu.md")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_data_") as tmp:
        t0 = time.perf_counter()
        n_bytes = generate(Path(tmp) / "raw", args.sentences, args.shards, args.vocab, args.seed)
        gen_s = time.perf_counter() - t0
        load_before = os.getloadavg()
        proc = subprocess.run([sys.executable, "-c", CHILD, str(Path(tmp) / "raw"), str(Path(tmp) / "out")],
                              capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
        if proc.returncode:
            sys.stderr.write(proc.stderr)
            return proc.returncode
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # Linux: KiB, max over children
        res = json.loads(proc.stdout.strip().splitlines()[-1])
        load_after = os.getloadavg()
    n = sum(s["sentences"] for s in res["splits"].values())
    per_min = n / res["prepare_s"] * 60
    peak_mib = peak_kib / 1024
    ok_mem, ok_speed = peak_mib < 1024, per_min >= 1e6
    command = "python scripts/bench_data.py " + " ".join(
        f"--{k} {v}" for k, v in vars(args).items() if k != "out") + f" --out {args.out}"
    report = f"""# Streaming LM data preparation benchmark (CPU)

Command: `{command}`
Machine: {machine()}
Load average (1, 5, 15 min) before / after the timed run: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f} / \
{load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}
(the machine was shared with other jobs during the run, so the figures are a lower bound on speed).

Input: {n:,} generated sentences in the lm1b release layout ({args.shards} training shards + 2 held-out
shards of {HELDOUT_SENTENCES:,}), Zipf(1) over {args.vocab:,} word types, mean ~25 words a sentence,
{n_bytes / 2**20:,.0f} MiB; generated in {gen_s:.0f} s (not timed below) in a temporary folder.

| measure | value | target |
|---|---|---|
| sentences prepared (train / validation / test) | {res['splits']['train']['sentences']:,} / \
{res['splits']['validation']['sentences']:,} / {res['splits']['test']['sentences']:,} | |
| words in train | {res['splits']['train']['words']:,} | |
| `prepare_task("lm1b")` wall time (split files + vocab.txt + sha256 of every shard) | {res['prepare_s']:.1f} s | |
| CPU time of that process (user + system) | {res['prepare_cpu_s']:.1f} s | |
| throughput (sentences / wall time) | {per_min / 1e6:.2f} M sentences / minute | >= 1 M / minute: {'met' if ok_speed else 'NOT met'} |
| peak RSS of the preparing process (ru_maxrss, includes the Python interpreter and imports) | {peak_mib:,.0f} MiB | \
< 1024 MiB: {'met' if ok_mem else 'NOT met'} |
| vocab.txt word types (train) | {res['vocab_types']:,} | |
| `WordVocab.load(vocab.txt, min_count=3)` | {res['vocab_load_s']:.2f} s, {res['vocab_min3']:,} ids | |

Memory is bounded by the vocabulary (one dict entry per word type), not by the corpus: split files
are streamed in ~4 MiB batches of lines.
"""
    write_text(args.out, report)
    print(report)
    return 0 if ok_mem and ok_speed else 1


if __name__ == "__main__":
    sys.exit(main())
