"""Benchmark rows for ``softmax_zoo.hf.use_head``: a causal LM's training step, own loss vs a chunked head.

One forward + backward of a one-layer Llama (d = 512) at tokens × vocabulary = 8,192 × 32,000
and 4,096 × 128,000: the model's own loss (transformers' ``ForCausalLMLoss`` on the full
logits) beside ``use_head(model, "softmax", chunk_size="auto")``, which never holds them.
Targets: peak memory ≤ 0.5× and time ≤ 1.1× the model's own loss. The parameter gradients
(embedding and output layer included) are freed before each step, as in training.

With CUDA, the model runs there in bfloat16 autocast, and rows for Liger-Kernel
(``apply_liger_kernel_to_llama(fused_linear_cross_entropy=True, model=...)``) and
cut-cross-entropy (``cce_patch``) are added when those packages are installed; otherwise
they are left out.
"""

from __future__ import annotations

import contextlib
import importlib.util

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from bench_cases import Case
from softmax_zoo.hf import use_head

SEQUENCE = 512
HIDDEN = 512
OWN = "model's own loss"


def device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def model_and_batch(tokens: int, vocab: int, d: int):
    """A one-layer Llama and a (tokens / SEQUENCE, SEQUENCE) batch of ids with labels = ids."""
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=d, intermediate_size=2 * d, num_hidden_layers=1,
                      num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=SEQUENCE)
    model = LlamaForCausalLM(cfg).to(device()).train()
    seq = min(SEQUENCE, tokens)
    ids = torch.randint(0, vocab, (tokens // seq, seq), device=device())
    return model, ids


def liger(model):
    from liger_kernel.transformers import apply_liger_kernel_to_llama

    apply_liger_kernel_to_llama(rope=False, rms_norm=False, swiglu=False, cross_entropy=False,
                                fused_linear_cross_entropy=True, model=model)
    return model


def cce(model):
    from cut_cross_entropy.transformers import cce_patch

    return cce_patch(model)


PATCHES = {
    OWN: lambda model: model,
    'use_head(softmax, chunk_size="auto")': lambda model: use_head(model, "softmax", chunk_size="auto"),
}
GPU_PATCHES = {"Liger-Kernel fused linear CE": ("liger_kernel", liger), "cut-cross-entropy": ("cut_cross_entropy", cce)}


def lm_case(group: str, name: str, patch, tokens: int, vocab: int, d: int, **kw) -> Case:
    def setup():
        model, ids = model_and_batch(tokens, vocab, d)
        model = patch(model)
        autocast = torch.autocast("cuda", dtype=torch.bfloat16) if device() == "cuda" else contextlib.nullcontext()

        def step():
            model.zero_grad(set_to_none=True)
            with autocast:
                loss = model(input_ids=ids, labels=ids).loss
            loss.backward()

        return step

    return Case(group=group, name=name, setup=setup, baseline=OWN, repeats=3, **kw)


def cases(quick: bool) -> list[Case]:
    sizes = [(512, 4000, 64)] if quick else [(8192, 32000, HIDDEN), (4096, 128000, HIDDEN)]
    patches = dict(PATCHES)
    if device() == "cuda":
        patches.update({name: fn for name, (package, fn) in GPU_PATCHES.items() if importlib.util.find_spec(package)})
    out = []
    for tokens, vocab, d in sizes:
        group = f"HF causal LM training step, use_head (tokens={tokens}, vocabulary={vocab}, d={d}, 1 layer)"
        for name, patch in patches.items():
            targets = {} if name == OWN else {"target": ("<=", 1.1), "memory_target": 0.5}
            out.append(lm_case(group, name, patch, tokens, vocab, d, **targets))
    return out
