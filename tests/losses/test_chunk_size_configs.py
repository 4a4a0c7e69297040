"""``loss.chunk_size`` from the command line: on for the logit heads, refused by the others."""

from __future__ import annotations

import pytest
from hydra.errors import ConfigCompositionException

from softmax_zoo.config import compose
from softmax_zoo.models.heads import build_head


@pytest.mark.parametrize("loss", ["softmax", "stable_softmax", "sparse_softmax"])
def test_logit_heads_default_to_the_plain_head_and_take_auto(loss):
    assert compose([f"loss={loss}", "task=ptb"]).loss.chunk_size is None
    cfg = compose([f"loss={loss}", "task=ptb", "loss.chunk_size=auto"])
    assert build_head(cfg.loss, 8, 50).chunk_size == "auto"


@pytest.mark.parametrize("loss", ["adaptive_softmax", "sampled_softmax"])
def test_heads_without_chunk_size_refuse_it(loss):
    with pytest.raises(ConfigCompositionException, match="chunk_size"):
        compose([f"loss={loss}", "task=ptb", "loss.chunk_size=auto"])
