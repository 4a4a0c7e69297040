"""The experiment configs compose as the papers' settings say; report statistics on known inputs."""

import math

import numpy as np
import pytest

from softmax_zoo import config, records
from softmax_zoo.metrics import bleu_stats
from softmax_zoo.reports import table5
from softmax_zoo.reports._compare import Comparison, ComparisonResult, Design
from softmax_zoo.reports._pages import dirty_note, read_claims
from softmax_zoo.reports._seq2seq import SOFTMAX, SPARSE, corpus_bootstrap, output_shares, paired_runs, stutters
from softmax_zoo.reports._stats import over_seeds
from softmax_zoo.reports._verdicts import VerdictKind
from softmax_zoo.run_record import GitState, RunRecord


@pytest.mark.parametrize("scale", ["cpu", "paper"])
@pytest.mark.parametrize("table, task", [("table5", "gigaword"), ("table3", "squad_qg")])
def test_experiments_compose(table, task, scale):
    for loss, head, topk in (("softmax", "SoftmaxHead", None), ("sparse_softmax", "SparseSoftmaxHead", "beam")):
        cfg = config.compose([f"experiment={table}_{loss}", f"scale={scale}"])
        assert cfg.experiment_name == table and cfg.task.name == task and cfg.model.name == "unilm_minilm"
        assert cfg.loss._target_ == f"softmax_zoo.losses.{head}" and cfg.loss.label_smoothing == 0.1
        assert cfg.model.mask_prob == 0.7 and cfg.task.decode.topk == topk
        assert cfg.task.max_source_len + cfg.task.max_target_len <= 512  # MiniLM's positions
        assert list(cfg.task.decode.beams) == ([1, 5] if table == "table5" else [1])
    if scale == "paper":
        expected = {"table5": (30, 64, 1), "table3": (10, 32, 1)}[table]
        assert (cfg.train.epochs, cfg.train.batch_size, cfg.train.grad_accum) == expected
        # lengths, max_pred and lr: UniLM v1's commands where the Sparse-softmax paper is silent
        lengths = {"table5": (191, 65, 32, 64, 1e-5), "table3": (464, 48, 48, 48, 2e-5)}[table]
        t = cfg.task
        assert (t.max_source_len, t.max_target_len, t.decode.max_len, cfg.model.max_pred, cfg.train.lr) == lengths
        assert t.max_source_len + t.max_target_len == {"table5": 256, "table3": 512}[table]
        assert t.decode.length_penalty == 0.0 and t.train_size is None and t.eval_size is None


@pytest.mark.parametrize("table", ["table5", "table3"])
def test_make_uses_unilm_v1_at_paper_scale_only(table):
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for scale, model in (("paper", "model=unilm_base_cased"), ("cpu", None)):
        out = subprocess.run(
            ["make", "-n", "-o", "setup", "-o", f"data/{'gigaword' if table == 'table5' else 'squad_qg'}/meta.json",
             f"reproduce-{table}", f"SCALE={scale}"],
            cwd=root, capture_output=True, text=True, check=True,
        ).stdout
        train = [line for line in out.splitlines() if "softmax_zoo.studies.seeds" in line]
        assert len(train) == 1 and (model in train[0].split() if model else "model=" not in train[0]), train


@pytest.mark.parametrize("table, task", [("table5", "gigaword"), ("table3", "squad_qg")])
def test_init_experiments_start_from_the_softmax_run(table, task):
    softmax_run = str(config.compose([f"experiment={table}_softmax", "scale=cpu", "seed=3"]).output_dir)  # resolved now:
    # ${hydra:...} interpolations read the newest composition
    for loss in ("softmax", "sparse_softmax"):
        cfg = config.compose([f"experiment={table}_{loss}", "start=softmax_run", "scale=cpu", "seed=3"])
        assert cfg.init_from == softmax_run == f"checkpoints/{table}/{task}_unilm_minilm_softmax_cpu_seed3"
        assert cfg.train.epochs == 1 and cfg.experiment_name == table and "init-softmax" in cfg.run_name
        assert cfg.loss._target_ == f"softmax_zoo.losses.{'SoftmaxHead' if loss == 'softmax' else 'SparseSoftmaxHead'}"


def test_init_runs_are_paired_only_with_each_other():
    def rec(loss, seed, init):
        return RunRecord.of({"seed": seed, "choices": {"loss": loss}, "config": {"scale": {"name": "cpu"}, "init_from": init}})

    records = [rec(SOFTMAX, 0, None), rec(SPARSE, 0, None), rec(SOFTMAX, 0, "ckpt/a"), rec(SPARSE, 0, "ckpt/a"), rec(SPARSE, 1, None)]
    pairs, lone = paired_runs(records)
    assert sorted(pairs) == ["cpu", "cpu+init"] and [len(v) for v in pairs.values()] == [1, 1]
    assert lone == {"cpu": {1: SPARSE}}
    assert all(r.setting("init_from") == "ckpt/a" for r in pairs["cpu+init"][0])
    assert all(r.setting("init_from") is None for r in pairs["cpu"][0])


def test_init_runs_and_lone_seeds():
    def rec(loss, seed, init=None):
        return RunRecord.of({"seed": seed, "choices": {"loss": loss}, "config": {"scale": {"name": "cpu"}, "init_from": init}})

    records_ = [rec(SOFTMAX, 0), rec(SPARSE, 0), rec(SOFTMAX, 1), rec(SPARSE, 2), rec(SOFTMAX, 0, "ckpt/a"), rec(SPARSE, 0, "ckpt/a")]
    pairs, lone = paired_runs(records_)
    assert lone == {"cpu": {1: SOFTMAX, 2: SPARSE}}  # the init setting has both arms of its seed
    assert [p[0].seed for p in pairs["cpu"]] == [0]


def paper_verdict(delta, paper):
    return ComparisonResult(Comparison("softmax", "sparse", "rouge1", Design.PAIRED_BY_ITEM), delta).verdict(paper)


def test_paper_verdict_uses_the_vocabulary():
    one = over_seeds({0: 0.3}, items={0: (0.1, 0.5)}, n_items={0: 100})
    assert paper_verdict(one, 0.67).kind is VerdictKind.SINGLE_RUN  # an item interval excluding 0 decides nothing
    three = over_seeds({0: 0.3, 1: 0.35, 2: 0.4}, items=dict.fromkeys(range(3), (0.1, 0.5)), n_items=dict.fromkeys(range(3), 100))
    assert paper_verdict(three, 0.67).kind is VerdictKind.SUPPORTED
    assert paper_verdict(three, -0.5).kind is VerdictKind.CONTRADICTS
    assert paper_verdict(three, None) is None


N_ITEMS = 40


def table5_records(runs, shifts: dict[int, float], lone: dict[int, str] = {}, stutter: float = 0.0,
                   dirty: dict[int, dict] = {}, constraints: dict[str, dict] | None = None) -> None:
    """Records and predictions of table5 at scale=cpu, a fresh LM head (the cold-start ablation): per seed, sparse =
    softmax + shifts[seed] on every item (plus noise); the first ``stutter`` share of the sparse arm's outputs are
    degenerate; ``dirty``: seed -> both its records' ``git`` (else a clean commit); ``constraints``: arm -> the
    constraint counts of each of its prediction rows (else none)."""
    def write(loss: str, seed: int, scores: np.ndarray) -> None:
        name = f"gigaword_{loss}_cpu_seed{seed}"
        bad = int(stutter * N_ITEMS) if loss == SPARSE else 0
        counts = (constraints or {}).get(loss, {})
        rows = [{"reference": f"ref {i}", **{f"beam{b}": {"prediction": "a a a" if i < bad else "a b c", "rouge1": s,
                                                          "rouge2": s / 2, "rougeL": s, **counts}
                                              for b in (1, 5)}} for i, s in enumerate(scores.tolist())]
        metrics = {f"test/{m}_beam{b}": float(np.mean([r[f"beam{b}"][m] for r in rows]))
                   for m in ("rouge1", "rouge2", "rougeL") for b in (1, 5)}
        metrics |= {f"test/examples_per_s_beam{b}": 10.0 for b in (1, 5)}
        records.write_record({
            "experiment": "table5", "run_name": name, "seed": seed, "choices": {"loss": loss}, "metrics": metrics,
            "config": {"scale": {"name": "cpu"}, "init_from": None, "task": {"decode": {"beams": [1, 5]}},
                       "model": {"name": "tiny", "checkpoint": None}},
            "task_info": {"sizes": {"train": 100}, "fresh_weights": True}, "timing": {"global_steps": 10},
            "git": dirty.get(seed, {"commit": "abc1234", "dirty": False, "dirty_paths": []}),
        }, runs)
        records.write_predictions(rows, runs, "table5", name, "test")

    for seed, shift in shifts.items():
        rng = np.random.default_rng(seed)
        base = rng.uniform(10, 30, N_ITEMS)
        write(SOFTMAX, seed, base)
        write(SPARSE, seed, base + shift + rng.normal(0, 0.5, N_ITEMS))
    for seed, loss in lone.items():
        write(loss, seed, np.random.default_rng(seed).uniform(10, 30, N_ITEMS))


def table5_page(tmp_path) -> dict:
    """table5's data (summarise) from the records under ``tmp_path``; the page and its claims rows built too (their
    words are checked by rebuilding the committed pages identically)."""
    table5.build(tmp_path)
    d = table5.summarise(tmp_path)
    assert (tmp_path / "table5.md").is_file() and set(read_claims(tmp_path / "claims.md")) == {c["id"] for c in d["claims"]}
    return d


@pytest.mark.parametrize("shifts, lone, kind", [
    ({0: 2.0}, {}, VerdictKind.SINGLE_RUN),  # an item interval far from 0, still one run
    ({0: 2.0, 1: 2.5, 2: 1.8}, {}, VerdictKind.SUPPORTED),
    ({0: -2.0, 1: -2.5, 2: -1.8}, {}, VerdictKind.CONTRADICTS),
    ({0: 2.0, 1: -2.5, 2: 1.8}, {}, VerdictKind.INCONCLUSIVE),
    ({0: 2.0, 1: 2.5}, {3: SOFTMAX}, VerdictKind.TOO_FEW_SEEDS),  # seed 3 has one arm: left out
])
def test_table5_page_verdicts_over_seeds(tmp_path, shifts, lone, kind):
    table5_records(records.runs_dir(tmp_path), shifts, lone)
    d = table5_page(tmp_path)
    (section,) = d["sections"]
    assert section["scale"] == "cpu" and section["cold_start"] and section["regime"] is None  # targets in Ω_k not measured
    assert section["seeds"] == sorted(shifts) and section["lone"] == lone
    assert section["dirty"] == "" and section["outputs"]["degenerate"]["sparse_softmax"] == [0.0, 0.0]
    rows = [c for c in d["claims"] if c["id"].startswith("table5_cpu_")]
    assert len(rows) == 4 and {r["key"] for r in rows} == {"beam1_rouge1", "beam1_rouge2", "beam5_rouge1", "beam5_rouge2"}
    for row in rows:
        assert row["verdict"].kind is kind and row["delta"].seeds == tuple(sorted(shifts)) and row["delta"].n == len(shifts)
        assert row["verdict"].data["d"] is row["delta"] and row["delta"].n_items == (N_ITEMS,) * len(shifts)
        assert math.isnan(row["delta"].sd) == (len(shifts) == 1)  # the between-seed SD beside the item standard error
    assert section["counts"] == {kind.value: 4}
    paper = [c for c in d["claims"] if c["id"].startswith("table5_paper_")]
    assert paper and all(c["untested"] and c["verdict"].kind is VerdictKind.NOT_TESTED for c in paper)
    assert all(c["verdict"].data["reason"] == "needs scale=paper" for c in paper)


def test_table5_rows_keep_the_degenerate_caveat_and_count_their_records_made_with_changes(tmp_path):
    table5_records(records.runs_dir(tmp_path), {0: -2.0, 1: -2.5, 2: -1.8}, stutter=0.6,
                   dirty={0: {"commit": "abc1234", "dirty": True}, 1: {"commit": "abc1234", "dirty": True, "dirty_paths": ["src/x.py"]}})
    d = table5_page(tmp_path)
    row = next(c for c in d["claims"] if c["id"] == "table5_cpu_beam1_rouge1")
    # over half of the sparse arm's outputs degenerate at beam 1: the degenerate gate makes the row not comparable, the
    # test's own verdict kept beside it
    assert row["verdict"].kind is VerdictKind.NOT_COMPARABLE and row["delta"].seeds == (0, 1, 2)
    assert row["verdict"].data["test"].kind is VerdictKind.CONTRADICTS
    assert row["section"]["outputs"]["degenerate"] == {"softmax": [0.0, 0.0], "sparse_softmax": [0.6, 0.6]}
    # the section's note counts its records: 4 of 6 (seeds 0 and 1, both arms) made with changes, one naming its file
    changed = [RunRecord(git=GitState(dirty=True))] * 2 + [RunRecord(git=GitState(dirty=True, dirty_paths=["src/x.py"]))] * 2
    assert row["section"]["dirty"] == dirty_note(changed + [RunRecord()] * 2) != ""


def test_the_between_seed_sd_is_set_beside_the_item_standard_error(tmp_path):
    table5_records(records.runs_dir(tmp_path), {0: -2.0, 1: 2.5, 2: -1.8})  # seeds far apart: SD above the item SE
    (section,) = table5.summarise(tmp_path)["sections"]
    assert section["sd_above_item_se"] == section["n_spread"] == 4  # every row with a paper Δ
    assert all(r["delta"].sd > r["delta"].item_se for r in section["rows"] if r["paper"] is not None)


def test_corpus_bootstrap_identical_and_better_systems():
    refs = ["what is the name of the river ?", "who wrote the book ?", "when did it end ?"] * 20
    worse = ["what is the river ?", "who is the book ?", "when it end ?"] * 20
    a = np.array([bleu_stats(h, r) for h, r in zip(worse, refs)])
    b = np.array([bleu_stats(r, r) for r in refs])
    same = corpus_bootstrap(a, a, 4, 400)
    assert same["delta"] == same["low"] == same["high"] == 0.0
    better = corpus_bootstrap(a, b, 2, 400)
    assert better["low"] > 0 and better["delta"] > 0 and better["p_le_0"] == 0.0


def test_stutters_flags_a_word_three_times_in_a_row():
    assert stutters("what was the the the name ?")
    assert not stutters("the cat and the dog the end")  # repeated, but never in a row
    assert not stutters("sri sri lanka") and stutters("sri sri lanka", run=2)
    assert not stutters("")
    assert not stutters("profits rose # # # percent") and not stutters("1 1 1 , , ,")  # numbers and marks are not words
    assert stutters("# to to to #") and stutters("été été été")


def test_constraint_shares_need_the_new_fields_and_are_given_per_system():
    old = {"softmax": [{"beam1": {"prediction": "a"}}], "sparse": [{"beam1": {"prediction": "a"}}]}
    assert output_shares(old, [1])["altered"] is None  # records from before the fields: the page is unchanged

    def row(steps, ended):
        return {"beam1": {"prediction": "a", "constraint_steps": steps, "ended_by_constraint": ended}}

    rows = {"softmax": [row(0, False), row(0, True)], "sparse": [row(2, True), row(1, False), row(0, False), row(0, False)]}
    shares = output_shares(rows, [1])
    assert shares["altered"] == {"softmax": [0.0], "sparse": [0.5]}  # 0 of 2, 2 of 4
    assert shares["ended"] == {"softmax": [0.5], "sparse": [0.25]}  # 1 of 2, 1 of 4
    assert shares["blocked"] is None  # rows without the count made alike in both arms
    for arm, blocked in (("softmax", (1, 0)), ("sparse", (1, 1, 0, 0))):
        for r, n in zip(rows[arm], blocked):
            r["beam1"]["blocked_steps"] = n
    assert output_shares(rows, [1])["blocked"] == {"softmax": [0.5], "sparse": [0.5]}  # counted alike in both arms


def test_init_runs_of_every_seed_form_one_setting_though_each_starts_from_its_own_seeds_run():
    """Each seed's +init pair starts from that seed's softmax run (a different init_from path per seed)."""
    from softmax_zoo.reports import _seq2seq

    def rec(loss, seed, init):
        return RunRecord.of({"seed": seed, "choices": {"loss": loss},
                             "config": {"scale": {"name": "cpu"}, "init_from": f"checkpoints/table5/softmax_seed{seed}" if init else None}})

    records = [rec(loss, seed, init) for loss in ("softmax", "sparse_softmax") for seed in (0, 1) for init in (False, True)]
    pairs, lone = _seq2seq.paired_runs(records)
    assert list(pairs) == ["cpu+init", "cpu"]  # the setting with a trained LM head heads the page
    assert [(a.seed, b.seed) for a, b in pairs["cpu+init"]] == [(0, 0), (1, 1)]
    assert all(a.setting("init_from") == b.setting("init_from") for a, b in pairs["cpu+init"]) and lone == {}


OLD_COUNTS = {"constraint_steps": 0, "ended_by_constraint": False}  # records made before the count alike in both arms


@pytest.mark.parametrize("own_blocked", [False, True])
def test_a_recount_rerun_counts_the_constraints_alike_where_the_pages_records_do_not(tmp_path, own_blocked):
    own = {arm: OLD_COUNTS | ({"blocked_steps": 1} if own_blocked else {}) for arm in (SOFTMAX, SPARSE)}
    table5_records(records.runs_dir(tmp_path), {0: -2.0, 1: -2.5, 2: -1.8}, constraints=own)
    again = tmp_path / table5.RECOUNT
    table5_records(records.runs_dir(again), {0: 3.0},
                   constraints={SOFTMAX: OLD_COUNTS | {"blocked_steps": 1}, SPARSE: OLD_COUNTS | {"blocked_steps": 0}})
    (section,) = table5_page(tmp_path)["sections"]
    if own_blocked:  # the page's own records count alike: the re-run adds nothing
        assert section["recount"] is None and section["outputs"]["blocked"] == {SOFTMAX: [1.0, 1.0], SPARSE: [1.0, 1.0]}
        return
    r = section["recount"]
    assert section["outputs"]["blocked"] is None and r["seeds"] == [0] and r["metric"] == "rouge1"
    assert r["outputs"]["blocked"] == {SOFTMAX: [1.0, 1.0], SPARSE: [0.0, 0.0]}
    assert r["folder"].endswith("diagnostics/table5_constraints/runs/table5")
    soft, sparse = r["scores"][SOFTMAX], r["scores"][SPARSE]
    assert sparse[0] - soft[0] == pytest.approx(3.0, abs=0.5)  # the re-run's own shift, not the page's
    own_soft, own_sparse = r["own_scores"][SOFTMAX], r["own_scores"][SPARSE]
    assert own_sparse[0] - own_soft[0] == pytest.approx(-2.0, abs=0.5)  # the page's seed 0
    assert r["folder"] in (tmp_path / "table5.md").read_text()  # the page names where the re-run is


def test_no_recount_folder_leaves_the_section_as_it_was(tmp_path):
    table5_records(records.runs_dir(tmp_path), {0: -2.0}, constraints={SOFTMAX: OLD_COUNTS, SPARSE: OLD_COUNTS})
    (section,) = table5_page(tmp_path)["sections"]
    assert section["recount"] is None and section["outputs"]["altered"] == {SOFTMAX: [0.0, 0.0], SPARSE: [0.0, 0.0]}


def test_make_writes_the_recount_where_the_page_reads_it():
    from pathlib import Path

    make = (Path(__file__).parents[2] / "make" / "seq2seq.mk").read_text()
    assert f"TABLE5_RECOUNT := results/{table5.RECOUNT}\n" in make
