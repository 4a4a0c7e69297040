"""Distillation as a pipeline option (softmax_zoo.models.distill): KD forms, teacher cache, zero gradient at identical logits."""

from __future__ import annotations

import shutil

import pytest
import torch

from softmax_zoo import config, engine
from softmax_zoo.data.prepare.generated import classification_task, lm_corpus
from softmax_zoo.losses.methods.distill import kd_loss
from softmax_zoo.models.distill import bucket_scores, output_head


@pytest.mark.parametrize("temperature", [1.0, 2.5])
def test_kd_forms_equal_in_float64(gen, temperature):
    zs = (torch.randn(16, 9, generator=gen, dtype=torch.float64) * 3).requires_grad_()
    zt = torch.randn(16, 9, generator=gen, dtype=torch.float64) * 3
    stable = kd_loss(zs, zt, temperature=temperature, form="stable")
    (g_stable,) = torch.autograd.grad(stable, zs)
    standard = kd_loss(zs, zt, temperature=temperature, form="standard")
    (g_standard,) = torch.autograd.grad(standard, zs)
    torch.testing.assert_close(stable, standard, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(g_stable, g_standard, rtol=1e-10, atol=1e-14)


def test_bad_kl_form_is_named():
    with pytest.raises(ValueError, match="'exact'"):
        kd_loss(torch.zeros(2, 3), torch.zeros(2, 3), temperature=1.0, form="exact")


def test_buckets_keep_the_probabilities_exactly(gen):
    z = torch.randn(5, 12, generator=gen, dtype=torch.float64)
    ids = z.topk(4, dim=1).indices
    for t in (1.0, 3.0):
        p = torch.softmax(z / t, dim=1)
        b = torch.softmax(bucket_scores(z, ids, t) / t, dim=1)  # (5, 5)
        torch.testing.assert_close(b[:, :4], p.gather(1, ids))
        torch.testing.assert_close(b[:, 4], 1 - p.gather(1, ids).sum(1))


def compose(corpus, tmp_path, *overrides: str):
    return config.compose([
        "task=lm1b", "scale=smoke", f"task.data_dir={corpus}", f"results_dir={tmp_path}", "train.max_steps=3",
        "model.dropout=0.0", *overrides,
    ])


@pytest.fixture(scope="module")
def teacher(tmp_path_factory):
    """A finished LM run with a checkpoint (its folder, the corpus, the scratch root)."""
    root = tmp_path_factory.mktemp("distill")
    corpus = lm_corpus(root, "genlm")
    engine.run(compose(corpus, root, f"output_dir={root}/teacher", "train.save_steps=3"))
    return root / "teacher", corpus, root


def student(teacher, tmp_path, *overrides):
    ckpt, corpus, _ = teacher
    return compose(corpus, tmp_path, f"output_dir={tmp_path}/student", "distill=stable", f"distill.teacher={ckpt}",
                   f"distill.cache_dir={tmp_path}/cache", "distill.topk=8", *overrides)


def test_teacher_scores_are_cached_and_invalidated_by_new_data(teacher, tmp_path):
    ckpt, corpus, root = teacher
    first = engine.build_task(student(teacher, tmp_path)).info["distill"]
    second = engine.build_task(student(teacher, tmp_path)).info["distill"]
    assert not first["cache"]["hit"] and second["cache"]["hit"]
    assert second["cache"]["path"] == first["cache"]["path"]
    assert first["teacher_run"].startswith("lm1b_lstm_lm_softmax_smoke")
    changed = tmp_path / "changed"
    shutil.copytree(corpus, changed)
    lines = (changed / "train.txt").read_text().splitlines()
    (changed / "train.txt").write_text("\n".join([lines[1], lines[0], *lines[2:]]) + "\n")  # same words, other order
    third = engine.build_task(student(teacher, tmp_path, f"task.data_dir={changed}")).info["distill"]
    assert not third["cache"]["hit"] and third["cache"]["path"] != first["cache"]["path"]


def own_scores_as_teacher(task, batch):
    """The batch with ``teacher_logits`` replaced by the student's own training-mode logits: identical logits."""
    model = task.model
    model.train()
    model.reset_state()
    # With autograd on, as in training: the LSTM's inference kernel (no_grad) rounds differently.
    hidden = model(input_ids=batch["input_ids"], reset=batch["reset"])["hidden"]  # (B, T, d)
    own = output_head(model).logits(hidden).detach()  # (B, T, V)
    model.reset_state()
    return {**batch, "teacher_logits": own}


@pytest.mark.parametrize("kl", ["stable", "standard"])
def test_identical_logits_inside_the_pipeline(teacher, tmp_path, kl):
    """Through the task's collator, the model's hooks and its head, α = 1: the stable KL is exactly 0 with a zero gradient."""
    ckpt, _, _ = teacher
    cfg = student(teacher, tmp_path, f"distill.kl={kl}", "distill.alpha=1.0", "distill.topk=null")
    task = engine.build_task(cfg)
    engine.initialise_from(task.model, str(ckpt))
    batch = task.collator([row for row, _ in zip(task.train_dataset, range(cfg.train.batch_size))])
    assert batch["teacher_logits"].shape == (*batch["labels"].shape, 62)
    batch = own_scores_as_teacher(task, batch)
    loss = task.model(**batch)["loss"]
    params = [p for p in task.model.parameters() if p.requires_grad]
    grads = torch.autograd.grad(loss, params, allow_unused=True)
    norm = sum(float(g.abs().sum()) for g in grads if g is not None)
    if kl == "stable":
        assert loss.item() == 0.0 and norm == 0.0
    else:
        assert abs(loss.item()) < 1e-6  # the same objective; its gradient is rounding noise


def test_a_distilled_run_names_its_teacher(teacher, tmp_path):
    ckpt, _, _ = teacher
    record = engine.run(student(teacher, tmp_path, "distill.kl=standard", "distill.alpha=0.5"))
    info = record["task_info"]["distill"]
    assert info["teacher_run"].startswith("lm1b_lstm_lm_softmax_smoke") and info["kl"] == "standard"
    assert info["checkpoint"].endswith("checkpoint-3/model.safetensors")
    assert record["metrics"]["val/perplexity"] > 1


def test_classification_distils_from_a_finished_run(tmp_path):
    from tests.classification.conftest import compose as compose_cls

    data = tmp_path / "data"
    classification_task(data, "clinc_oos")
    engine.run(compose_cls(data, tmp_path, "clinc_oos", "train.save_steps=2", f"output_dir={tmp_path}/teacher"))
    overrides = ["distill=stable", f"distill.teacher={tmp_path}/teacher", f"distill.cache_dir={tmp_path}/cache", "loss=stable_softmax"]
    record = engine.run(compose_cls(data, tmp_path, "clinc_oos", *overrides, f"output_dir={tmp_path}/student"))
    info = record["task_info"]["distill"]
    assert info["teacher_run"].startswith("clinc_oos_tiny_bert_softmax_smoke") and not info["cache"]["hit"]
    cache = torch.load(info["cache"]["path"], weights_only=True)
    assert cache["teacher_logits"].shape == (96, 24)  # every training example, every class
    again = engine.build_task(compose_cls(data, tmp_path, "clinc_oos", *overrides)).info["distill"]
    assert again["cache"]["hit"]
