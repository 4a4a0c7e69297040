"""build_task on generated data of each task's format, the feature cache, and bad input."""

from __future__ import annotations

import pytest
import torch

from softmax_zoo import config, engine
from softmax_zoo.data.prepare.generated import CLASSIFICATION_SIZES as SIZES
from softmax_zoo.data.prepare.generated import NUM_CLASSES, classification_tasks
from softmax_zoo.models.classifier import TextClassifier

from .conftest import compose

TASKS = classification_tasks()


@pytest.mark.parametrize("task", TASKS)
def test_build_task_on_each_format(data_root, tmp_path, task):
    t = engine.build_task(compose(data_root, tmp_path, task))
    assert isinstance(t.model, TextClassifier)
    assert len(t.train_dataset) == SIZES["train"]
    assert {s: len(d) for s, d in t.eval_datasets.items()} == {"validation": SIZES["validation"], "test": SIZES["test"]}
    assert t.info["num_classes"] == t.model.head.num_classes == NUM_CLASSES
    assert t.data_meta["outputs_sha256"]["train.jsonl"]  # the prepared files' checksums reach the record
    batch = t.collator([t.train_dataset[i] for i in range(4)])
    assert batch["input_ids"].shape[0] == 4 and batch["input_ids"].shape[1] <= t.info["max_length"]
    metrics = t.evaluate(t.model, "validation", t.eval_datasets["validation"]).metrics
    extra = {"val/in_scope_accuracy", "val/oos_recall"} if task == "clinc_oos" else set()
    diagnostics = {f"val/{n}" for n in ("target_in_topk", "median_target_rank", "logits_near_kth", "diagnostics_k", "diagnostic_targets")}
    assert set(metrics) == {"val/micro_f1", "val/macro_f1", "val/loss"} | extra | diagnostics
    assert metrics["val/diagnostic_targets"] == SIZES["validation"] and metrics["val/diagnostics_k"] == min(20, NUM_CLASSES)
    assert 1 <= metrics["val/median_target_rank"] <= NUM_CLASSES
    assert 0.0 <= metrics["val/micro_f1"] <= 1.0 and metrics["val/loss"] > 0


def test_train_subset_is_stratified_and_fixed_across_training_seeds(data_root, tmp_path):
    a = engine.build_task(compose(data_root, tmp_path, "clinc_oos", "task.train_subset=0.5", "seed=0"))
    b = engine.build_task(compose(data_root, tmp_path, "clinc_oos", "task.train_subset=0.5", "seed=1"))
    assert len(a.train_dataset) == SIZES["train"] // 2
    assert a.train_dataset.input_ids == b.train_dataset.input_ids  # subset_seed, not seed, draws it
    assert a.info["train_classes_seen"] == NUM_CLASSES


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    """A saved 2-layer BertModel: a 'pretrained' encoder to cache features of (vocab covers the char ids)."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("tinybert")
    cfg = BertConfig(vocab_size=200, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=64)
    BertModel(cfg).save_pretrained(path)
    return path


def test_feature_cache_is_written_once_and_reused(data_root, tmp_path, tiny_checkpoint):
    overrides = (f"model.pretrained={tiny_checkpoint}", "model.cache_features=true",
                 f"task.feature_cache_dir={tmp_path}/features")
    first = engine.build_task(compose(data_root, tmp_path, "clinc_oos", *overrides))
    second = engine.build_task(compose(data_root, tmp_path, "clinc_oos", *overrides, "seed=5"))
    assert first.info["feature_cache"]["hit"] is False and second.info["feature_cache"]["hit"] is True
    assert first.model.encoder is None  # only the layers on top are trained
    torch.testing.assert_close(first.train_dataset.features, second.train_dataset.features)
    assert first.train_dataset.features.shape == (SIZES["train"], 32)
    assert len(list((tmp_path / "features").glob("clinc_oos_*.pt"))) == 1
    metrics = first.evaluate(first.model, "test", first.eval_datasets["test"]).metrics
    assert 0.0 <= metrics["test/micro_f1"] <= 1.0


def test_cache_features_of_a_model_from_scratch_is_refused(data_root, tmp_path):
    with pytest.raises(ValueError, match="cache_features=true needs a pretrained encoder"):
        engine.build_task(compose(data_root, tmp_path, "wos", "model.cache_features=true"))


def test_k_larger_than_the_classes_fails_before_anything_is_built(data_root, tmp_path):
    cfg = compose(data_root, tmp_path, "clinc_oos", "loss=sparse_softmax", f"loss.k={NUM_CLASSES + 1}")
    with pytest.raises(ValueError, match=f"k must be <= the number of classes {NUM_CLASSES}, got {NUM_CLASSES + 1}"):
        engine.run(cfg)
    assert not (tmp_path / "runs").exists()  # no record


def test_missing_data_names_the_command(tmp_path):
    cfg = config.compose(["task=iflytek", "model=tiny_bert", f"task.data_dir={tmp_path}/nope", f"results_dir={tmp_path}"])
    with pytest.raises(FileNotFoundError, match="make data TASK=iflytek"):
        engine.build_task(cfg)


def test_a_model_that_is_not_a_text_encoder_is_refused(data_root, tmp_path):
    lacks = r"does not fit the classification family: its config lacks \['tokenizer', 'pretrained', 'pooling'\]"
    with pytest.raises(ValueError, match=lacks):
        engine.build_task(compose(data_root, tmp_path, "wos", "model=mlp"))


def test_cache_features_with_freeze_layers_is_ambiguous(data_root, tmp_path, tiny_checkpoint):
    with pytest.raises(ValueError, match="leave model.freeze_layers null, got 1"):
        engine.build_task(compose(data_root, tmp_path, "wos", f"model.pretrained={tiny_checkpoint}",
                                  "model.cache_features=true", "model.freeze_layers=1"))


@pytest.mark.parametrize("task", TASKS)
def test_configs_of_each_task_compose(task):
    """Every scale of the task, its Fig. 2 experiments, and the paper scale's BERT models."""
    for scale in ("smoke", "cpu", "paper"):
        cfg = config.compose([f"task={task}", f"scale={scale}"])
        assert cfg.task.builder == "softmax_zoo.tasks.classification.build_task"
        assert cfg.model.name == ("char_transformer" if task == "iflytek" else "minilm")  # the task's default
    sparse = config.compose(["experiment=fig2", f"task={task}", "loss.k=50", "seed=2"])
    softmax = config.compose(["experiment=fig2_softmax", f"task={task}", "model=bert" if task != "iflytek" else "model=bert_chinese"])
    assert sparse.experiment_name == softmax.experiment_name == f"fig2_{task}"
    assert sparse.run_name == f"{task}_cpu_sparse_k50_seed2" and softmax.run_name == f"{task}_cpu_softmax_seed0"
    assert softmax.model.tokenizer == softmax.model.pretrained  # a BERT checkpoint brings its own tokenizer
