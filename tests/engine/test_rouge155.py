"""ROUGE-1.5.5 wrapper: UniLM's text preparation, the files and config it writes, reading the Perl output.

The Perl-running tests are skipped where ROUGE-1.5.5 or its Perl modules are missing (CI machines):
``python -m softmax_zoo.rouge155 install`` and ``apt-get install libxml-dom-perl`` enable them.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from softmax_zoo import rouge155
from softmax_zoo.metrics import rouge_per_example

ROOT = Path(__file__).resolve().parents[2]
HOME = Path(os.environ.get("ROUGE_HOME", rouge155.DEFAULT_HOME))
UNAVAILABLE = rouge155.unavailable_reason(HOME)
needs_perl_rouge = pytest.mark.skipif(UNAVAILABLE is not None, reason=f"ROUGE-1.5.5 unavailable: {UNAVAILABLE}")

# ROUGE-1.5.5 -c 95 -m -r 1000 -n 2 -a -d output for two examples (trimmed of nothing but ROUGE-L's repeats).
OUTPUT = """---------------------------------------------
1 ROUGE-1 Average_R: 0.46428 (95%-conf.int. 0.42857 - 0.50000)
1 ROUGE-1 Average_P: 0.70833 (95%-conf.int. 0.66667 - 0.75000)
1 ROUGE-1 Average_F: 0.55844 (95%-conf.int. 0.54545 - 0.57143)
.............................................
1 ROUGE-1 Eval 1.1 R:0.42857 P:0.75000 F:0.54545
1 ROUGE-1 Eval 2.1 R:0.50000 P:0.66667 F:0.57143
---------------------------------------------
1 ROUGE-2 Average_R: 0.25000 (95%-conf.int. 0.16667 - 0.33333)
1 ROUGE-2 Average_P: 0.41666 (95%-conf.int. 0.33333 - 0.50000)
1 ROUGE-2 Average_F: 0.31111 (95%-conf.int. 0.22222 - 0.40000)
.............................................
1 ROUGE-2 Eval 2.1 R:0.33333 P:0.50000 F:0.40000
1 ROUGE-2 Eval 1.1 R:0.16667 P:0.33333 F:0.22222
---------------------------------------------
1 ROUGE-L Average_R: 0.39285 (95%-conf.int. 0.28571 - 0.50000)
1 ROUGE-L Average_P: 0.58333 (95%-conf.int. 0.50000 - 0.66667)
1 ROUGE-L Average_F: 0.46753 (95%-conf.int. 0.36363 - 0.57143)
.............................................
1 ROUGE-L Eval 1.1 R:0.28571 P:0.50000 F:0.36363
1 ROUGE-L Eval 2.1 R:0.50000 P:0.66667 F:0.57143
"""


def test_parse_output_reads_averages_intervals_and_per_example_scores_in_id_order():
    s = rouge155.parse_output(OUTPUT, n_examples=2)
    assert s.f1 == pytest.approx({"rouge1": 55.844, "rouge2": 31.111, "rougeL": 46.753})
    assert s.interval["rouge2"] == pytest.approx((22.222, 40.0))
    assert s.per_example["rouge2"] == pytest.approx([22.222, 40.0])  # id order, not line order
    assert s.per_example["rougeL"] == pytest.approx([36.363, 57.143])


def test_parse_output_rejects_missing_metrics_and_examples():
    with pytest.raises(ValueError, match="ids 1..3"):
        rouge155.parse_output(OUTPUT, n_examples=3)
    without_l = OUTPUT.split("1 ROUGE-L")[0]
    with pytest.raises(ValueError, match="rougeL"):
        rouge155.parse_output(without_l, n_examples=2)


def test_write_inputs_lays_out_one_see_file_per_side_and_an_eval_per_example(tmp_path):
    config = rouge155.write_inputs(["police killed the gunman", "b c"], ["the gunman was shot", "c d"], tmp_path)
    text = config.read_text()
    assert text.startswith('<ROUGE-EVAL version="1.55">') and text.rstrip().endswith("</ROUGE-EVAL>")
    assert re.findall(r'<EVAL ID="(\d+)">', text) == ["1", "2"]
    assert f"<PEER-ROOT>{tmp_path / 'peers'}</PEER-ROOT>" in text and '<INPUT-FORMAT TYPE="SEE">' in text
    peer = (tmp_path / "peers" / "1.html").read_text()
    # the line ROUGE-1.5.5's SEE reader matches: <a name="N">[N]</a> <a href="#N" id=N>text
    assert re.search(r'^<a name="1">\[1\]</a>\s+<a href="#1" id=1>police killed the gunman</a>$', peer, re.M)
    assert "the gunman was shot" in (tmp_path / "models" / "1.html").read_text()
    with pytest.raises(ValueError, match="2 and 1"):
        rouge155.write_inputs(["a", "b"], ["a"], tmp_path)


@pytest.mark.parametrize(("text", "expected"), [
    ("sri lanka ' s army", "sri lanka 's army"),
    ("they don ' t say \" yes \"", "they do n't say `` yes ''"),
    ("gdp up 3 . 5 percent to 1 , 000 ( est )", "gdp up 3.5 percent to 1,000 -lrb- est -rrb-"),
    ("tie - up . . . [UNK] & co", "tie-up ... UNK &amp; co"),
    ("U . N . says", "U.N. . says"),  # UniLM moves on two tokens after a U . N . run; kept
    ("- a - - b -", "- a -- b -"),
])
def test_fix_tokenization_follows_unilm_rules(text, expected):
    assert rouge155.fix_tokenization(text) == expected


def test_unilm_text_prepares_each_side_as_unilm_does():
    hyp = rouge155.unilm_text("<unk> wins 1st title ( 2 - 1 )", "gigaword", hypothesis=True)
    assert hyp == "UNK wins #st title -lrb- 2-# -rrb-"  # only the digit 1 is masked, as in UniLM's script
    assert rouge155.pyrouge_clean(hyp) == "unk wins #st title ( 2-# )"
    assert rouge155.unilm_text("a 1st <unk> & b", "squad_qg", hypothesis=True) == "a 1st UNK &amp; b"
    assert rouge155.unilm_text("at&t <unk> 's", "gigaword", hypothesis=False) == "at&amp;t UNK 's"
    with pytest.raises(ValueError, match="'cnndm'"):
        rouge155.unilm_text("x", "cnndm", hypothesis=True)


def test_unavailable_reason_names_the_missing_script(tmp_path):
    reason = rouge155.unavailable_reason(tmp_path)
    assert reason is not None and ("perl" in reason.lower() or "ROUGE-1.5.5.pl" in reason)


@needs_perl_rouge
def test_perl_rouge_scores_a_fixed_example_and_agrees_with_rouge_score_where_stemmers_agree():
    hyps = ["police killed the gunman", "closes schools running", "", "sri lanka closes schools"]
    refs = ["the gunman was shot down by police", "sri lanka closes schools", "a b", "sri lanka closes schools"]
    s = rouge155.score(hyps, refs, HOME)
    # example 1: 3 shared words of 4 and 7 -> F = 2 * 3 / (4 + 7); longest common subsequence "the gunman" -> 2 * 2 / 11
    assert s.per_example["rouge1"] == pytest.approx([100 * 6 / 11, 100 * 4 / 7, 0.0, 100.0], abs=1e-3)
    assert s.per_example["rougeL"] == pytest.approx([100 * 4 / 11, 100 * 4 / 7, 0.0, 100.0], abs=1e-3)
    # the reported average is the mean of the 1000 bootstrap resamples' means, not the plain mean
    lo, hi = s.interval["rouge2"]
    assert lo <= s.f1["rouge2"] <= hi and abs(s.f1["rouge2"] - sum(s.per_example["rouge2"]) / 4) < 1.0
    ours = rouge_per_example(hyps, refs)
    for m in ("rouge1", "rouge2", "rougeL"):
        assert ours[m] == pytest.approx(s.per_example[m], abs=1e-3)


@needs_perl_rouge
def test_perl_rouge_stems_with_wordnet_exceptions_unlike_rouge_score():
    s = rouge155.score(["find", "buy"], ["found", "buys"], HOME)
    assert s.per_example["rouge1"] == pytest.approx([100.0, 0.0])  # found -> find; buys -> bui (Porter y -> i)
    assert rouge_per_example(["find", "buy"], ["found", "buys"])["rouge1"] == pytest.approx([0.0, 100.0])


@needs_perl_rouge
def test_comparison_script_writes_the_page_from_a_tiny_runs_folder(tmp_path):
    runs = tmp_path / "runs"
    for name, loss in (("softmax", "police killed the gunman"), ("sparse_softmax", "police shot gunman")):
        (runs / "table5").mkdir(parents=True, exist_ok=True)
        rows = [f'{{"index": {i}, "reference": "the gunman was shot by police <unk>", '
                f'"beam1": {{"prediction": "{loss} {i}"}}}}' for i in range(3)]
        (runs / "table5" / f"gigaword_x_{name}_cpu_seed0.test.predictions.jsonl").write_text("\n".join(rows) + "\n")
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import compare_rouge_perl
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    out = tmp_path / "rouge_perl.md"
    assert compare_rouge_perl.main(["--runs", str(runs), "--out", str(out), "--home", str(HOME)]) == 0
    page = out.read_text()
    assert "-c 95 -m -r 1000 -n 2 -a -d" in page and "Not computed in CI" in page
    assert len(re.findall(r"^\| gigaword_x_(softmax|sparse_softmax)_cpu_seed0 \| beam1 \|", page, re.M)) == 3 * 2
    assert len(re.findall(r"^\| gigaword_x_\{sparse_\}softmax_cpu_seed0 \| beam1 \|", page, re.M)) == 3


def test_score_and_cli_name_why_rouge_cannot_run(tmp_path, capsys):
    with pytest.raises(RuntimeError, match="ROUGE-1.5.5 unavailable"):
        rouge155.score(["a"], ["a"], tmp_path)
    assert rouge155.main(["check", str(tmp_path)]) == 1
    assert "unavailable" in capsys.readouterr().out
    assert rouge155.main([]) == 2
