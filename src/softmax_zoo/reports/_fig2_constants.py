"""Sun et al. 2021's constants the fig2 page's modules share: the arms' config names, the paper's k and task names, the metric."""

from __future__ import annotations

from ..run_record import RunRecord

Groups = dict[tuple, list[RunRecord]]  # arm, (SOFTMAX, None) or (SPARSE, k) -> its records, one per seed

SOFTMAX = "softmax"  # configs/loss/ name of the full-softmax arm
F1 = "test/micro_f1"
PAPER_K = 20  # Sun et al. 2021, Fig. 2: the best k with ~100+ classes, the k of its Fig. 1
TASK_NAMES = {"clinc_oos": "OOS-eval (CLINC150)", "iflytek": "IFLYTEK", "wos": "WoS"}  # as the paper names them
