"""softmax_zoo.hf.use_head on tiny GPT-2, Llama, Qwen2 (causal) and BERT (masked) models.

The reference is the model's own loss: transformers' shift for causal LMs, every labelled
position for masked LMs, the mean over labels != -100. transformers casts causal logits to
float32 before its loss, so the float64 reference applies the same loss to the model's own
float64 logits (and is checked against the model's own loss at float32 precision).
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from omegaconf import OmegaConf
from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, BertConfig, BertForSequenceClassification

from softmax_zoo.hf import CONFIG_KEY, head_of, remove_head, use_head
from softmax_zoo.losses import QuadraticKernelSampler, SoftmaxSampler, UniformSampler, sparse_softmax_cross_entropy, stable_cross_entropy

from .conftest import VOCAB, batch, make_model

K = 5  # the sparse head's support


def shifted(name, logits, labels):
    """The positions the model's loss scores: (N, C) logits and (N,) targets."""
    if name != "bert":
        logits, labels = logits[:, :-1], labels[:, 1:]
    return logits.reshape(-1, logits.shape[-1]), labels.reshape(-1)


def own_logits_loss(model, name, ids, labels, loss_fn=F.cross_entropy, **kw):
    """The logit-level loss ``loss_fn`` on the model's own (float64) logits."""
    logits, target = shifted(name, model(input_ids=ids).logits, labels)
    return loss_fn(logits, target, ignore_index=-100, **kw)


def grads(model, loss):
    model.zero_grad(set_to_none=True)
    loss.backward()
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def assert_same_grads(a, b, atol=1e-10):
    assert a.keys() == b.keys()
    for n in a:
        torch.testing.assert_close(a[n], b[n], rtol=0, atol=atol, msg=n)


@pytest.mark.parametrize("chunk_size", [None, 5])
def test_softmax_head_equals_the_models_own_loss_and_gradients(arch, chunk_size):
    ref = make_model(arch)
    ids, labels = batch(arch)
    own = ref(input_ids=ids, labels=labels).loss
    expected = own_logits_loss(ref, arch, ids, labels)
    torch.testing.assert_close(own.double(), expected, rtol=1e-6, atol=0)  # the reference is the model's loss
    model = use_head(copy.deepcopy(ref), "softmax", chunk_size=chunk_size).train()
    out = model(input_ids=ids, labels=labels)
    assert out.logits is None  # training never builds them
    torch.testing.assert_close(out.loss, expected, rtol=0, atol=1e-12)
    assert_same_grads(grads(model, out.loss), grads(ref, expected))


@pytest.mark.parametrize("variant, loss_fn, kw", [
    ("sparse_softmax", sparse_softmax_cross_entropy, {"k": K}),
    ("stable_softmax", stable_cross_entropy, {}),
])
@pytest.mark.parametrize("chunk_size", [None, 7])
def test_sparse_and_stable_equal_the_logit_functions_on_the_models_logits(arch, variant, loss_fn, kw, chunk_size):
    ref = make_model(arch)
    ids, labels = batch(arch)
    expected = own_logits_loss(ref, arch, ids, labels, loss_fn, **kw)
    model = use_head(copy.deepcopy(ref), variant, chunk_size=chunk_size, **kw).train()
    loss = model(input_ids=ids, labels=labels).loss
    torch.testing.assert_close(loss, expected, rtol=0, atol=1e-12)
    assert_same_grads(grads(model, loss), grads(ref, expected))


def test_without_labels_logits_and_generate_are_unchanged(arch):
    model = make_model(arch).eval()
    ids, _ = batch(arch)
    before = model(input_ids=ids).logits
    generated = model.generate(ids[:, :4], max_new_tokens=6, do_sample=False) if arch != "bert" else None
    use_head(model, "sparse_softmax", k=K, chunk_size="auto")
    assert torch.equal(model(input_ids=ids).logits, before)
    if arch != "bert":
        assert torch.equal(model.generate(ids[:, :4], max_new_tokens=6, do_sample=False), generated)
    remove_head(model)
    assert "forward" not in vars(model) and "forward" not in vars(model.get_output_embeddings())
    assert torch.equal(model(input_ids=ids).logits, before)


def test_eval_mode_returns_logits_and_the_same_loss(arch):
    model = use_head(make_model(arch), "sparse_softmax", k=K, chunk_size=4)
    ids, labels = batch(arch)
    train_loss = model.train()(input_ids=ids, labels=labels).loss
    out = model.eval()(input_ids=ids, labels=labels)
    torch.testing.assert_close(out.loss, train_loss, rtol=0, atol=1e-12)
    assert out.logits.shape == (*ids.shape, VOCAB)


def test_remove_head_restores_the_models_own_loss():
    model = make_model("llama")
    ids, labels = batch("llama")
    own = model(input_ids=ids, labels=labels).loss
    use_head(model, "sparse_softmax", k=2)
    assert not torch.allclose(model(input_ids=ids, labels=labels).loss.float(), own)
    remove_head(model)
    assert torch.equal(model(input_ids=ids, labels=labels).loss, own)
    assert not hasattr(model.config, CONFIG_KEY)


def test_num_items_in_batch_and_shift_labels_as_transformers():
    model = use_head(make_model("llama"), "softmax", chunk_size=3).train()
    ref = remove_head(copy.deepcopy(model))
    ids, labels = batch("llama")
    n = torch.tensor(40)
    expected = ref(input_ids=ids, labels=labels, num_items_in_batch=n).loss
    torch.testing.assert_close(model(input_ids=ids, labels=labels, num_items_in_batch=n).loss.float(), expected)
    shift = torch.full_like(labels, -100)
    shift[:, :4] = labels[:, 5:9]  # arbitrary targets given directly
    expected = ref(input_ids=ids, labels=labels, shift_labels=shift).loss
    torch.testing.assert_close(model(input_ids=ids, labels=labels, shift_labels=shift).loss.float(), expected)


def test_a_loss_config_builds_the_same_head_as_the_variant_name():
    cfg = OmegaConf.load("configs/loss/sparse_softmax.yaml")  # bias/reduction there are overridden
    ids, labels = batch("qwen2")
    by_cfg = use_head(make_model("qwen2"), cfg, k=K)(input_ids=ids, labels=labels).loss
    by_name = use_head(make_model("qwen2"), "sparse_softmax", k=K)(input_ids=ids, labels=labels).loss
    assert torch.equal(by_cfg, by_name)


def test_sampled_softmax_trains_on_samples_and_evaluates_the_full_softmax():
    # With the exact softmax sampler the sampled loss equals the full cross-entropy for every
    # draw (Blanc & Rendle 2018); in eval mode the loss is the full softmax.
    ref = make_model("gpt2")
    ids, labels = batch("gpt2")
    expected = own_logits_loss(ref, "gpt2", ids, labels)
    model = use_head(copy.deepcopy(ref), "sampled_softmax", sampler=SoftmaxSampler(), num_samples=8)
    torch.testing.assert_close(model.train()(input_ids=ids, labels=labels).loss, expected, rtol=1e-9, atol=0)
    torch.testing.assert_close(model.eval()(input_ids=ids, labels=labels).loss, expected, rtol=0, atol=1e-12)


def test_save_pretrained_writes_a_plain_checkpoint_and_remembers_the_head(tmp_path):
    for arch, auto in (("llama", AutoModelForCausalLM), ("bert", AutoModelForMaskedLM)):
        model = use_head(make_model(arch), "sparse_softmax", k=K, chunk_size=8)
        model.save_pretrained(tmp_path / arch)
        plain = auto.from_pretrained(tmp_path / arch)  # transformers alone
        assert "forward" not in vars(plain)
        own, saved = model.state_dict(), plain.state_dict()
        assert own.keys() == saved.keys()
        assert all(torch.equal(own[k], saved[k]) for k in own)
        ids, labels = batch(arch)
        model.train(), plain.train()
        restored = use_head(plain)  # the head recorded in config.json
        assert head_of(restored).k == K and head_of(restored).chunk_size == 8
        assert torch.equal(restored(input_ids=ids, labels=labels).loss, model(input_ids=ids, labels=labels).loss)


def test_gradient_checkpointing_gives_the_same_loss_and_gradients():
    ids, labels = batch("llama")
    model = use_head(make_model("llama"), "stable_softmax", chunk_size=5).train()
    loss = model(input_ids=ids, labels=labels).loss
    expected = grads(model, loss)
    enable = getattr(model, "activation_checkpointing_enable", None) or model.gradient_checkpointing_enable
    enable()
    loss_ckpt = model(input_ids=ids, labels=labels).loss
    torch.testing.assert_close(loss_ckpt, loss, rtol=0, atol=1e-12)
    assert_same_grads(grads(model, loss_ckpt), expected)


def test_bf16_autocast_matches_the_models_own_loss():
    ref = make_model("llama", dtype=torch.float32)
    model = use_head(copy.deepcopy(ref), "softmax", chunk_size=5).train()
    ids, labels = batch("llama")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected = ref(input_ids=ids, labels=labels).loss
        loss = model(input_ids=ids, labels=labels).loss
    assert loss.dtype == torch.float32
    torch.testing.assert_close(loss, expected, rtol=2e-2, atol=0)
    g, g_ref = grads(model, loss), grads(ref, expected)
    for n in g_ref:
        torch.testing.assert_close(g[n], g_ref[n], rtol=0.1, atol=2e-2 * g_ref[n].abs().max().item(), msg=n)


def test_torch_compile_gives_the_eager_loss():
    torch._dynamo.reset()
    model = use_head(make_model("gpt2"), "sparse_softmax", k=K, chunk_size=8).train()
    ids, labels = batch("gpt2")
    eager = model(input_ids=ids, labels=labels).loss
    compiled = torch.compile(model, backend="aot_eager")
    torch.testing.assert_close(compiled(input_ids=ids, labels=labels).loss, eager, rtol=0, atol=1e-12)
    assert torch.equal(compiled(input_ids=ids).logits, model(input_ids=ids).logits)


@pytest.mark.parametrize("trainer_cls", ["transformers", "zoo"])
def test_trainer_steps_equal_the_models_own_loss(tmp_path, trainer_cls):
    from transformers import Trainer, TrainingArguments

    from softmax_zoo.trainer import ZooTrainer

    cls = Trainer if trainer_cls == "transformers" else ZooTrainer
    ids, labels = batch("llama", batch_size=4)
    rows = [{"input_ids": i, "labels": y} for i, y in zip(ids, labels)]

    def train(model):
        args = TrainingArguments(tmp_path / model.__class__.__name__, max_steps=2, per_device_train_batch_size=2,
                                 gradient_accumulation_steps=2, learning_rate=0.1, lr_scheduler_type="constant",
                                 optim="sgd", report_to=[], save_strategy="no", use_cpu=True, logging_steps=1)
        cls(model=model, args=args, train_dataset=rows).train()
        return {n: p.detach().clone() for n, p in model.named_parameters()}

    ref = make_model("llama", dtype=torch.float32)
    model = use_head(copy.deepcopy(ref), "softmax", chunk_size=3)
    trained, expected = train(model), train(ref)
    for n in expected:
        torch.testing.assert_close(trained[n], expected[n], rtol=1e-5, atol=1e-6, msg=n)
    assert any(not torch.equal(trained[n], p) for n, p in make_model("llama", torch.float32).named_parameters())


def test_refusals_say_why():
    with pytest.raises(ValueError, match="own projections"):
        use_head(make_model("llama"), "adaptive_softmax")
    with pytest.raises(ValueError, match="own projections"):
        use_head(make_model("llama"), OmegaConf.load("configs/loss/adaptive_softmax.yaml"))
    with pytest.raises(ValueError, match="unknown variant"):
        use_head(make_model("llama"), "softmaxx")
    with pytest.raises(ValueError, match="set by use_head"):
        use_head(make_model("llama"), "softmax", bias=True)
    with pytest.raises(ValueError, match="k must be"):
        use_head(make_model("llama"), "sparse_softmax", k=VOCAB + 1)
    classifier = BertForSequenceClassification(BertConfig(vocab_size=VOCAB, hidden_size=16, num_hidden_layers=1,
                                                          num_attention_heads=2, intermediate_size=32))
    with pytest.raises(ValueError, match="causal and masked"):
        use_head(classifier, "softmax")
    scaled = make_model("llama")
    scaled.config.logit_scale = 0.0
    with pytest.raises(ValueError, match=r"the model's logit_scale=0.0 is not a finite scale > 0"):
        use_head(scaled, "softmax")


SAMPLER_CONFIGS = sorted(Path("configs/loss/sampler").glob("*.yaml"))


def _class_of(config_file: Path) -> str:
    return OmegaConf.load(config_file)._target_.rpartition(".")[2]


def test_sampled_softmax_by_name_takes_its_configs_default_sampler_and_samples():
    cfg = OmegaConf.load("configs/loss/sampled_softmax.yaml")
    (default,) = [entry["sampler"] for entry in cfg.defaults if "sampler" in entry]
    head = head_of(use_head(make_model("gpt2"), "sampled_softmax"))
    assert type(head.sampler).__name__ == _class_of(Path(f"configs/loss/sampler/{default}.yaml")) == "UniformSampler"
    assert head.num_samples == cfg.num_samples


@pytest.mark.parametrize("config_file", SAMPLER_CONFIGS, ids=lambda p: p.stem)
def test_every_sampler_config_names_a_sampler(config_file):
    counts = torch.arange(VOCAB, 0, -1).double()
    model = use_head(make_model("gpt2"), "sampled_softmax", sampler=config_file.stem, num_samples=4, class_counts=counts)
    assert type(head_of(model).sampler).__name__ == _class_of(config_file)
    ids, labels = batch("gpt2")
    assert torch.isfinite(model.train()(input_ids=ids, labels=labels).loss)
    assert model.config.softmax_zoo_head["options"]["sampler"] == config_file.stem  # restored by use_head(model)


def test_a_loss_config_with_a_defaults_list_is_composed():
    cfg = OmegaConf.load("configs/loss/sampled_softmax.yaml")
    assert "defaults" in cfg
    assert isinstance(head_of(use_head(make_model("gpt2"), cfg)).sampler, UniformSampler)
    head = head_of(use_head(make_model("gpt2"), cfg, sampler="quadratic", num_samples=3))
    assert isinstance(head.sampler, QuadraticKernelSampler) and head.num_samples == 3


@pytest.mark.parametrize("variant, typo, close", [
    ("sparse_softmax", "kk", "k"),
    ("softmax", "chunksize", "chunk_size"),
    ("stable_softmax", "label_smothing", "label_smoothing"),
    ("sampled_softmax", "num_sample", "num_samples"),
])
def test_an_unknown_option_is_named_with_the_valid_ones_and_the_closest(variant, typo, close):
    with pytest.raises(ValueError) as error:
        use_head(make_model("llama"), variant, **{typo: 3})
    message = str(error.value)
    assert f"{typo!r} (did you mean {close!r}?)" in message and "valid: " in message and "ignore_index" in message


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(ValueError, match="unknown option of SoftmaxHead 'zzz'; valid: chunk_size"):
        use_head(make_model("llama"), "softmax", zzz=1)  # nothing close: no suggestion
    with pytest.raises(ValueError, match=r"'unigramm' \(did you mean 'unigram'\?\); valid: quadratic, quadratic_centred"):
        use_head(make_model("llama"), "sampled_softmax", sampler="unigramm")
    with pytest.raises(ValueError, match=r"unknown variant 'softmaxx' \(did you mean 'softmax'\?\)"):
        use_head(make_model("llama"), "softmaxx")
    with pytest.raises(ValueError, match="no class counts were given"):
        use_head(make_model("llama"), "sampled_softmax", sampler="unigram")
