"""Sequence-to-sequence examples for UniLM: tokenisation with a token budget, and the collators.

Layout (Dong et al. 2019, UniLM §3.2): ``[CLS] source [SEP] target [SEP]``; ``token_type_ids``
marks the part, 0 for the first and 1 for the second, and the model maps the parts to its
checkpoint's segment embeddings (BERT 0/1, UniLM v1 4/5: :mod:`softmax_zoo.models.unilm`).
Truncation rules, each counted in :class:`Truncation` (:func:`check_budget`: the smallest budgets):

* summarisation (Gigaword): the source keeps its first ``max_source_len - 2`` tokens (UniLM's
  ``--trunc_seg a --always_truncate_tail``); the target its first ``max_target_len - 1`` (+ [SEP]).
* question generation (SQuAD, Du split): the source is ``[CLS] passage [SEP] answer [SEP]``. A
  passage longer than its budget (``max_source_len - 3 - answer tokens``) is cut to the window of
  that many tokens centred on the answer span (clamped to the passage), so the answer is always
  inside. An example whose answer text is not in its passage (neither at ``answer_start`` nor
  anywhere else), or whose answer alone does not fit, is dropped and counted.

Training batches use UniLM's fine-tuning objective: ``round(mask_prob * |target [SEP]|)``
target positions (at least 1, at most ``max_pred``) are chosen at random; each becomes [MASK]
80% of the time, a random token 10%, stays 10% (BERT's rule, which UniLM keeps), and only those
positions carry labels.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import torch

from softmax_zoo.data.layout import IGNORE_INDEX


@dataclass
class Truncation:
    """How many examples each rule touched (copied into the run record)."""

    examples: int = 0
    source_truncated: int = 0
    target_truncated: int = 0
    dropped_answer_not_found: int = 0
    dropped_answer_too_long: int = 0
    answer_relocated: int = 0  # answer_start was wrong; the first occurrence of the text was used

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def check_budget(max_source_len: int, max_target_len: int) -> None:
    """The smallest budgets that hold ``[CLS] passage [SEP] answer [SEP]`` with a token of each, and ``target [SEP]``."""
    if max_source_len < 4:
        raise ValueError(f"max_source_len must be >= 4, got {max_source_len}")
    if max_target_len < 2:
        raise ValueError(f"max_target_len must be >= 2, got {max_target_len}")


def encode_target(tokenizer: Any, texts: Sequence[str], max_target_len: int, counts: Truncation) -> list[list[int]]:
    """``target [SEP]`` ids, at most ``max_target_len`` of them."""
    out = []
    for ids in tokenizer(list(texts), add_special_tokens=False)["input_ids"]:
        if len(ids) > max_target_len - 1:
            counts.target_truncated += 1
            ids = ids[: max_target_len - 1]
        out.append([*ids, tokenizer.sep_token_id])
    return out


def encode_summarisation(
    tokenizer: Any, sources: Sequence[str], max_source_len: int, counts: Truncation
) -> list[list[int]]:
    """``[CLS] source [SEP]`` ids, the source's tail cut to fit ``max_source_len``."""
    out = []
    for ids in tokenizer(list(sources), add_special_tokens=False)["input_ids"]:
        if len(ids) > max_source_len - 2:
            counts.source_truncated += 1
            ids = ids[: max_source_len - 2]
        out.append([tokenizer.cls_token_id, *ids, tokenizer.sep_token_id])
    counts.examples += len(sources)
    return out


def answer_window(n: int, span: tuple[int, int], budget: int) -> tuple[int, int]:
    """[start, end) of a ``budget``-token window of an ``n``-token passage centred on ``span``.

    Args:
        n: passage length in tokens.
        span: [first, last + 1) token indices of the answer; its length must be <= budget.
        budget: the window size.
    """
    first, end = span
    if end - first > budget:
        raise ValueError(f"answer span of {end - first} tokens does not fit a window of {budget}")
    if n <= budget:
        return 0, n
    start = first - (budget - (end - first)) // 2
    start = min(max(start, 0), n - budget)
    return start, start + budget


def encode_question_generation(
    tokenizer: Any, examples: Sequence[dict], max_source_len: int, counts: Truncation
) -> tuple[list[list[int]], list[int]]:
    """``[CLS] passage-chunk [SEP] answer [SEP]`` ids and the indices of the examples kept.

    Args:
        examples: ``{"source": passage, "answer": text, "answer_start": char offset}`` each.
    """
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    passages = sorted({ex["source"] for ex in examples})
    enc = tokenizer(passages, add_special_tokens=False, return_offsets_mapping=True)
    by_passage = {p: (ids, offs) for p, ids, offs in zip(passages, enc["input_ids"], enc["offset_mapping"])}
    answers = tokenizer([ex["answer"] for ex in examples], add_special_tokens=False)["input_ids"]
    out, kept = [], []
    counts.examples += len(examples)
    for i, (ex, ans_ids) in enumerate(zip(examples, answers)):
        passage, answer, start = ex["source"], ex["answer"], int(ex["answer_start"])
        if passage[start : start + len(answer)] != answer:
            start = passage.find(answer) if answer else -1
            if start < 0:
                counts.dropped_answer_not_found += 1
                continue
            counts.answer_relocated += 1
        ids, offs = by_passage[passage]
        inside = [t for t, (a, b) in enumerate(offs) if a < start + len(answer) and b > start]
        budget = max_source_len - 3 - len(ans_ids)
        if not inside or not ans_ids or inside[-1] + 1 - inside[0] > budget:
            counts.dropped_answer_too_long += 1
            continue
        lo, hi = answer_window(len(ids), (inside[0], inside[-1] + 1), budget)
        counts.source_truncated += int(hi - lo < len(ids))
        out.append([cls_id, *ids[lo:hi], sep_id, *ans_ids, sep_id])
        kept.append(i)
    return out, kept


class Seq2SeqDataset(torch.utils.data.Dataset):
    """Examples ``{"source_ids", "target_ids", "index"}``; ``references[i]`` is example i's target text.

    Args:
        source_ids: ``[CLS] ... [SEP]`` ids per example.
        target_ids: ``target [SEP]`` ids per example (used for training).
        references: target strings (evaluation).
        sources: source strings (decoding examples in the record).
    """

    def __init__(
        self,
        source_ids: Sequence[list[int]],
        target_ids: Sequence[list[int]],
        references: Sequence[str],
        sources: Sequence[str],
    ) -> None:
        if not len(source_ids) == len(target_ids) == len(references) == len(sources):
            raise ValueError(
                f"unequal lengths: {len(source_ids)} sources, {len(target_ids)} targets, "
                f"{len(references)} references, {len(sources)} source texts"
            )
        self.source_ids, self.target_ids = list(source_ids), list(target_ids)
        self.references, self.sources = list(references), list(sources)

    def __len__(self) -> int:
        return len(self.source_ids)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return {"source_ids": self.source_ids[i], "target_ids": self.target_ids[i], "index": i}


class UniLMTrainCollator:
    """Examples -> a masked training batch.

    Returns ``input_ids``, ``token_type_ids``, ``attention_mask``, ``labels`` (B, L), right-padded.

    Args:
        vocab_size: V, for the random-token replacement.
        mask_id, pad_id: token ids.
        special_ids: ids never drawn as random replacements.
        mask_prob: fraction of target tokens (final [SEP] included) predicted; UniLM: 0.7.
        max_pred: at most this many predicted positions per example.
        seed: the seed of the masks.

    The masks of an example are drawn from its own RNG, seeded by ``(seed, epoch, index)``: a
    function of the example and the epoch (``epoch``, set by the trainer before each one), not
    of how many batches came before it, so that a resumed run masks as the uninterrupted one did.
    """

    def __init__(
        self,
        vocab_size: int,
        mask_id: int,
        pad_id: int,
        special_ids: Sequence[int],
        mask_prob: float = 0.7,
        max_pred: int = 64,
        seed: int = 0,
    ) -> None:
        if not 0.0 < mask_prob <= 1.0:
            raise ValueError(f"mask_prob must be in (0, 1], got {mask_prob}")
        if max_pred < 1:
            raise ValueError(f"max_pred must be >= 1, got {max_pred}")
        self.vocab_size, self.mask_id, self.pad_id = vocab_size, mask_id, pad_id
        self.special = set(special_ids)
        self.mask_prob, self.max_pred = mask_prob, max_pred
        self.seed, self.epoch = seed, 0

    def _random_token(self, rng: random.Random) -> int:
        while True:
            t = rng.randrange(self.vocab_size)
            if t not in self.special:
                return t

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        if not examples:
            raise ValueError("cannot collate an empty batch")
        width = max(len(ex["source_ids"]) + len(ex["target_ids"]) for ex in examples)
        batch = {
            "input_ids": torch.full((len(examples), width), self.pad_id, dtype=torch.long),
            "token_type_ids": torch.zeros(len(examples), width, dtype=torch.long),
            "attention_mask": torch.zeros(len(examples), width, dtype=torch.long),
            "labels": torch.full((len(examples), width), IGNORE_INDEX, dtype=torch.long),
        }
        for row, ex in enumerate(examples):
            src, tgt = ex["source_ids"], ex["target_ids"]
            ids = [*src, *tgt]
            n_pred = min(self.max_pred, max(1, round(len(tgt) * self.mask_prob)))
            rng = random.Random(f"{self.seed}/{self.epoch}/{ex['index']}")
            for p in rng.sample(range(len(src), len(ids)), n_pred):
                batch["labels"][row, p] = ids[p]
                r = rng.random()
                if r < 0.8:
                    ids[p] = self.mask_id
                elif r < 0.9:
                    ids[p] = self._random_token(rng)
            batch["input_ids"][row, : len(ids)] = torch.tensor(ids)
            batch["token_type_ids"][row, len(src) : len(ids)] = 1
            batch["attention_mask"][row, : len(ids)] = 1
        return batch


def collate_sources(examples: list[dict[str, Any]], pad_id: int) -> dict[str, torch.Tensor]:
    """Examples -> ``source_ids``, ``source_mask`` (B, S) right-padded, and ``index`` (B,) for decoding."""
    width = max(len(ex["source_ids"]) for ex in examples)
    ids = torch.full((len(examples), width), pad_id, dtype=torch.long)
    mask = torch.zeros(len(examples), width, dtype=torch.long)
    for row, ex in enumerate(examples):
        ids[row, : len(ex["source_ids"])] = torch.tensor(ex["source_ids"])
        mask[row, : len(ex["source_ids"])] = 1
    return {"source_ids": ids, "source_mask": mask, "index": torch.tensor([ex["index"] for ex in examples])}
