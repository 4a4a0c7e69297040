"""The kernel-bias page's part on what the text we hold of Blanc & Rendle 2018 (a review of the paper)
states and what we chose: the numbers read from each setting's records; the words in
templates/_kernel_bias_settings.md.j2."""

from __future__ import annotations

from typing import Any

from ..records import get
from ._kernel_bias_claims import sampler_name
from ._settings import joined

# The full-softmax learning rates compared for the paper setting's plain SGD (300 steps each); no record keeps
# them. The chosen rate, 20, is the grid's largest: a larger rate was not tried.
SGD_RATE_GRID = (1, 10, 20)


def _grid(records: list[dict[str, Any]]) -> str:
    """sampler: its m values, from the records."""
    grid: dict[str, set[int]] = {}
    for r in records:
        if (name := sampler_name(r)) is not None:
            grid.setdefault(name, set()).add(int(get(r, "config.loss.num_samples")))
    return "; ".join(f"{name} m={', '.join(map(str, sorted(ms)))}" for name, ms in sorted(grid.items()))


def setting_data(records: list[dict[str, Any]], paper_setting: bool) -> dict[str, Any]:
    """One setting's numbers, read from its records, for its choices in templates/_kernel_bias_settings.md.j2."""
    r0 = records[0]
    return {
        "paper_setting": paper_setting, "hidden": get(r0, "config.model.hidden_size"), "bptt": get(r0, "config.task.bptt"),
        "batch": get(r0, "config.train.batch_size"), "grid": _grid(records),
        "alphas": joined([r for r in records if sampler_name(r) in ("quadratic", "quadratic_centred")], "config.loss.sampler.alpha"),
        "clip": get(r0, "config.train.max_grad_norm"), "steps": r0["timing"]["global_steps"],
        "seeds": sorted({r["seed"] for r in records}), "optim": get(r0, "config.train.optim") or "optimiser not recorded",
        "lr": joined(records, "config.train.lr"), "rate_grid": SGD_RATE_GRID,
    }


def settings_section(settings: dict[str, list[dict[str, Any]]], paper_experiment: str) -> str:
    """Markdown: what the review states, then each setting's choices (``settings``: experiment -> its records)."""
    from ._render import render

    return render("_kernel_bias_settings.md.j2", settings={experiment: setting_data(records, experiment == paper_experiment)
                                                           for experiment, records in settings.items() if records})
