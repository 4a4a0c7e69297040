"""use_head on an output layer that is not a plain parameter: a peft LoRA adapter, and FSDP2 shards.

LoRA: the loss and its gradients are those of the adapted layer ``W + scaling · B A`` (B drawn
non-zero, so that the adapter changes the loss), computed by hand; LoRA dropout (a row-wise mask)
is refused in training. FSDP2: 2 gloo processes on CPU, the output layer
sharded (in the root group, and as its own unit that reshards after its forward); each rank's loss
and the averaged gradients equal one process's, computed with the model's own loss.
"""

from __future__ import annotations

import datetime
import os

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

from softmax_zoo.hf import use_head

from .conftest import batch, make_model

peft = pytest.importorskip("peft")

RANK, ALPHA = 4, 8.0  # LoRA rank and alpha: scaling = alpha / rank = 2
WORLD = 2


def lora_llama(dropout: float = 0.0):
    """The tiny Llama with a LoRA adapter on lm_head only, in float64, B drawn N(0, 1) (peft starts it at 0)."""
    config = peft.LoraConfig(r=RANK, lora_alpha=ALPHA, lora_dropout=dropout, target_modules=["lm_head"])
    model = peft.get_peft_model(make_model("llama"), config).double()
    torch.manual_seed(2)
    with torch.no_grad():
        model.base_model.model.lm_head.lora_B["default"].weight.normal_()
    return model


def causal_ce(logits, labels):
    """Mean cross-entropy of position t predicting label t + 1; logits (B, T, C), labels (B, T)."""
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1))


def lora_grads(model) -> dict[str, torch.Tensor]:
    return {n: p.grad.clone() for n, p in model.named_parameters() if "lora_" in n}


@pytest.mark.parametrize("loss, options", [("softmax", {"chunk_size": 5}), ("stable_softmax", {})])
def test_lora_delta_is_in_the_loss_and_its_gradient(loss, options):
    ids, labels = batch("llama")
    model = use_head(lora_llama(), loss, **options).train()
    got = model(input_ids=ids, labels=labels).loss
    got.backward()

    ref = lora_llama()
    layer = ref.base_model.model.lm_head
    a, b = layer.lora_A["default"].weight, layer.lora_B["default"].weight  # (r, d), (C, r)
    hidden = ref.base_model.model.model(input_ids=ids).last_hidden_state  # (B, T, d): after the final norm
    adapted = layer.base_layer.weight + (ALPHA / RANK) * b @ a  # (C, d)
    want = causal_ce(hidden @ adapted.T, labels)
    want.backward()
    without = causal_ce(hidden.detach() @ layer.base_layer.weight.T, labels)

    assert abs(want.item() - without.item()) > 1e-2  # the adapter matters to this loss
    torch.testing.assert_close(got, want)
    for name, grad in lora_grads(ref).items():
        torch.testing.assert_close(lora_grads(model)[name], grad, msg=name)


def test_lora_dropout_in_training_is_refused_and_allowed_in_eval():
    ids, labels = batch("llama")
    model = use_head(lora_llama(dropout=0.5), "softmax", chunk_size=5).train()
    with pytest.raises(ValueError, match="lora_dropout=0.5"):
        model(input_ids=ids, labels=labels)
    model.eval()  # dropout off: the model's own logits, the head's loss on them
    want = causal_ce(model(input_ids=ids).logits, labels)
    torch.testing.assert_close(model(input_ids=ids, labels=labels).loss, want)


def test_lora_variants_without_a_linear_form_are_refused():
    config = peft.LoraConfig(r=RANK, lora_alpha=ALPHA, target_modules=["lm_head"], use_dora=True)
    model = use_head(peft.get_peft_model(make_model("llama"), config), "softmax").train()
    with pytest.raises(ValueError, match="LoRA variant"):
        model(input_ids=batch("llama")[0], labels=batch("llama")[1])


# ---------------------------------------------------------------- FSDP2


def fsdp_rank(rank: int, out_dir: str) -> None:
    """One rank: the tiny Llama sharded by fully_shard, a chunked softmax head, batch(seed=10 + rank)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor import DTensor, Shard

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{out_dir}/store", rank=rank, world_size=WORLD,
                            timeout=datetime.timedelta(seconds=60))
    try:
        mesh = init_device_mesh("cpu", (WORLD,))
        results = {}
        for layout in ("root", "own unit"):
            model = make_model("llama")
            for block in model.model.layers:
                fully_shard(block, mesh=mesh)
            if layout == "own unit":
                fully_shard(model.lm_head, mesh=mesh)  # reshards after its forward: gathered again for backward
            fully_shard(model, mesh=mesh)
            weight = model.lm_head.weight
            assert isinstance(weight, DTensor) and weight.placements == (Shard(0),), weight
            use_head(model, "softmax", chunk_size=5).train()
            ids, labels = batch("llama", seed=10 + rank)
            loss = model(input_ids=ids, labels=labels).loss
            loss.backward()
            grads = {n: p.grad.full_tensor() for n, p in model.named_parameters()}
            results[layout] = {"loss": loss.detach(), "grads": grads,
                               "lm_head_local_rows": model.lm_head.weight.to_local().shape[0]}
        path = os.path.join(out_dir, f"rank{rank}.pt")
        torch.save(results, path + ".tmp")
        os.replace(path + ".tmp", path)
    finally:
        dist.destroy_process_group()


def test_fsdp2_sharded_output_layer_gives_one_process_loss_and_gradients(tmp_path):
    from .test_use_head_ddp import own_loss

    mp.spawn(fsdp_rank, args=(str(tmp_path),), nprocs=WORLD, join=True)
    ranks = [torch.load(tmp_path / f"rank{r}.pt") for r in range(WORLD)]

    ref = make_model("llama")
    losses = [own_loss(ref, *batch("llama", seed=10 + r)) for r in range(WORLD)]
    (sum(losses) / WORLD).backward()  # FSDP averages the ranks' gradients
    for layout in ("root", "own unit"):
        for r in range(WORLD):
            got = ranks[r][layout]
            assert got["lm_head_local_rows"] < ref.lm_head.weight.shape[0]  # each rank held a shard
            torch.testing.assert_close(got["loss"], losses[r].detach(), msg=f"{layout}, rank {r}")
            for n, p in ref.named_parameters():
                torch.testing.assert_close(got["grads"][n], p.grad, msg=f"{layout}, rank {r}: {n}")
