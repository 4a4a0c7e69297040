"""The kernel-bias page's choices beside what the review of Blanc & Rendle 2018 states, one column per setting.

The review gives no dataset, model, optimiser, rate, length, α or output bias: every row is
:data:`~._settings.NOT_STATED`, ours read from a setting's records (rows of
:func:`softmax_zoo.reports._settings.settings_rows`; a row that does not apply to a setting reads None).
"""

from __future__ import annotations

from ..records import get
from ._kernel_bias_claims import KERNELS, PAPER_SETTING, sampler_name
from ._render import words
from ._settings import NOT_STATED, Records, Setting, joined, seeds
from ._verdicts import MIN_SEEDS

# The full-softmax learning rates compared for the paper-like setting's plain SGD (ours; 300 steps each); no record keeps
# them. The chosen rate, 20, is the grid's largest: a larger rate was not tried.
SGD_RATE_GRID = (1, 10, 20)


def _grid(records: Records) -> str:
    """sampler: its m values, from the records."""
    grid: dict[str, set[int]] = {}
    for r in records:
        if (name := sampler_name(r)) is not None:
            grid.setdefault(name, set()).add(int(get(r, "config.loss.num_samples")))
    return "; ".join(f"{name} m={', '.join(map(str, sorted(ms)))}" for name, ms in sorted(grid.items()))


def _only(paper_setting: bool, text):
    """A reader for the rows of one setting only: ``text(records)`` there, None in the other."""
    return lambda rs: text(rs) if (rs[0]["experiment"] == PAPER_SETTING) == paper_setting else None


def kernel_bias_settings() -> list[Setting]:
    """The rows of the page's choices: ours per setting, and why ours (templates/_kernel_bias_settings.j2)."""
    why = words("_kernel_bias_settings.j2", MIN_SEEDS=MIN_SEEDS, rate_grid=SGD_RATE_GRID).why

    def optimiser(rs: Records) -> str:
        return f"{get(rs[0], 'config.train.optim') or 'optimiser not recorded'}, lr {joined(rs, 'config.train.lr')}"

    readers = {
        "data and model": lambda rs: f"Penn Treebank, an LSTM of {get(rs[0], 'config.model.hidden_size')} units, BPTT "
                                     f"{get(rs[0], 'config.task.bptt')}, batch {get(rs[0], 'config.train.batch_size')}",
        "m": lambda rs: f"the grid of m ({_grid(rs)})",
        "α": lambda rs: f"α = {joined([r for r in rs if sampler_name(r) in KERNELS], 'config.loss.sampler.alpha')} "
                        "for the kernel α(h·w)² + 1",
        "schedule": lambda rs: f"gradient norm clipped to {get(rs[0], 'config.train.max_grad_norm')}, "
                               f"{rs[0]['timing']['global_steps']} steps, {seeds(rs)}",
        "plain optimiser": _only(True, lambda rs: f"plain {optimiser(rs)}"),
        "no output bias": _only(True, lambda rs: "no output bias"),
        "optimiser": _only(False, lambda rs: f"{optimiser(rs)}, with an output bias"),
        "unigram arm": _only(False, lambda rs: "the unigram arm (training-set word counts)"),
    }
    return [Setting(name, NOT_STATED, read, why[name]) for name, read in readers.items()]
