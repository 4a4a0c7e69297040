"""The unigram frequency predictor's perplexity (softmax_zoo.studies.unigram_baseline) against its formula."""

from __future__ import annotations

import json
import math

import pytest

from softmax_zoo.studies import unigram_baseline as study


@pytest.fixture
def corpus(tmp_path):
    (tmp_path / "vocab.txt").write_text("the\t5\ncat\t3\n<eos>\t2\nrare\t1\n")
    (tmp_path / "test.txt").write_text("the cat\nrare dog the\n")
    return tmp_path


def test_perplexity_is_the_add_one_unigram_formula(corpus):
    result = study.measure(corpus, min_count=2)  # "rare" (1) folds into <unk>; "dog" is unknown
    vocab_size, total = result["vocab_size"], result["train_tokens"]
    assert vocab_size == 4 and total == 5 + 3 + 2 + 1  # the, cat, <eos>, <unk> (rare's 1)
    p = {"the": 6 / (total + 4), "cat": 4 / (total + 4), "<eos>": 3 / (total + 4), "<unk>": 2 / (total + 4)}
    tokens = ["the", "cat", "<eos>", "<unk>", "<unk>", "the", "<eos>"]  # the stream after its leading <eos>
    expected = math.exp(-sum(math.log(p[t]) for t in tokens) / len(tokens))
    assert result["splits"]["test"] == {"tokens": 7, "perplexity": pytest.approx(expected, rel=1e-12)}
    assert "validation" not in result["splits"]  # a split without a file is left out


def test_command_writes_its_provenance_and_names_a_missing_corpus(corpus, tmp_path, capsys):
    out = tmp_path / "out.json"
    assert study.main([f"data_dir={corpus}", "min_count=2", f"out={out}"]) == 0
    written = json.loads(out.read_text())
    assert written["vocab_size"] == 4 and written["command"].endswith(f"out={out}") and "commit" in written["git"]
    assert study.main([f"data_dir={tmp_path / 'missing'}"]) == 2
    assert "has no vocab.txt" in capsys.readouterr().err
