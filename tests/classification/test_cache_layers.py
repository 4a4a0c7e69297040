"""model.cache_layers: the top N layers fine-tuned on cached token states of the frozen layers below."""

from __future__ import annotations

import copy

import pytest
import torch
from transformers import TrainerCallback

from softmax_zoo import engine
from softmax_zoo.data.classification import ClassificationCollator, TokenizedDataset
from softmax_zoo.data.prepare.generated import CLASSIFICATION_SIZES as SIZES
from softmax_zoo.losses import SoftmaxHead
from softmax_zoo.models.classifier import build_text_classifier, pool, token_states

from .conftest import compose
from .test_task import tiny_checkpoint  # noqa: F401 - the fixture


def test_cached_states_give_the_frozen_lower_model_forward(tiny_checkpoint):  # noqa: F811
    model = build_text_classifier(lambda d: SoftmaxHead(d, 5), 200, pretrained=str(tiny_checkpoint), pooling="mean",
                                  mlp_layers=1, cache_layers=1).eval()
    lower = model.state_encoder()
    full = copy.deepcopy(lower)
    full.encoder.layer.extend(copy.deepcopy(model.top.layer))  # the uncached encoder, lower layers frozen
    ids = [[3, 7, 9, 11, 4], [5, 6], [8, 2, 2, 9, 10, 12, 13]]  # lengths differ: padding must be masked alike
    batch = ClassificationCollator(0)([TokenizedDataset(ids, [0, 1, 2])[i] for i in range(3)])
    with torch.no_grad():
        expected = model.mlp(pool(full(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state,
                                  batch["attention_mask"], "mean"))
        states = token_states(lower, [batch])
        assert [s.shape[0] for s in states] == [5, 2, 7]
        cached = ClassificationCollator(0)([{"states": s, "labels": 0} for s in states])
        got = model.hidden(states=cached["states"], attention_mask=cached["attention_mask"])
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    trainable = {n.split(".")[0] for n, p in model.named_parameters() if p.requires_grad}
    assert trainable == {"head", "top", "mlp"} and not any(p.requires_grad for p in lower.parameters())


def test_cache_layers_trains_and_reuses_its_cache(data_root, tmp_path, tiny_checkpoint):  # noqa: F811
    overrides = (f"model.pretrained={tiny_checkpoint}", "model.cache_layers=1", f"task.feature_cache_dir={tmp_path}/features",
                 "train.max_steps=4", "train.lr=1e-2")
    cfg = compose(data_root, tmp_path, "clinc_oos", *overrides)
    top_before = copy.deepcopy(engine.build_task(cfg).model.top.state_dict())  # pretrained: the same in every build
    after = {}

    class KeepTop(TrainerCallback):
        def on_train_end(self, args, state, control, model=None, **kwargs):
            after.update({k: v.detach().clone() for k, v in model.top.state_dict().items()})

    record = engine.run(cfg, callbacks=[KeepTop()])
    assert record["task_info"]["feature_cache"]["hit"] is True  # written by the build above, read by the run
    assert 0.0 <= record["metrics"]["test/micro_f1"] <= 1.0 and record["timing"]["global_steps"] == 4
    assert len(list((tmp_path / "features").glob("clinc_oos_states1_*.pt"))) == 1
    task = engine.build_task(cfg)
    assert len(task.train_dataset) == SIZES["train"] and task.train_dataset[0]["states"].shape[-1] == 32
    changed = [k for k in top_before if not torch.equal(top_before[k], after[k])]
    assert any("attention" in k for k in changed) and any("output.dense" in k for k in changed)  # the top layer trained


@pytest.mark.parametrize("bad", ["model.cache_features=true", "model.freeze_layers=1"])
def test_cache_layers_with_another_freezing_is_refused(data_root, tmp_path, tiny_checkpoint, bad):  # noqa: F811
    with pytest.raises(ValueError, match="model.cache_layers=1 freezes the layers below the top 1 itself"):
        engine.build_task(compose(data_root, tmp_path, "clinc_oos", f"model.pretrained={tiny_checkpoint}", "model.cache_layers=1", bad))


def test_cache_layers_beyond_the_encoder_is_refused(data_root, tmp_path, tiny_checkpoint):  # noqa: F811
    with pytest.raises(ValueError, match=r"cache_layers \(the layers to train\) must be in \[1, 2\], got 3"):
        engine.build_task(compose(data_root, tmp_path, "clinc_oos", f"model.pretrained={tiny_checkpoint}", "model.cache_layers=3"))
