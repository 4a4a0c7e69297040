"""UniLM incremental decoding: beam search with a key/value cache.

Dong et al. 2019 (UniLM), §3.2: to predict target position t, a ``[MASK]`` is put at t and its
output state is read; then the mask is replaced by the chosen token. Each step therefore feeds
two new positions, the token chosen at t-1 (which sees the source, the earlier target tokens and
itself) and a ``[MASK]`` at t (which also sees that token); only the chosen token's keys/values
are cached, the mask's never are. This matches the training mask exactly, so cached decoding
equals recomputing the whole sequence each step (tested). The source's keys/values are kept once
per example, not once per beam (:class:`~softmax_zoo.models.unilm.KVCache`), so reordering the
beams copies only the short target part.

Search follows UniLM's ``beam_search``: log-probabilities summed over tokens, ``min_len``
forbids the end token early, repeated n-grams of the generated sequence are forbidden (n-grams
whose last n-1 tokens or last token is an ``ngram_ignore`` token are exempt, like UniLM's
``--forbid_ignore_word``), and the final choice among finished hypotheses divides by the GNMT
length penalty ((5 + |y|) / 6)^alpha, |y| counting the end token. Unlike UniLM, a finished
hypothesis leaves the beam (so the beam keeps ``beam`` live ones) and the search stops as soon as
no live hypothesis can beat the best finished one (exact for alpha >= 0, since scores are <= 0).

Sparse-softmax decoding (Sun et al. 2021, "Sparse-softmax", §3): with ``topk`` set, every step
keeps only the k most probable tokens (among those that can be outputs at all, i.e. without
``banned``) and renormalises over them. The search constraints (``min_len``, n-gram blocking, the
forced end at ``max_len``) apply after the top-k. When they forbid every token a hypothesis' top-k
allows (at beam 1 with k = 1, one blocked n-gram suffices), the hypothesis falls through to the
best token the constraints allow in the full distribution, scored with its full-distribution
log-probability, rather than ending there; :func:`decode` counts these steps per output. (UniLM
adds -10000 to forbidden tokens instead, so they stay choosable.) Only if the constraints forbid
every token of the vocabulary does a hypothesis end without an end token.

``transformers.generate()`` is not used: it grows the sequence by one causally-masked token per
step, while this model feeds two positions per step under a non-causal mask with segment ids and
per-example position offsets, which would need overriding generate's private input-update hooks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from softmax_zoo.data.layout import IGNORE_INDEX

from .unilm import KVCache, UniLM


@dataclass
class Decoded:
    """One decoded output.

    Attributes:
        ids: generated ids, the end token excluded.
        constraint_steps: tokens of the output (its end token included) that the search
            constraints forced from outside the step's top-k (the fall-through); 0 without ``topk``
            unless the constraints forbid the whole vocabulary.
        ended_by_constraint: the output did not end by choosing the end token within the step's
            top-k: the end was forced at ``max_len``, came from the fall-through, or nothing at
            all was allowed.
        blocked_steps: steps of the output (its end step included) at which a search constraint
            forbade the full distribution's best token: counted alike with and without ``topk``,
            so it compares how often the constraints steered two heads' searches.
    """

    ids: list[int]
    constraint_steps: int = 0
    ended_by_constraint: bool = False
    blocked_steps: int = 0


@dataclass
class DecodeConfig:
    """Search settings.

    Attributes:
        beam: beam size (1 = greedy).
        max_len: most target tokens, end token included.
        min_len: fewest target tokens before the end token is allowed.
        length_penalty: alpha of the GNMT penalty ((5 + |y|) / 6)^alpha; 0 = none (UniLM's setting).
        ngram_block: forbid repeating any n-gram of this size in the output; 0 = off.
        ngram_ignore: token ids exempt from n-gram blocking (UniLM: ".").
        topk: keep only the top-k tokens each step (sparse-softmax decoding); None = all.
        banned: token ids never generated (padding, [CLS], [MASK]).
    """

    beam: int = 1
    max_len: int = 32
    min_len: int = 0
    length_penalty: float = 0.0
    ngram_block: int = 0
    ngram_ignore: tuple[int, ...] = ()
    topk: int | None = None
    banned: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.beam < 1:
            raise ValueError(f"beam must be >= 1, got {self.beam}")
        if self.max_len < 1:
            raise ValueError(f"max_len must be >= 1, got {self.max_len}")
        if not 0 <= self.min_len < self.max_len:
            raise ValueError(f"min_len must be in [0, max_len={self.max_len}), got {self.min_len}")
        if self.length_penalty < 0:
            raise ValueError(f"length_penalty must be >= 0, got {self.length_penalty}")
        if self.topk is not None and self.topk < 1:
            raise ValueError(f"topk must be >= 1 or None, got {self.topk}")
        if self.ngram_block < 0:
            raise ValueError(f"ngram_block must be >= 0, got {self.ngram_block}")


def length_penalty(length: int, alpha: float) -> float:
    """GNMT length penalty ((5 + length) / 6)^alpha (Wu et al. 2016, eq. 14), as UniLM uses."""
    return ((5.0 + length) / 6.0) ** alpha


def blocked_ngram_tokens(seq: list[int], n: int, ignore: set[int]) -> set[int]:
    """Tokens that would repeat an n-gram of ``seq`` if appended (UniLM's rule)."""
    if n < 1 or len(seq) < n - 1:
        return set()
    tail = seq[len(seq) - n + 1 :] if n > 1 else []
    if any(t in ignore for t in tail):
        return set()
    return {
        seq[i + n - 1]
        for i in range(len(seq) - n + 1)
        if seq[i : i + n - 1] == tail and seq[i + n - 1] not in ignore
    }


def sparse_topk(logp: torch.Tensor, k: int) -> torch.Tensor:
    """(N, V) log-probabilities -> renormalised over each row's top-k, -inf elsewhere."""
    if k >= logp.shape[-1]:
        return logp
    top, idx = logp.topk(k, dim=-1)
    out = torch.full_like(logp, -math.inf)
    return out.scatter_(-1, idx, top - top.logsumexp(-1, keepdim=True))


def fall_through(logp: torch.Tensor, full: torch.Tensor, forbid: torch.Tensor) -> torch.Tensor:
    """Rows whose allowed set is empty get the best allowed token of the full distribution.

    Args:
        logp: (N, V) the step's log-probabilities after the top-k and the constraints (modified
            in place).
        full: (N, V) the full distribution's log-probabilities (banned tokens -inf).
        forbid: (N, V) True where a search constraint forbids a token.

    Returns:
        (N,) bool, True for the rows that fell through: their one finite entry is the full
        distribution's best allowed token, with its full-distribution log-probability.
    """
    empty = torch.isinf(logp).all(1)  # (N,) the constraints left nothing of the top-k
    if not bool(empty.any()):
        return empty
    allowed = full[empty].masked_fill(forbid[empty], -math.inf)  # (M, V)
    best, tok = allowed.max(1)  # (M,) each
    rows = empty.nonzero().squeeze(1)[torch.isfinite(best)]  # rows where the full distribution allows something
    logp[rows, tok[torch.isfinite(best)]] = best[torch.isfinite(best)]
    fell = torch.zeros_like(empty)
    fell[rows] = True
    return fell


@torch.no_grad()
def decode(
    model: UniLM,
    source_ids: torch.Tensor,
    source_mask: torch.Tensor,
    cfg: DecodeConfig,
    *,
    mask_id: int,
    eos_id: int,
) -> list[Decoded]:
    """Decode a batch of sources by beam search.

    Args:
        model: a :class:`UniLM` (put in eval mode by the caller).
        source_ids: (B, S) ``[CLS] source [SEP]`` right-padded.
        source_mask: (B, S) 1 for real tokens.
        cfg: search settings.
        mask_id, eos_id: the ``[MASK]`` and end (``[SEP]``) token ids.

    Returns:
        B outputs: the best finished hypothesis of each source and how the constraints shaped it.
    """
    b, s = source_ids.shape
    k = cfg.beam
    dev = source_ids.device
    src_valid = source_mask.bool()
    src_len = source_mask.sum(1)  # (B,) position of the first target token
    _, kv = model.run(
        source_ids, torch.zeros_like(source_ids), torch.arange(s, device=dev).expand(b, s),
        src_valid[:, None, :].expand(b, s, s),  # every source position sees the whole source
    )
    cache = KVCache(kv, src_valid, rows=b * k)  # the source is kept once per example, not per beam
    pos0 = src_len.repeat_interleave(k)  # (B*K,) position of each hypothesis' first target token
    scores = torch.full((b, k), -math.inf, device=dev)
    scores[:, 0] = 0.0  # one live hypothesis at the start
    seqs: list[list[int]] = [[] for _ in range(b * k)]
    forced: list[int] = [0] * (b * k)  # per hypothesis: tokens taken by the fall-through so far
    blocked: list[int] = [0] * (b * k)  # per hypothesis: steps whose full-distribution best token a constraint forbade
    finished: list[list[tuple[float, Decoded]]] = [[] for _ in range(b)]
    done = [False] * b
    banned = torch.tensor(list(cfg.banned), dtype=torch.long, device=dev)
    ignore = set(cfg.ngram_ignore)
    prev = None  # (B*K,) token chosen at the previous step
    seg = torch.ones(b * k, 2, dtype=torch.long, device=dev)
    for t in range(cfg.max_len):
        mask_tok = torch.full((b * k, 1), mask_id, dtype=torch.long, device=dev)
        if prev is None:
            ids, pos = mask_tok, pos0[:, None]
            new_mask = torch.ones(b * k, 1, 1, dtype=torch.bool, device=dev)
        else:
            ids = torch.cat([prev[:, None], mask_tok], 1)  # (B*K, 2): token at t-1, [MASK] at t
            pos = torch.stack([pos0 + t - 1, pos0 + t], 1)
            new_mask = torch.ones(2, 2, dtype=torch.bool, device=dev).tril().expand(b * k, 2, 2)
        lq = ids.shape[1]
        own = torch.ones(b * k, lq, cache.length, dtype=torch.bool, device=dev)  # earlier target tokens: all visible
        hidden, kv = model.run(ids, seg[:, :lq], pos, torch.cat([own, new_mask], 2), cache)
        full = model.log_probs(hidden[:, -1]).float()  # (B*K, V)
        if prev is not None:  # cache the real token, never the [MASK]
            cache.append([(kk[:, :, :1], vv[:, :, :1]) for kk, vv in kv])
        if banned.numel():  # tokens that are never outputs leave the distribution first
            full[:, banned] = -math.inf
        logp = full if cfg.topk is None else sparse_topk(full, cfg.topk)  # then the top-k, before any constraint
        forbid = search_constraints(seqs, t, cfg, ignore, full.shape[1], eos_id, dev)  # (B*K, V)
        logp = logp.masked_fill(forbid, -math.inf)
        fell = fall_through(logp, full, forbid).tolist()  # (B*K,)
        stop = forbid.gather(1, full.argmax(1, keepdim=True)).squeeze(1).tolist()  # (B*K,) best token forbidden
        vocab = logp.shape[1]
        cand = (scores.reshape(-1, 1) + logp).reshape(b, k * vocab)  # (B, K*V)
        top_scores, top_idx = cand.topk(min(2 * k, k * vocab), dim=1)
        new_rows, new_tok, new_scores = [], [], []
        top_scores, top_idx = top_scores.tolist(), top_idx.tolist()
        for i in range(b):
            live = []
            if not done[i]:
                for sc, idx in zip(top_scores[i], top_idx[i]):
                    if sc == -math.inf or len(live) == k:
                        break
                    r, tok = i * k + idx // vocab, idx % vocab
                    if tok == eos_id:
                        out = Decoded(seqs[r], forced[r] + fell[r], fell[r] or t == cfg.max_len - 1, blocked[r] + stop[r])
                        finished[i].append((sc / length_penalty(t + 1, cfg.length_penalty), out))
                    else:
                        live.append((sc, r, tok))
                best_done = max((f[0] for f in finished[i]), default=-math.inf)
                bound = live[0][0] / length_penalty(cfg.max_len, cfg.length_penalty) if live else -math.inf
                if not live and not finished[i]:  # the constraints forbid the whole vocabulary: end here
                    out = Decoded(seqs[i * k], forced[i * k], True, blocked[i * k])
                    finished[i].append((float(scores[i, 0]) / length_penalty(t, cfg.length_penalty), out))
                done[i] = not live or (bool(finished[i]) and best_done >= bound)
            if done[i]:
                live = []
            live += [(-math.inf, i * k, eos_id)] * (k - len(live))  # pad dead slots
            for sc, r, tok in live:
                new_scores.append(sc)
                new_rows.append(r)
                new_tok.append(tok)
        if all(done):
            break
        sel = torch.tensor(new_rows, device=dev)
        cache.select(sel)
        seqs = [seqs[r] + [tok] for r, tok in zip(new_rows, new_tok)]
        forced = [forced[r] + fell[r] for r in new_rows]
        blocked = [blocked[r] + stop[r] for r in new_rows]
        prev = torch.tensor(new_tok, device=dev)
        scores = torch.tensor(new_scores, device=dev).reshape(b, k)
    return [max(f, key=lambda x: x[0])[1] if f else Decoded([], 0, True) for f in finished]


def search_constraints(
    seqs: list[list[int]], t: int, cfg: DecodeConfig, ignore: set[int], vocab: int, eos_id: int, device
) -> torch.Tensor:
    """(N, V) bool, True where ``min_len``, n-gram blocking or the forced end at ``max_len`` forbid a token at step t."""
    forbid = torch.zeros(len(seqs), vocab, dtype=torch.bool, device=device)
    if t < cfg.min_len:
        forbid[:, eos_id] = True
    if cfg.ngram_block:
        for r, seq in enumerate(seqs):
            blocked = blocked_ngram_tokens(seq, cfg.ngram_block, ignore)
            if blocked:
                forbid[r, list(blocked)] = True
    if t == cfg.max_len - 1:  # the last step may only end
        forbid[:, torch.arange(vocab, device=device) != eos_id] = True
    return forbid


def decoding_view(
    sources: list[list[int]], targets: list[list[int]], *, mask_id: int, pad_id: int
) -> dict[str, torch.Tensor]:
    """Every target position as decoding sees it, in one pass (teacher forcing).

    Each row is ``source y_1..y_T M_1..M_T``: y_i are the gold target tokens (seen as decoding
    caches them: the source and y_1..y_i), and M_t is a ``[MASK]`` at y_t's position that sees
    the source, y_1..y_{t-1} and itself, as the step that predicts y_t does.

    Args:
        sources: ``[CLS] source [SEP]`` ids per example. targets: ``target [SEP]`` ids per example.

    Returns:
        ``input_ids``, ``token_type_ids`` (part: 0 source, 1 target), ``position_ids`` (B, L),
        ``mask`` (B, L, L) bool for :meth:`UniLM.run`, and ``labels`` (B, L): y_t at M_t,
        ``IGNORE_INDEX`` elsewhere.
    """
    width = max(len(s) + 2 * len(t) for s, t in zip(sources, targets))
    b = len(sources)
    ids = torch.full((b, width), pad_id, dtype=torch.long)
    seg, pos = torch.zeros_like(ids), torch.zeros_like(ids)
    labels = torch.full_like(ids, IGNORE_INDEX)
    mask = torch.zeros(b, width, width, dtype=torch.bool)
    for r, (src, tgt) in enumerate(zip(sources, targets)):
        s, n = len(src), len(tgt)
        ids[r, : s + 2 * n] = torch.tensor([*src, *tgt, *[mask_id] * n])
        seg[r, s : s + 2 * n] = 1
        pos[r, : s + n] = torch.arange(s + n)
        pos[r, s + n : s + 2 * n] = torch.arange(s, s + n)
        labels[r, s + n : s + 2 * n] = torch.tensor(tgt)
        mask[r, :, :s] = True  # every query sees the source (padding queries too: no empty row)
        causal = torch.ones(n, n, dtype=torch.bool).tril()
        mask[r, s : s + n, s : s + n] = causal  # y_i sees y_1..y_i
        mask[r, s + n : s + 2 * n, s : s + n] = causal.tril(-1)  # M_t sees y_1..y_{t-1}
        mask[r, s + n : s + 2 * n, s + n : s + 2 * n] = torch.eye(n, dtype=torch.bool)  # and itself
    return {"input_ids": ids, "token_type_ids": seg, "position_ids": pos, "mask": mask, "labels": labels}


@torch.no_grad()
def teacher_forced_states(model: UniLM, view: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """The head's inputs (N, d) at every target position of a :func:`decoding_view`, and the targets (N,)."""
    dev = next(model.parameters()).device
    v = {name: x.to(dev) for name, x in view.items()}
    hidden, _ = model.run(v["input_ids"], v["token_type_ids"], v["position_ids"], v["mask"])
    picked = v["labels"] != IGNORE_INDEX
    return model.transform(hidden[picked]), v["labels"][picked]
