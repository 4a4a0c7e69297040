"""The kernel-bias page's choices beside what the review of Blanc & Rendle 2018 states, one column per setting.

The review gives no dataset, model, optimiser, rate, length, α or output bias: every row is
:data:`~._settings.NOT_STATED`, ours read from a setting's records (rows of
:func:`softmax_zoo.reports._settings.settings_rows`; a row that does not apply to a setting reads None).
"""

from __future__ import annotations

from ..records import get
from ._kernel_bias_claims import sampler_name
from ._settings import NOT_STATED, Records, Setting, joined
from ._stats import seeds_label

PAPER_SETTING = "kernel_bias_paper"
# The full-softmax learning rates compared for the paper setting's plain SGD (300 steps each); no record keeps
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
    """The rows of the page's choices: ours per setting, and why ours."""
    kernels = ("quadratic", "quadratic_centred")
    return [
        Setting("data and model", NOT_STATED, lambda rs: f"Penn Treebank, an LSTM of {get(rs[0], 'config.model.hidden_size')} units, BPTT "
                f"{get(rs[0], 'config.task.bptt')}, batch {get(rs[0], 'config.train.batch_size')}",
                "a language model small enough to train every sampler × m on a CPU"),
        Setting("m", NOT_STATED, lambda rs: f"the grid of m ({_grid(rs)})",
                "ours, around the review's m ≈ 10–50 and wider for the samplers compared with it"),
        Setting("α", NOT_STATED, lambda rs: f"α = {joined([r for r in rs if sampler_name(r) in kernels], 'config.loss.sampler.alpha')} "
                "for the kernel α(h·w)² + 1", "the review gives no α; it is our configs' value"),
        Setting("schedule", NOT_STATED, lambda rs: f"gradient norm clipped to {get(rs[0], 'config.train.max_grad_norm')}, "
                f"{rs[0]['timing']['global_steps']} steps, {seeds_label(sorted({r['seed'] for r in rs}))}",
                "ours (the review gives no training schedule; the verdicts need 3 seeds)"),
        Setting("optimiser", NOT_STATED, _only(True, lambda rs: f"plain {get(rs[0], 'config.train.optim') or 'optimiser not recorded'}, "
                                                               f"lr {joined(rs, 'config.train.lr')}"),
                "the review names no optimiser; plain SGD gives every coordinate one rate, so nothing rescales the output rows' "
                f"shared direction. The rate is the best of {', '.join(map(str, SGD_RATE_GRID))} over 300 full-softmax steps "
                "(runs not kept as records), the grid's edge: a larger one was not tried"),
        Setting("output bias", NOT_STATED, _only(True, lambda rs: "no output bias"),
                "our reading of the review's \"dot-product final layer between hidden representations and class embeddings\" (it "
                "does not say whether a bias is added); without one the kernel sees exactly the trained logits"),
        Setting("optimiser", NOT_STATED, _only(False, lambda rs: f"{get(rs[0], 'config.train.optim') or 'optimiser not recorded'}, "
                                                                f"lr {joined(rs, 'config.train.lr')}, with an output bias"),
                "the optimiser of our language-model family (Grave et al.'s code), where the kernel ignores the bias"),
        Setting("unigram arm", NOT_STATED, _only(False, lambda rs: "the unigram arm (training-set word counts)"),
                "our reading of the review's \"global popularity\", the static distribution it compares against; the review gives "
                "no number for it"),
    ]
