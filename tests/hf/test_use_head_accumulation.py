"""Gradient accumulation under the transformers Trainer equals one large batch, with uneven padding.

The Trainer passes ``num_items_in_batch`` (the labelled tokens of the whole accumulated batch) to
each micro-batch's forward, and use_head divides the summed loss by it, so the accumulated
gradient is that of the mean over all the batch's tokens: here 4 rows of very different lengths in
2 micro-batches of 2, against one forward of the 4 rows, in float64 (and the model's own loss of
those rows, which transformers computes in float32).
"""

from __future__ import annotations

import copy

import pytest
import torch
from transformers import Trainer, TrainerCallback, TrainingArguments

from softmax_zoo.hf import use_head

from .conftest import VOCAB, make_model
from .test_use_head import assert_same_grads, grads

LENGTHS = [12, 3, 9, 2]  # labelled tokens per row (then padding): micro-batches of 14 and 11 labels


def rows():
    gen = torch.Generator().manual_seed(5)
    ids = torch.randint(1, VOCAB, (len(LENGTHS), 12), generator=gen)
    mask = torch.arange(12)[None, :] < torch.tensor(LENGTHS)[:, None]
    ids = ids.masked_fill(~mask, 0)
    labels = ids.masked_fill(~mask, -100)
    return ids, mask.long(), labels


class GradsBeforeStep(TrainerCallback):
    """Keeps every parameter's gradient as the optimizer is about to step (the accumulated one)."""

    def __init__(self):
        self.grads = None

    def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
        self.grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("variant, options", [("softmax", {"chunk_size": 5}), ("stable_softmax", {})])
def test_accumulated_steps_equal_one_large_batch(variant, options, tmp_path):
    ids, mask, labels = rows()
    ref = make_model("llama")
    model = use_head(copy.deepcopy(ref), variant, **options).train()
    whole = model(input_ids=ids, attention_mask=mask, labels=labels).loss
    expected = grads(model, whole)
    own = ref.train()(input_ids=ids, attention_mask=mask, labels=labels).loss  # transformers' loss, in float32
    torch.testing.assert_close(own.double(), whole, rtol=1e-6, atol=0)

    data = [{"input_ids": i, "attention_mask": m, "labels": t} for i, m, t in zip(ids, mask, labels)]
    callback = GradsBeforeStep()
    args = TrainingArguments(output_dir=str(tmp_path), per_device_train_batch_size=2, gradient_accumulation_steps=2,
                             max_steps=1, learning_rate=0.0, max_grad_norm=0.0, report_to=[], use_cpu=True,
                             save_strategy="no", logging_strategy="no", dataloader_num_workers=0, seed=0)
    trained = use_head(copy.deepcopy(ref), variant, **options)
    Trainer(model=trained, args=args, train_dataset=data, callbacks=[callback]).train()
    assert callback.grads is not None
    assert_same_grads(callback.grads, expected)
