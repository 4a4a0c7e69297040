"""The generic sweep report (its primary metric and its diagnostics), the reports command line without a page,
and `make data` with nothing to prepare."""

from __future__ import annotations

import json

import pytest
from omegaconf import OmegaConf

from softmax_zoo.config import CONFIG_DIR
from softmax_zoo.data.prepare.cli import main as prepare_main
from softmax_zoo.reports import __main__ as cli
from softmax_zoo.reports._sweep import (
    DIAGNOSTIC,
    build_sweep,
    by_task,
    computes_nothing,
    primary_metric,
    section,
    sweep_table,
    swept_keys,
)
from softmax_zoo.run_record import load_runs, typed


def fake_record(folder, loss: str, k: int | None, seed: int, f1: float) -> dict:
    overrides = [f"loss={loss}", *([f"loss.k={k}"] if k is not None else []), f"seed={seed}", "scale=smoke"]
    record = {"run_name": f"{loss}_{k}_{seed}", "metrics": {"test/micro_f1": f1, "val/micro_f1": "inf"},
              "job": {"overrides": overrides}, "git": {"commit": "abc1234", "dirty": False}}
    (folder / f"{record['run_name']}.json").write_text(json.dumps(record))
    return record


@pytest.fixture
def sweep_folder(tmp_path):
    folder = tmp_path / "runs" / "ksweep"
    folder.mkdir(parents=True)
    for seed, f1 in enumerate([0.5, 0.7]):
        fake_record(folder, "softmax", None, seed, f1)
    for k in (5, 20):
        for seed in range(3):
            fake_record(folder, "sparse_softmax", k, seed, 0.6 + 0.01 * k + 0.01 * seed)
    return folder


def test_sweep_table_pools_seeds_per_swept_value(sweep_folder):
    records = load_runs(sweep_folder)
    assert swept_keys(records) == ["loss", "loss.k"]
    header, rows = sweep_table(records)
    assert header == ["loss", "loss.k", "n", "test/micro_f1", "val/micro_f1"]
    assert rows[0][:4] == ["softmax", "—", 2, "0.6 ± 1.3"]  # mean 0.6, t(0.975, 1) * 0.1414 / sqrt(2) = 1.27
    assert rows[1][:4] == ["sparse_softmax", "5", 3, "0.66 ± 0.025"] and rows[2][1] == "20"
    assert rows[1][4] == "3 non-finite"


def test_sweep_command_writes_a_page_and_a_plot(sweep_folder, tmp_path, capsys):
    assert cli.main(["sweep", str(sweep_folder), f"out={tmp_path / 'out'}"]) == 0
    assert "| sparse_softmax | 20 | 3 |" in capsys.readouterr().out
    page = (tmp_path / "out" / f"sweep_{str(sweep_folder).strip('/').replace('/', '_')}.md").read_text()
    assert "| loss | loss.k | n | test/micro_f1 | val/micro_f1 |" in page and page.count("\n| ") == 4
    assert len(list((tmp_path / "out").glob("*.png"))) == 1
    assert cli.main(["sweep", str(tmp_path / "nothing_here")]) == 2


def test_sweep_by_experiment_name(sweep_folder, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "scratch").mkdir()
    sweep_folder.parent.rename(tmp_path / "scratch" / "runs")  # scratch/runs/ksweep, as an ad-hoc sweep writes it
    text = build_sweep("ksweep", metric="test/micro_f1")
    assert "| softmax | — | 2 |" in text and (tmp_path / "scratch" / "sweeps" / "sweep_ksweep.md").is_file()
    with pytest.raises(ValueError, match="metric='nope'"):
        build_sweep("ksweep", metric="nope")


def test_reports_without_a_page_list_them(capsys):
    assert cli.main([]) == 0
    assert "fig2" in capsys.readouterr().out
    assert cli.main(["fig2", "colour=blue"]) == 2


def test_prepare_all_with_no_release_folder_fails_naming_them(tmp_path, caplog):
    assert prepare_main(["all", f"raw_root={tmp_path}", f"out_dir={tmp_path / 'out'}"]) == 1
    assert "nothing prepared" in caplog.text and f"clinc_oos: {tmp_path}" in caplog.text


def classification_records(folder, task: dict) -> None:
    """A k sweep whose records carry, as a classification run's do, the top-k diagnostics beside the scores."""
    folder.mkdir(parents=True)
    for k in (5, 20):
        for seed in range(2):
            metrics = {"test/micro_f1": 0.8 + 0.001 * k, "test/loss": 0.5, "test/diagnostic_targets": 5500.0,
                       "test/diagnostics_k": float(k), "test/target_in_topk": 0.9, "val/micro_f1": 0.9}
            record = {"run_name": f"k{k}_s{seed}", "metrics": metrics, "config": {"task": task},
                      "job": {"overrides": [f"loss.k={k}", f"seed={seed}"]}}
            (folder / f"k{k}_s{seed}.json").write_text(json.dumps(record))


def table_header(text: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith("| loss.k |"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_sweep_defaults_to_the_primary_metric_and_leaves_diagnostics_out(tmp_path):
    folder = tmp_path / "runs" / "ksweep"
    classification_records(folder, {"name": "mine", "primary_metric": "test/loss", "metric_higher_is_better": False})
    text = build_sweep(str(folder), out=tmp_path / "out")
    assert table_header(text) == ["loss.k", "n", "test/loss", "test/micro_f1", "val/micro_f1"]
    first = section(load_runs(folder))
    assert (first["metric"], first["primary"], first["higher"], first["left_out"]) == ("test/loss", True, False, 3)
    assert "![test/loss]" in text
    everything = build_sweep(str(folder), out=tmp_path / "out", diagnostics=True)
    assert table_header(everything)[2:] == ["test/loss", "test/diagnostic_targets", "test/diagnostics_k", "test/micro_f1",
                                            "test/target_in_topk", "val/micro_f1"]
    chosen = build_sweep(str(folder), out=tmp_path / "out", metric="test/target_in_topk")  # asked for: tabulated first
    assert table_header(chosen)[2:4] == ["test/target_in_topk", "test/loss"]


def test_records_without_a_declared_metric_use_their_task_config(tmp_path):
    """Records written before the task configs declared it: configs/task/<task>.yaml says."""
    folder = tmp_path / "runs" / "ksweep"
    classification_records(folder, {"name": "clinc_oos"})
    records = load_runs(folder)
    assert primary_metric(records) == ("test/micro_f1", True)
    assert table_header(build_sweep(str(folder), out=tmp_path / "out"))[2] == "test/micro_f1"


def test_the_primary_metric_falls_back_to_validation(tmp_path):
    records = typed([{"metrics": {"val/perplexity": 100.0, "val/tokens": 10.0}, "config": {"task": {"name": "ptb"}}}])
    assert primary_metric(records) == ("val/perplexity", False)
    assert primary_metric(records + typed([{"metrics": {"val/perplexity": 1.0}, "config": {"task": {"name": "clinc_oos"}}}])) is None


def test_sweep_command_takes_diagnostics(sweep_folder, tmp_path, capsys):
    assert cli.main(["sweep", str(sweep_folder), f"out={tmp_path}", "diagnostics=true"]) == 0
    assert cli.main(["sweep", str(sweep_folder), "diagnostics=maybe"]) == 2


def test_every_task_declares_a_primary_metric_that_is_not_a_diagnostic():
    for path in sorted((CONFIG_DIR / "task").glob("*.yaml")):
        task = OmegaConf.load(path)
        assert str(task.get("primary_metric", "")).startswith("test/"), path.name
        assert not DIAGNOSTIC.search(task.primary_metric), path.name
        assert isinstance(task.get("metric_higher_is_better"), bool), path.name


def test_sweep_of_an_experiment_takes_results_dir(sweep_folder, tmp_path, capsys):
    results_dir = sweep_folder.parents[1]  # <tmp>/runs/ksweep
    assert cli.main(["sweep", "ksweep", f"results_dir={results_dir}", f"out={tmp_path / 'out'}"]) == 0
    assert "| sparse_softmax | 20 | 3 |" in capsys.readouterr().out
    assert cli.main(["sweep", "ksweep", f"results_dir={tmp_path / 'elsewhere'}"]) == 2
    assert f"{tmp_path / 'elsewhere' / 'runs' / 'ksweep'}" in capsys.readouterr().err


def multirun_job(multirun, num: int, cwd, results_dir: str) -> None:
    """A Hydra job folder as `python -m softmax_zoo.train -m ...` leaves it: its config and Hydra's."""
    hydra = multirun / str(num) / ".hydra"
    hydra.mkdir(parents=True)
    (hydra / "config.yaml").write_text(f"reproduction: false\nresults_dir: {results_dir}\nscale:\n  name: smoke\n")
    (hydra / "hydra.yaml").write_text(f"hydra:\n  runtime:\n    cwd: {cwd}\n")


def test_a_multirun_folder_finds_its_records_where_its_jobs_wrote_them(tmp_path, monkeypatch):
    launch, multirun = tmp_path / "launch", tmp_path / "launch" / "multirun" / "2026-01-01" / "12-00-00"
    multirun_job(multirun, 0, launch, "elsewhere")  # results_dir=elsewhere, relative to where it was launched
    multirun_job(multirun, 1, launch, "${zoo.results_dir:${reproduction},${scale.name}}")  # the default: scratch
    for folder, k in ((launch / "elsewhere" / "runs" / "default", 5), (launch / "scratch" / "runs" / "default", 20)):
        folder.mkdir(parents=True)
        fake_record(folder, "sparse_softmax", k, 0, 0.5)
    for path in launch.rglob("*.json"):
        record = json.loads(path.read_text())
        path.write_text(json.dumps({**record, "job": {**record["job"], "sweep_dir": str(multirun)}}))
    fake_record(launch / "scratch" / "runs" / "default", "softmax", None, 0, 0.9)  # another launch's record
    monkeypatch.chdir(tmp_path)  # not where it was launched
    text = build_sweep(str(multirun.relative_to(tmp_path)), out=tmp_path / "out")
    assert table_header(text) == ["loss.k", "n", "test/micro_f1", "val/micro_f1"]  # loss (softmax: another launch's) not swept
    assert "| 5 | 1 |" in text and "| 20 | 1 |" in text and "softmax |" not in text


def task_record(folder, task: str, k: int, seed: int, metrics: dict, extra: tuple[str, ...] = ()) -> None:
    record = {"run_name": f"{task}_k{k}_s{seed}", "metrics": metrics, "config": {"task": {"name": task}},
              "job": {"overrides": [f"task={task}", f"loss.k={k}", f"seed={seed}", *extra]}}
    (folder / f"{record['run_name']}.json").write_text(json.dumps(record))


def test_records_of_several_tasks_get_a_table_each_with_its_primary_metric(tmp_path):
    folder = tmp_path / "runs" / "mixed"
    folder.mkdir(parents=True)
    for k in (5, 20):
        task_record(folder, "clinc_oos", k, 0, {"test/micro_f1": 0.8, "test/bleu1_beam1": 1.0})
        task_record(folder, "gigaword", k, 0, {"test/rouge1_beam1": 30.0 + k, "test/bleu1_beam1": 20.0})
    declared = {t: OmegaConf.load(CONFIG_DIR / "task" / f"{t}.yaml").primary_metric for t in ("clinc_oos", "gigaword")}
    records = load_runs(folder)
    parts = {task: section(runs) for task, runs in by_task(records).items()}
    assert {task: (s["metric"], s["primary"], s["swept"]) for task, s in parts.items()} == {
        task: (metric, True, ["loss.k"]) for task, metric in declared.items()}  # not test/bleu1_beam1, the first by name
    text = build_sweep(str(folder), out=tmp_path / "out")
    assert text.count("| loss.k | n |") == 2
    for task, metric in declared.items():
        assert f"| loss.k | n | {metric} |" in text
        assert (tmp_path / "out" / f"sweep_{str(folder).strip('/').replace('/', '_')}_{task}.png").is_file()


def test_keys_that_change_nothing_computed_are_not_swept():
    records = [{"job": {"overrides": [f"loss.k={k}", f"logger={logger}", f"train.progress={progress}",
                                      f"results_dir=r{k}", f"train.max_steps={steps}", "seed=0"]}, "metrics": {}}
               for k, logger, progress, steps in ((5, "none", "bar", 10), (20, "wandb", "log", 20))]
    assert swept_keys(typed(records)) == ["loss.k", "train.max_steps"]  # a longer budget is another result
    assert computes_nothing("logger") and computes_nothing("logger.mode") and computes_nothing("task.data_dir")
    assert not computes_nothing("loss") and not computes_nothing("task") and not computes_nothing("loss.k")


@pytest.mark.parametrize("spelling", ["relative", "absolute"])
def test_a_multirun_launched_here_counts_each_record_once(tmp_path, monkeypatch, spelling):
    """Its jobs' records are reached through their .hydra/config.yaml (an absolute folder) and through scratch/ (a
    relative one): one record file, counted once."""
    multirun = tmp_path / "multirun" / "2026-01-01" / "12-00-00"
    folder = tmp_path / "scratch" / "runs" / "default"
    folder.mkdir(parents=True)
    for num, k in enumerate((5, 20)):
        multirun_job(multirun, num, tmp_path, "${zoo.results_dir:${reproduction},${scale.name}}")
        record = fake_record(folder, "sparse_softmax", k, 0, 0.5)
        path = folder / f"{record['run_name']}.json"
        path.write_text(json.dumps({**record, "job": {**record["job"], "sweep_dir": str(multirun)}}))
    monkeypatch.chdir(tmp_path)  # where it was launched
    target = str(multirun) if spelling == "absolute" else str(multirun.relative_to(tmp_path))
    text = build_sweep(target, out=tmp_path / "out")
    assert "| 5 | 1 |" in text and "| 20 | 1 |" in text
    assert "from 2 run records" in text
