"""The kernel-bias page's choices beside what the review of Blanc & Rendle 2018 states, one column per setting: the review
states none of them (:data:`~._settings.NOT_STATED`); ours are read from a setting's records and worded, with the reasons,
by templates/_kernel_bias_settings.j2."""

from __future__ import annotations

from ..records import get
from ._kernel_bias_claims import KERNELS, PAPER_SETTING, sampler_name
from ._render import words
from ._settings import NOT_STATED, Records, Setting, joined, seeds
from ._verdicts import MIN_SEEDS

# The full-softmax learning rates compared for the paper-like setting's plain SGD (ours; 300 steps each); no record keeps
# them. The chosen rate, 20, is the grid's largest: a larger rate was not tried.
SGD_RATE_GRID = (1, 10, 20)
WORDS = words("_kernel_bias_settings.j2", MIN_SEEDS=MIN_SEEDS, rate_grid=SGD_RATE_GRID)


def ours(records: Records) -> dict[str, object]:
    """The values a setting's column shows: model, the grid of m per sampler, α, schedule, optimiser."""
    grid: dict[str, set[int]] = {}
    for r in records:
        if (name := sampler_name(r)) is not None:
            grid.setdefault(name, set()).add(int(get(r, "config.loss.num_samples")))
    first = records[0]
    return {"hidden": get(first, "config.model.hidden_size"), "bptt": get(first, "config.task.bptt"),
            "batch": get(first, "config.train.batch_size"), "grid": {name: sorted(ms) for name, ms in grid.items()},
            "alpha": joined([r for r in records if sampler_name(r) in KERNELS], "config.loss.sampler.alpha"),
            "clip": get(first, "config.train.max_grad_norm"), "steps": first["timing"]["global_steps"], "seeds": seeds(records),
            "optim": get(first, "config.train.optim"), "lr": joined(records, "config.train.lr"),
            "paper": first["experiment"] == PAPER_SETTING}


def kernel_bias_settings() -> list[Setting]:
    """The rows of the page's choices: ours per setting (None where a row is not that setting's), and why ours."""
    return [Setting(name, NOT_STATED, lambda rs, name=name: str(WORDS.ours(name, ours(rs))) or None, why)
            for name, why in WORDS.why.items()]
