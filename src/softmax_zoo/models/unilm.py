"""A BERT encoder used as a UniLM sequence-to-sequence model.

Dong et al. 2019, "Unified Language Model Pre-training for Natural Language Understanding and
Generation", §2 (the seq2seq self-attention mask) and §3.2 (fine-tuning for generation):

* input ``[CLS] source [SEP] target [SEP]``; batches mark the parts with ``token_type_ids`` 0
  (``[CLS] source [SEP]``) and 1 (``target [SEP]``), and the model maps the two parts to its
  segment embeddings ``segment_ids``: 0 and 1 for a BERT checkpoint (2 segment embeddings), 4 and 5
  for a UniLM v1 checkpoint (6 segment embeddings). UniLM v1's s2s fine-tuning with
  ``--new_segment_ids`` gives ``[CLS] source [SEP]`` segment 4 and ``target [SEP]`` segment 5
  (microsoft/unilm, unilm-v1/src/biunilm/seq2seq_loader.py, ``Preprocess4Seq2seq`` and
  ``Preprocess4Seq2seqDecoder``: ``segment_ids = [4] * (len(tokens_a)+2) + [5] * (len(tokens_b)+1)``;
  0/1, 2/3 are its bidirectional and left-to-right/right-to-left pre-training segments);
* self-attention mask: a source position sees every source position; a target position sees the
  source and the target positions to its left, itself included (:func:`seq2seq_attention_mask`);
* fine-tuning: target tokens (the final ``[SEP]`` included) are masked at random and predicted
  (the masking is done by the collator, :mod:`softmax_zoo.data.seq2seq`); only the masked
  positions go through the output layer.

The output layer is the BERT LM-head transform (dense, activation, LayerNorm) followed by a loss
head from :mod:`softmax_zoo.losses` whose (V, d) weight is tied to the word embeddings, so every
softmax variant can be swapped in. Weights load from any BERT-format checkpoint (hub id or local
folder). UniLM v1's (microsoft/unilm-base-cased, -large-cased) are BERT weights with a config.json
that has no ``model_type`` and names the layer-norm epsilon ``layer_norm_epsilon``; they load as
BERT with their own epsilon and 6 segment embeddings, and their MLM head (transform and output
bias) becomes the LM head, so nothing starts fresh. A checkpoint without the LM-head transform
(e.g. all-MiniLM-L6-v2, a sentence encoder) gets a freshly initialised one, listed in ``fresh``.

The encoder forward is written here (on BERT's own sub-modules) rather than calling
``BertModel.forward`` so that it takes a per-example (L, L) mask and a key/value cache of the
positions already decoded, which :mod:`softmax_zoo.models.decoding` needs.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn
from transformers import BertConfig, BertForMaskedLM, PretrainedConfig

from softmax_zoo.data.layout import IGNORE_INDEX
from softmax_zoo.hub import quiet_transformers, resolve_pretrained
from softmax_zoo.losses import LinearHead

from .build import MakeHead

log = logging.getLogger(__name__)

# BertConfig fields a checkpoint must define to be read as BERT.
BERT_CONFIG_FIELDS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "hidden_act",
    "max_position_embeddings",
    "type_vocab_size",
    "layer_norm_eps",
)
# Checkpoint weights that may be absent (they start fresh): the MLM transform and its bias.
OPTIONAL_PREFIXES = ("cls.",)
# config.json names that mean a BertConfig field (UniLM v1's configs say layer_norm_epsilon).
CONFIG_ALIASES = {"layer_norm_epsilon": "layer_norm_eps"}
# Segment embeddings of [CLS] source [SEP] and of target [SEP]: BERT's two, or UniLM v1's s2s pair
# when the checkpoint has its 6 (see the module docstring for the source).
BERT_SEGMENTS = (0, 1)
UNILM_V1_SEGMENTS = (4, 5)
UNILM_V1_TYPE_VOCAB_SIZE = 6


def seq2seq_attention_mask(token_type_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """UniLM's sequence-to-sequence self-attention mask.

    Args:
        token_type_ids: (B, L) part: 0 for ``[CLS] source [SEP]``, 1 for ``target [SEP]``.
        attention_mask: (B, L) 1 for real tokens, 0 for padding.

    Returns:
        (B, L, L) bool, True where query i may attend to key j: j is a source token, or i and j
        are target tokens with j <= i. Padding queries see the source (their output is unused),
        so no row is empty.
    """
    valid = attention_mask.bool()
    key_src = valid & (token_type_ids == 0)  # (B, L)
    key_tgt = valid & (token_type_ids == 1)
    length = token_type_ids.shape[1]
    causal = torch.ones(length, length, dtype=torch.bool, device=token_type_ids.device).tril()
    tgt_tgt = key_tgt[:, :, None] & key_tgt[:, None, :] & causal  # (B, L, L)
    return key_src[:, None, :] | tgt_tgt


@dataclass
class LoadedBert:
    """What :func:`load_bert` read: the encoder, the LM-head transform, the MLM output bias
    (None when the checkpoint has none) and the names of the parts that start fresh."""

    encoder: nn.Module
    transform: nn.Module
    bias: torch.Tensor | None
    fresh: list[str]


def bert_config(name_or_path: str) -> BertConfig:
    """The checkpoint's config.json read as a :class:`BertConfig`.

    A config without ``model_type`` (UniLM v1's) or with ``model_type: bert`` keeps all its fields
    (``layer_norm_epsilon`` read as ``layer_norm_eps``); another model type keeps only the BERT
    fields, which it must have.

    Raises:
        ValueError: no config, a missing BERT field, or fewer than 2 segment embeddings.
    """
    try:
        raw, _ = PretrainedConfig.get_config_dict(name_or_path)
    except (OSError, ValueError) as err:
        raise ValueError(f"{name_or_path!r} has no loadable config.json: {err}") from err
    raw = {CONFIG_ALIASES.get(k, k): v for k, v in raw.items()}
    model_type = raw.get("model_type")
    missing = [f for f in BERT_CONFIG_FIELDS if raw.get(f) is None]
    if missing:
        raise ValueError(
            f"{name_or_path!r} (model_type={model_type!r}) is not BERT-compatible: its config lacks {', '.join(missing)}"
        )
    if raw["type_vocab_size"] < 2:
        raise ValueError(
            f"{name_or_path!r} is not BERT-compatible for UniLM: it needs 2 segment embeddings "
            f"(type_vocab_size >= 2), got {raw['type_vocab_size']}"
        )
    if model_type in (None, "bert"):
        return BertConfig.from_dict({k: v for k, v in raw.items() if k != "model_type"})
    return BertConfig(**{f: raw[f] for f in BERT_CONFIG_FIELDS})


def default_segments(type_vocab_size: int) -> tuple[int, int]:
    """UniLM v1's s2s segments (4, 5) for a checkpoint with its 6 segment embeddings, else BERT's (0, 1)."""
    return UNILM_V1_SEGMENTS if type_vocab_size == UNILM_V1_TYPE_VOCAB_SIZE else BERT_SEGMENTS


def load_bert(name_or_path: str) -> LoadedBert:
    """Load a BERT-format checkpoint (hub id or local folder), quietly: one log line names what starts
    fresh (e.g. the masked-LM head transform of an encoder shipped without one).

    Raises:
        ValueError: if the checkpoint has no config, its config lacks a BERT field, it has fewer
            than 2 segment embeddings, or encoder weights are missing; the message names them.
    """
    config = bert_config(name_or_path)
    with quiet_transformers():
        mlm, info = BertForMaskedLM.from_pretrained(name_or_path, config=config, output_loading_info=True)
    absent = sorted(k for k in info["missing_keys"] if not k.startswith(OPTIONAL_PREFIXES))
    if absent:
        shown = ", ".join(absent[:8]) + (f" and {len(absent) - 8} more" if len(absent) > 8 else "")
        raise ValueError(f"{name_or_path!r} is not BERT-compatible: the checkpoint lacks the weights {shown}")
    fresh = sorted(k for k in info["missing_keys"] if k.startswith("cls.predictions.transform."))
    has_bias = "cls.predictions.bias" not in info["missing_keys"]
    starts_fresh = [what for what, new in (("the LM-head transform", fresh), ("the output bias", not has_bias)) if new]
    log.info(
        "loaded %s; starts fresh: %s", name_or_path, " and ".join(starts_fresh) if starts_fresh else "nothing"
    )
    return LoadedBert(mlm.bert, mlm.cls.predictions.transform, mlm.cls.predictions.bias.data if has_bias else None, fresh)


def random_bert(config: BertConfig) -> LoadedBert:
    """A randomly initialised BERT (tests, smoke runs): everything is fresh."""
    mlm = BertForMaskedLM(config)
    return LoadedBert(mlm.bert, mlm.cls.predictions.transform, None, ["all"])


class KVCache:
    """Keys/values of positions already encoded, for incremental decoding (inference only).

    Two parts: ``shared``, per layer (B0, H, S, d/H) keys/values of the source, one copy per
    example whatever the number of hypotheses (rows ``g*G .. g*G + G - 1`` of the batch share
    example g's, G = B / B0), with ``shared_mask`` (B0, S) marking real tokens; and ``own``, per
    layer (B, H, T, d/H) keys/values of each row's target tokens. Keeping the source once means
    that reordering beams (:meth:`select`) copies only the short target part.
    """

    def __init__(self, shared: list[tuple[torch.Tensor, torch.Tensor]], shared_mask: torch.Tensor, rows: int) -> None:
        b0 = shared_mask.shape[0]
        if rows % b0:
            raise ValueError(f"rows must be a multiple of the {b0} shared examples, got {rows}")
        self.shared, self.shared_mask, self.group = shared, shared_mask.bool(), rows // b0
        k0 = shared[0][0]
        empty = k0.new_zeros(rows, k0.shape[1], 0, k0.shape[3])
        self.own = [(empty, empty) for _ in shared]

    @property
    def length(self) -> int:
        """T, the number of per-row (target) positions cached."""
        return self.own[0][0].shape[2]

    def select(self, rows: torch.Tensor) -> None:
        """Keep per-row entries ``rows`` (B,), each within its own example's group of rows."""
        self.own = [(k[rows], v[rows]) for k, v in self.own]

    def append(self, kv: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        """Add per-row positions: per layer (keys, values), each (B, H, n, d/H)."""
        self.own = [(torch.cat([k0, k1], 2), torch.cat([v0, v1], 2)) for (k0, v0), (k1, v1) in zip(self.own, kv)]

    def attend(self, i: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Softmax attention of new queries over [shared keys, own keys, new keys] at layer i.

        Args:
            q, k, v: (B, H, Lq, d/H) of the new positions.
            mask: (B, Lq, T + Lq) bool over the own and new keys.

        Returns:
            (B, H, Lq, d/H) attention output.
        """
        b, heads, lq, dh = q.shape
        g, b0 = self.group, b // self.group
        k_sh, v_sh = self.shared[i]
        k_own, v_own = torch.cat([self.own[i][0], k], 2), torch.cat([self.own[i][1], v], 2)
        scale = dh**-0.5
        q_sh = q.view(b0, g, heads, lq, dh).transpose(1, 2).reshape(b0, heads, g * lq, dh)  # rows of one example together
        s_sh = (q_sh @ k_sh.transpose(2, 3)) * scale  # (B0, H, G*Lq, S)
        s_sh = s_sh.masked_fill(~self.shared_mask[:, None, None, :], -math.inf)
        s_sh = s_sh.view(b0, heads, g, lq, -1).transpose(1, 2).reshape(b, heads, lq, -1)  # (B, H, Lq, S)
        s_own = ((q @ k_own.transpose(2, 3)) * scale).masked_fill(~mask[:, None], -math.inf)  # (B, H, Lq, T+Lq)
        p = torch.softmax(torch.cat([s_sh, s_own], -1), -1)
        n_sh = s_sh.shape[-1]
        p_sh = p[..., :n_sh].reshape(b0, g, heads, lq, n_sh).transpose(1, 2).reshape(b0, heads, g * lq, n_sh)
        out_sh = (p_sh @ v_sh).view(b0, heads, g, lq, dh).transpose(1, 2).reshape(b, heads, lq, dh)
        return out_sh + p[..., n_sh:] @ v_own


class UniLM(nn.Module):
    """BERT encoder + LM-head transform + a loss head tied to the word embeddings.

    Args:
        bert: the encoder parts from :func:`load_bert` or :func:`random_bert`.
        make_head: the output-layer hook, called with the hidden size and
            ``weight=bert.encoder.embeddings.word_embeddings.weight`` (see :meth:`tied_weight`);
            its head is over the vocabulary. A :class:`~softmax_zoo.losses.LinearHead` with a
            bias takes the checkpoint's MLM bias.
        mask_prob: fine-tuning: fraction of target tokens masked and predicted (the collator's).
        max_pred: fine-tuning: at most this many predicted positions per example.
        segment_ids: the segment embeddings of the source and the target part; None:
            :func:`default_segments` of the checkpoint's ``type_vocab_size``.
    """

    def __init__(
        self,
        bert: LoadedBert,
        make_head: MakeHead,
        *,
        mask_prob: float = 0.7,
        max_pred: int = 48,
        segment_ids: Sequence[int] | None = None,
    ) -> None:
        super().__init__()
        n_types = bert.encoder.config.type_vocab_size
        segments = tuple(default_segments(n_types) if segment_ids is None else segment_ids)
        if len(segments) != 2 or not all(0 <= i < n_types for i in segments):
            raise ValueError(f"segment_ids must be 2 ids in [0, {n_types}) (the checkpoint's type_vocab_size), got {segments}")
        self.segment_ids = segments
        # part (0 source, 1 target) -> segment embedding id; a buffer so that it follows .to(device)
        self.register_buffer("segment_table", torch.tensor(segments, dtype=torch.long), persistent=False)
        self.encoder = bert.encoder
        self.transform = bert.transform
        head = make_head(bert.encoder.config.hidden_size, weight=UniLM.tied_weight(bert))
        self.head = head
        self.mask_prob = mask_prob
        self.max_pred = max_pred
        self.fresh = list(bert.fresh)
        config = self.encoder.config
        if head.num_classes != config.vocab_size or head.in_features != config.hidden_size:
            raise ValueError(
                f"head is ({head.num_classes}, {head.in_features}) but the encoder has vocab_size "
                f"{config.vocab_size} and hidden_size {config.hidden_size}"
            )
        if bert.bias is not None and isinstance(head, LinearHead) and head.bias is not None:
            with torch.no_grad():
                head.bias.copy_(bert.bias)
        self.num_heads = config.num_attention_heads
        self.attn_dropout = config.attention_probs_dropout_prob

    @staticmethod
    def tied_weight(bert: LoadedBert) -> nn.Parameter:
        """The (V, d) word-embedding matrix the output head is tied to."""
        return bert.encoder.embeddings.word_embeddings.weight

    def run(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor,
        position_ids: torch.Tensor,
        mask: torch.Tensor,
        cache: KVCache | None = None,
    ) -> tuple[torch.Tensor, list[tuple[torch.Tensor, torch.Tensor]]]:
        """The encoder on new positions, attending to ``cache`` and to themselves.

        Args:
            input_ids, token_type_ids, position_ids: (B, Lq) for the new positions;
                ``token_type_ids`` is the part (0 source, 1 target), mapped to ``segment_ids``.
            mask: (B, Lq, T + Lq) bool, True where a new position may attend among the cache's
                per-row keys (T of them, first) and the new positions; the cache's shared keys
                are governed by ``cache.shared_mask``.
            cache: keys/values of earlier positions, or None.

        Returns:
            hidden: (B, Lq, d) last-layer states; kv: per layer (keys, values) of the new
            positions, each (B, H, Lq, d/H), for the caller to cache.
        """
        emb = self.encoder.embeddings
        h = (emb.word_embeddings(input_ids) + emb.position_embeddings(position_ids)
             + emb.token_type_embeddings(self.segment_table[token_type_ids]))
        h = emb.dropout(emb.LayerNorm(h))
        kv = []
        for i, layer in enumerate(self.encoder.encoder.layer):
            a, new_kv = self._attention(layer, h, mask, cache, i)
            h = layer.output(layer.intermediate(a), a)
            kv.append(new_kv)
        return h, kv

    def _attention(self, layer, h, mask, cache, i):
        sa = layer.attention.self
        b, lq, d = h.shape

        def split(x):  # (B, Lq, d) -> (B, H, Lq, d/H)
            return x.view(b, lq, self.num_heads, d // self.num_heads).transpose(1, 2)

        q, k, v = split(sa.query(h)), split(sa.key(h)), split(sa.value(h))
        if cache is None:
            ctx = F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask[:, None], dropout_p=self.attn_dropout if self.training else 0.0
            )
        else:
            ctx = cache.attend(i, q, k, v, mask)
        ctx = ctx.transpose(1, 2).reshape(b, lq, d)  # (B, H, Lq, d/H) -> (B, Lq, d)
        return layer.attention.output(ctx, h), (k, v)

    def encode(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """(B, L) ids, segments and padding mask -> (B, L, d) states under the seq2seq mask."""
        position_ids = torch.arange(input_ids.shape[1], device=input_ids.device).expand_as(input_ids)
        mask = seq2seq_attention_mask(token_type_ids, attention_mask)
        return self.run(input_ids, token_type_ids, position_ids, mask)[0]

    def log_probs(self, hidden: torch.Tensor) -> torch.Tensor:
        """(..., d) encoder states -> (..., V) log-probabilities of the head's inference distribution."""
        return self.head.log_probs(self.transform(hidden))

    def forward(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        labels: torch.Tensor | None = None,
    ) -> dict[str, torch.Tensor]:
        """UniLM fine-tuning loss (Trainer-compatible).

        Args:
            input_ids, token_type_ids, attention_mask: (B, L), masked targets already in
                ``input_ids``.
            labels: (B, L) original ids at the masked positions, ``IGNORE_INDEX`` elsewhere.

        Returns:
            ``{"loss": scalar}`` (the head's loss over masked positions) when labels are given,
            else ``{"hidden": (B, L, d)}``.
        """
        hidden = self.encode(input_ids, token_type_ids, attention_mask)
        if labels is None:
            return {"hidden": hidden}
        picked = labels != IGNORE_INDEX  # (B, L) -> N masked positions
        return {"loss": self.head(self.transform(hidden[picked]), labels[picked])}


def build_unilm(
    make_head: MakeHead,
    vocab_size: int,
    *,
    checkpoint: str | None,
    config: dict | None = None,
    mask_prob: float = 0.7,
    max_pred: int = 48,
    segment_ids: Sequence[int] | None = None,
) -> UniLM:
    """The ``_target_`` of configs/model/unilm_*.yaml.

    Args:
        make_head: the output-layer hook (tied to the word embeddings).
        vocab_size: the tokenizer's size.
        checkpoint: a BERT-format checkpoint (hub id, folder or "minilm"); None: a random BERT of ``config``.
        config: ``BertConfig`` fields of a randomly initialised model.
        mask_prob, max_pred, segment_ids: as :class:`UniLM`.
    """
    if checkpoint:
        bert = load_bert(resolve_pretrained(checkpoint))
    else:
        if not config:
            raise ValueError("a UniLM from scratch (model.checkpoint=null) needs model.config (BertConfig fields)")
        bert = random_bert(BertConfig(vocab_size=vocab_size, **config))
    if bert.encoder.config.vocab_size < vocab_size:
        raise ValueError(f"the checkpoint has {bert.encoder.config.vocab_size} word embeddings but the tokenizer {vocab_size} tokens")
    return UniLM(bert, make_head, mask_prob=mask_prob, max_pred=max_pred, segment_ids=segment_ids)
