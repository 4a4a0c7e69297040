"""Data preparation: release files or the hub -> ``data/<task>/`` (the contract in :mod:`softmax_zoo.data.layout`).

``python -m softmax_zoo.data.prepare <task|all|list> key=value ...`` (see :mod:`.cli`), or
:func:`prepare_task` from Python. One module per dataset (:mod:`.clinc_oos`, :mod:`.wos`,
:mod:`.iflytek`, :mod:`.gigaword`, :mod:`.squad_qg`; :mod:`.lm_corpora` for lm1b, ptb, wikitext2)
loads the release into a :class:`~.writer.Prepared`, which :mod:`.writer` checks and writes; each
registers itself by task name (:mod:`.registry`), so a new task's preparer is one new module.
The runtime (:mod:`softmax_zoo.data`) never imports this package.
"""

from softmax_zoo.data.prepare.cli import TASKS, main, prepare_all, prepare_task

__all__ = ["TASKS", "main", "prepare_all", "prepare_task"]
