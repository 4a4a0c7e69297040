"""Data preparation: release files or the hub -> ``data/<task>/`` (the contract in :mod:`softmax_zoo.data.layout`).

``python -m softmax_zoo.data.prepare <task|all|list> key=value ...`` (see :mod:`.cli`), or
:func:`prepare_task` from Python. A preparer's public names: :class:`Prepared` (what ``load_local`` returns),
:class:`RawDir` (its release folder) and :func:`register`. One module per dataset loads the release into a
:class:`~.writer.Prepared`, which :mod:`.writer` checks and writes; each registers itself by task
name (:mod:`.registry`), so a new task's preparer is one new module: in this package (with its line
below), or anywhere importable and named in ``$SOFTMAX_ZOO_PREPARERS`` (no line here). The runtime
(:mod:`softmax_zoo.data`) never imports this package.

Modules::

    clinc_oos    OOS-eval / CLINC150 (Larson et al., EMNLP 2019), English intents
    iflytek      IFLYTEK (CLUE; Xu et al., COLING 2020), Chinese app descriptions
    wos          WoS-46985 (Kowsari et al. 2017), English abstracts
    gigaword     Gigaword headline generation (Rush et al. 2015; UniLM Gigaword-10k)
    squad_qg     SQuAD 1.1 question generation, Du et al. (2017) split
    lm_corpora   One Billion Word (lm1b), Penn Treebank, WikiText-2
    generated    generated data for tests and dry runs: the shared generators, and every preparer's ``generate`` (no preparer)
    registry     the preparers by task name; each preparer module registers itself ($SOFTMAX_ZOO_PREPARERS: modules outside)
    cli          prepare_task, prepare_all and the command line
    __main__     ``python -m softmax_zoo.data.prepare``
    raw          a dataset's release folder: its files by name, every file read recorded with sha256
    writer       Prepared and write_prepared: a loaded dataset -> ``data/<task>/``
    io           atomic folder writes, JSON Lines writers, raw lines
    splits       seeded stratified train/validation/test split (for WoS)
"""

from softmax_zoo.data.prepare.cli import main, prepare_all, prepare_task
from softmax_zoo.data.prepare.raw import RawDir
from softmax_zoo.data.prepare.registry import preparers, register
from softmax_zoo.data.prepare.writer import Prepared

__all__ = ["Prepared", "RawDir", "main", "prepare_all", "prepare_task", "preparers", "register"]
