"""What the language models of the LM pipelines share: a carried context per mode (training,
evaluation), the head on their hidden states, and the training tokens/second they report.

The training context and the token counts are the model's state outside its weights: a checkpoint
keeps them (:meth:`StreamLanguageModel.resume_state`, saved by :class:`softmax_zoo.trainer.ResumeState`),
so that a resumed run reads its next segment from the context an uninterrupted one has and counts
the tokens and the training time of the whole run."""

from __future__ import annotations

import math
import time
from typing import Any

import torch
from torch import nn

from softmax_zoo.data.layout import IGNORE_INDEX


class TokenRate:
    """Training tokens per second, timed between consecutive training forwards.

    The time from the first forward to the last covers every step but the last (its forward,
    backward and update are not yet done), so the tokens of every step but the last are counted.
    Time spent meanwhile on something else (a validation curve point) is taken out with
    :meth:`exclude`. A resumed run starts from the counts of the run's earlier segments
    (:meth:`load_resume_state`); the step before each interruption is then not timed either.
    """

    def __init__(self) -> None:
        self.first: float | None = None
        self.last = 0.0
        self.excluded = 0.0
        self.pending_excluded = 0.0  # counted once the next forward puts it inside the timed window
        self.pending = 0  # tokens of the latest step, counted once the next step starts
        self.timed_tokens = 0
        self.total_tokens = 0
        self.earlier_tokens = 0  # timed tokens and seconds of the run's earlier segments (a resumed run)
        self.earlier_seconds = 0.0

    def update(self, tokens: int) -> None:
        now = time.perf_counter()
        if self.first is None:
            self.first = now
        else:
            self.timed_tokens += self.pending
            self.excluded += self.pending_excluded
            self.last = now
        self.pending_excluded = 0.0
        self.pending = tokens
        self.total_tokens += tokens

    def exclude(self, seconds: float) -> None:
        """Do not count ``seconds`` spent since the last forward (ignored before the first one)."""
        if self.first is not None:
            self.pending_excluded += seconds

    def timed(self) -> tuple[int, float]:
        """Tokens timed and their seconds, over the whole run (earlier segments included)."""
        seconds = 0.0 if self.first is None else self.last - self.first - self.excluded
        return self.earlier_tokens + self.timed_tokens, self.earlier_seconds + seconds

    @property
    def tokens_per_second(self) -> float:
        """nan until two steps have been timed."""
        tokens, seconds = self.timed()
        return tokens / seconds if tokens else float("nan")

    def resume_state(self) -> dict[str, int | float]:
        """The counts a resumed run goes on from: tokens seen, tokens timed and their seconds."""
        tokens, seconds = self.timed()
        return {"total_tokens": self.total_tokens, "timed_tokens": tokens, "timed_seconds": seconds}

    def load_resume_state(self, state: dict[str, int | float]) -> None:
        """Count on from a checkpoint's :meth:`resume_state` (before the first step of the resumed run)."""
        self.total_tokens = int(state["total_tokens"])
        self.earlier_tokens, self.earlier_seconds = int(state["timed_tokens"]), float(state["timed_seconds"])


class StreamLanguageModel(nn.Module):
    """A language model read one BPTT segment of each stream at a time, with a context carried
    from the stream's previous segment (``self.carried[self.training]``: an LSTM's (h, c), a
    transformer's previous window) and an output head ``self.head`` (``make_head``) set by the subclass."""

    head: nn.Module

    def __init__(self) -> None:
        super().__init__()
        self.carried: dict[bool, Any] = {}  # self.training -> the context carried to the next segment
        self.rate = TokenRate()

    def reset_state(self) -> None:
        """Forget the carried context (training and evaluation)."""
        self.carried.clear()

    def reset_eval_state(self) -> None:
        """Forget the evaluation streams' carried context (the training streams' stays)."""
        self.carried.pop(False, None)

    def log_probs(self, hidden: torch.Tensor) -> torch.Tensor:
        """(N, d) hidden states -> (N, V) log-probabilities of the head's inference distribution."""
        return self.head.log_probs(hidden)

    @property
    def tokens_trained(self) -> int:
        """Labelled training tokens seen so far."""
        return self.rate.total_tokens

    def resume_state(self) -> dict[str, Any]:
        """What a checkpoint keeps besides the weights: the training streams' carried context and the token counts."""
        return {"carried": self.carried.get(True), "rate": self.rate.resume_state()}

    def load_resume_state(self, state: dict[str, Any]) -> None:
        """Go on from a checkpoint's :meth:`resume_state`: its carried context (on the model's device) and counts."""
        device = next(self.parameters()).device
        carried = state["carried"]
        if carried is not None:
            self.carried[True] = carried.to(device) if torch.is_tensor(carried) else tuple(t.to(device) for t in carried)
        self.rate.load_resume_state(state["rate"])

    def exclude_time(self, seconds: float) -> None:
        """Leave ``seconds`` spent outside training (e.g. a validation point) out of the tokens/second."""
        self.rate.exclude(seconds)

    def throughput(self) -> dict[str, float]:
        """``train/tokens_per_second`` and ``train/tokens`` once two training steps were timed; else {}."""
        rate = self.rate.tokens_per_second
        if math.isnan(rate):
            return {}
        return {"train/tokens_per_second": rate, "train/tokens": float(self.rate.total_tokens)}

    def output(self, hidden: torch.Tensor, labels: torch.Tensor | None) -> dict[str, torch.Tensor]:
        """``{"hidden": (B, T, d)}`` without labels, else ``{"loss": scalar}``: the head's mean over labelled positions."""
        if labels is None:
            return {"hidden": hidden}
        tokens = int((labels != IGNORE_INDEX).sum())
        if self.training:
            self.rate.update(tokens)
        if tokens == 0:
            # Only padding: under DDP one process's streams can end a few steps before another's.
            # A zero loss that touches every parameter keeps the gradient all-reduce in step.
            return {"loss": sum(p.sum() for p in self.parameters()) * 0.0}
        return {"loss": self.head(hidden, labels)}
