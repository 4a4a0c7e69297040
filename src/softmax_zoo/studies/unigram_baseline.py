"""The unigram predictor's perplexity on an LM corpus: the floor below which a language model has learnt nothing.

    python -m softmax_zoo.studies.unigram_baseline [task=lm1b] [min_count=3] [data_dir=data/lm1b]
        [out=results/diagnostics/lm1b_unigram_baseline.json]

A uniform guess scores the vocabulary size V; predicting every token from its training frequency alone (no
context) scores much lower, so a head whose test perplexity is at or above this one's has learnt less than a
frequency count. The predictor is p(w) = (n_w + 1) / (N + V), from the training counts of the vocabulary the
runs use (``vocab.txt`` with ``min_count``, rare words folded into ``<unk>``; add-one keeps a count of 0 finite),
scored on the tokens a run's evaluation predicts: every token of each split's stream after its leading
``<eos>`` (:class:`softmax_zoo.data.lm_stream.LMStream`, one stream).

Writes ``out`` (JSON): V, the training tokens N, per split its tokens and perplexity, the command and the code's
commit (``git``). ``reports/lm1b.py`` flags the heads at or above the test perplexity.
"""

from __future__ import annotations

import json
import math
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..cli_args import ArgumentError, Option, Parser, fail
from ..data.lm_stream import LMStream
from ..data.tokenizers import WordVocab
from ..files import write_text
from ..provenance import git_state
from ..timing import utc_now

COMMAND = "python -m softmax_zoo.studies.unigram_baseline"
PARSER = Parser(COMMAND, [
    Option("task", "lm1b", "the corpus's name, for the default data_dir and out"),
    Option("min_count", 3, "words seen fewer times in training become <unk>, as task.min_count", minimum=1),
    Option("data_dir", None, "the prepared corpus (default data/<task>)", kind=str),
    Option("out", None, "the JSON written (default results/diagnostics/<task>_unigram_baseline.json)", kind=str),
], max_positional=0)
SPLITS = ("validation", "test")


def split_perplexity(vocab: WordVocab, path: Path) -> dict[str, float]:
    """The unigram predictor's tokens and perplexity on ``path``'s stream (the tokens after its leading ``<eos>``)."""
    total = sum(vocab.counts) + len(vocab)
    log_p = [math.log((n + 1) / total) for n in vocab.counts]  # (V,) add-one unigram log-probabilities
    stream = LMStream([path], encode=lambda line: vocab.encode(line, add_eos=False), eos_id=vocab.eos_id, batch_size=1, bptt=1 << 30)
    tokens = list(stream.stream_tokens(0))[1:]
    if not tokens:
        raise ValueError(f"{path} has no tokens to score")
    return {"tokens": len(tokens), "perplexity": math.exp(-sum(log_p[t] for t in tokens) / len(tokens))}


def measure(data_dir: Path, min_count: int) -> dict[str, Any]:
    """V, N and each split's unigram perplexity for the corpus in ``data_dir``."""
    vocab = WordVocab.load(data_dir / "vocab.txt", min_count=min_count)
    return {"vocab_size": len(vocab), "min_count": min_count, "train_tokens": sum(vocab.counts),
            "splits": {s: split_perplexity(vocab, data_dir / f"{s}.txt") for s in SPLITS if (data_dir / f"{s}.txt").is_file()}}


def main(argv: Sequence[str] | None = None) -> int:
    """Measure and write ``out``; 2 on a bad command line or a missing corpus."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = PARSER.parse(argv)
        data_dir = Path(args["data_dir"] or f"data/{args['task']}")
        if not (data_dir / "vocab.txt").is_file():
            raise ArgumentError(f"data_dir={data_dir} has no vocab.txt: prepare it with `make data TASK={args['task']}`")
    except ArgumentError as e:
        return fail(PARSER, e)
    result = measure(data_dir, args["min_count"]) | {
        "task": args["task"], "date": utc_now(), "command": shlex.join([*COMMAND.split(), *argv]), "git": git_state()}
    out = Path(args["out"] or f"results/diagnostics/{args['task']}_unigram_baseline.json")
    write_text(out, json.dumps(result, indent=1) + "\n")
    print(f"V = {result['vocab_size']}: " + ", ".join(f"{s} ppl {r['perplexity']:.1f} over {r['tokens']} tokens"
                                                      for s, r in result["splits"].items()) + f"; wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
