"""One way to pass a loss's options: a variant name and its keywords, the same names in the heads,
the plain functions, ``linear_cross_entropy`` and the vocabulary-parallel functions (a one-process
gloo group); the old row-loss objects still run, with a ``DeprecationWarning`` at the caller's line."""

from __future__ import annotations

import inspect
import warnings

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.testing import assert_close

from softmax_zoo import losses
from softmax_zoo.losses import VocabShard, vocab_parallel_cross_entropy, vocab_parallel_linear_cross_entropy
from softmax_zoo.losses.methods.softmax import SoftmaxRows
from softmax_zoo.losses.methods.sparse import SparseRows
from softmax_zoo.losses.methods.stable import StableRows

from .ranks import single_process_group

C, D, N = 9, 4, 6
# (name, its head, its plain function, keywords every form takes with these names)
FORMS = {
    "softmax": ("softmax", losses.SoftmaxHead, losses.softmax_cross_entropy, {"label_smoothing": 0.1}),
    "stable": ("stable_softmax", losses.StableSoftmaxHead, losses.stable_cross_entropy, {"label_smoothing": 0.2}),
    "sparse": ("sparse_softmax", losses.SparseSoftmaxHead, losses.sparse_softmax_cross_entropy,
               {"k": 3, "label_smoothing": 0.1, "smoothing_over": "all", "target_in_support": True}),
}
# the deprecated row-loss object -> the name and keywords it is
OLD_FORMS = [
    (lambda: SoftmaxRows(0.1), "softmax", {"label_smoothing": 0.1}),
    (lambda: StableRows(0.1), "stable_softmax", {"label_smoothing": 0.1}),
    (lambda: SparseRows(3, 0.1), "sparse_softmax", {"k": 3, "label_smoothing": 0.1}),
    (lambda: SparseRows(3, 0.1, "all", True), "sparse_softmax",
     {"k": 3, "label_smoothing": 0.1, "smoothing_over": "all", "target_in_support": True}),
    (lambda: None, "softmax", {}),
]


@pytest.fixture(scope="module")
def shard(tmp_path_factory):
    single_process_group(tmp_path_factory.mktemp("store"))
    yield VocabShard(0, C)
    dist.destroy_process_group()


def _inputs():
    g = torch.Generator().manual_seed(5)
    h = torch.randn(N, D, dtype=torch.float64, generator=g)
    w = torch.randn(C, D, dtype=torch.float64, generator=g)
    return h, w, torch.tensor([0, 4, -100, 8, 2, 5])


@pytest.mark.parametrize("case", FORMS)
def test_every_entry_point_takes_the_same_name_and_keywords(shard, case):
    name, head_cls, plain, options = FORMS[case]
    h, w, t = _inputs()
    expected = plain(h @ w.T, t, **options)
    head = head_cls(D, C, weight=torch.nn.Parameter(w.clone()), bias=False, **options)
    assert_close(head(h, t), expected)
    assert_close(losses.linear_cross_entropy(h, w, t, loss=name, **options), expected)
    assert_close(vocab_parallel_cross_entropy(h @ w.T, t, shard, C, loss=name, **options), expected)
    assert_close(vocab_parallel_linear_cross_entropy(h, w, t, shard, C, loss=name, **options), expected)


@pytest.mark.parametrize("old, name, options", OLD_FORMS)
def test_a_row_loss_object_still_runs_and_warns_at_the_callers_line(shard, old, name, options):
    h, w, t = _inputs()
    for call, args in ((vocab_parallel_cross_entropy, (h @ w.T, t)), (vocab_parallel_linear_cross_entropy, (h, w, t))):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = call(*args, shard, C, loss=old())
        assert [w.category for w in caught] == [DeprecationWarning]
        message = str(caught[0].message)
        assert "is deprecated" in message and f"loss={name!r}" in message
        for key, value in options.items():
            assert f"{key}={value!r}" in message
        assert caught[0].filename == __file__  # the user's call, not the library's
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the new form does not warn
            assert_close(got, call(*args, shard, C, loss=name, **options))


def test_the_new_form_does_not_warn(shard):
    h, w, t = _inputs()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vocab_parallel_linear_cross_entropy(h, w, t, shard, C, loss="sparse_softmax", k=3)
        vocab_parallel_cross_entropy(h @ w.T, t, shard, C)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"loss": "nope"}, ValueError, r"no loss variant 'nope' is registered; registered: \["),
    ({"loss": "adaptive_softmax"}, ValueError, r"'adaptive_softmax' is not a logit-level variant"),
    ({"loss": "sampled_softmax"}, ValueError, r"VocabParallelHead\(SampledSoftmaxHead"),
    ({"loss": 3}, TypeError, r"loss must be a variant name, one of \['softmax', 'sparse_softmax', 'stable_softmax'\], got 3"),
    ({"loss": "sparse_softmax"}, TypeError, r"loss='sparse_softmax': .*missing 1 required keyword-only argument: 'k'"),
    ({"loss": "sparse_softmax", "k": 3, "kk": 2}, TypeError, r"loss='sparse_softmax': .*unexpected keyword argument 'kk'"),
    ({"loss": "sparse_softmax", "k": 0}, ValueError, "k must be >= 1, got 0"),
    ({"loss": "sparse_softmax", "k": 3, "smoothing_over": "most"}, ValueError, "smoothing_over must be one of"),
    ({"loss": "softmax", "z_loss": 1e-4}, ValueError, "loss='softmax' with z_loss has no vocabulary-parallel form yet"),
    ({"loss": "stable_softmax", "softcap": 30.0, "shift": True}, ValueError, "with softcap, shift has no vocabulary-parallel"),
    ({"loss": SparseRows(3), "k": 3}, ValueError, r"loss=SparseRows\(...\) takes no keywords \['k'\]: pass loss='sparse_softmax'"),
])
def test_bad_names_and_keywords_are_named(shard, kwargs, error, match):
    h, w, t = _inputs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(error, match=match):
            vocab_parallel_linear_cross_entropy(h, w, t, shard, C, **kwargs)
        with pytest.raises(error, match=match):
            vocab_parallel_cross_entropy(h @ w.T, t, shard, C, **kwargs)


@pytest.mark.parametrize("argument", ["chunk_size", "weight", "bias"])
def test_the_logits_function_refuses_a_linear_argument(shard, argument):
    h, w, t = _inputs()
    with pytest.raises(TypeError, match=f"{argument}= is not an option of loss 'softmax' on given logits"):
        vocab_parallel_cross_entropy(h @ w.T, t, shard, C, **{argument: 3})


@pytest.mark.parametrize("one, split", [
    (losses.linear_cross_entropy, vocab_parallel_linear_cross_entropy),
    (losses.linear_kd_loss, losses.vocab_parallel_linear_kd_loss),
    (losses.stable_kd_loss, losses.vocab_parallel_stable_kd_loss),
], ids=lambda f: f.__name__)
def test_each_vocabulary_parallel_function_takes_its_one_process_keywords_and_defaults(one, split):
    """The same keyword-only arguments with the same defaults (``chunk_size="auto"``, sized from the
    global C, the same on every rank), and the variant's keywords for the cross-entropy."""
    def keywords(f):
        return {n: p.default for n, p in inspect.signature(f).parameters.items() if p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD)}

    assert keywords(split) == keywords(one)


def test_the_functions_default_to_the_softmax_in_auto_chunks():
    assert inspect.signature(vocab_parallel_linear_cross_entropy).parameters["chunk_size"].default == "auto"
    assert inspect.signature(vocab_parallel_cross_entropy).parameters["loss"].default == "softmax"


def test_the_default_chunks_as_auto_does(shard, monkeypatch):
    """The default cuts the rows as ``chunk_size="auto"`` does: with a budget of 2 rows' logits, 3 chunks of N = 6 rows."""
    import softmax_zoo.losses.parallel.vocab_parallel as vp

    monkeypatch.setattr(vp, "chunk_logits", lambda device, weight_numel: 2 * C)
    seen = []
    real = vp.linear_loss
    monkeypatch.setattr(vp, "linear_loss", lambda rows, h, w, b, call, r: seen.append(call.chunk_rows) or real(rows, h, w, b, call, r))
    h, w, t = _inputs()
    loss = vocab_parallel_linear_cross_entropy(h, w, t, shard, C)
    assert seen == [2]
    assert_close(loss, F.cross_entropy(h @ w.T, t))
