# "A Fix for Softmax and Cross-Entropy": softmax collapse and cancellation, measured in training.
#   make reproduce-stable     modular-addition MLP, 3 seeds, one CPU thread per run:
#                             collapse and KD cancellation (memorise: Adam, no weight decay), the generalising regime
#                             (AdamW, weight decay 1: CE and fresh-student KD), float32 collapse reached (saturate:
#                             Adam β₂ = 0.9, float64 control); forms standard, standard on float32-cast logits, stable
#                             -> results/runs/stable/*.json (a rerun skips finished runs); the fix paper's minimal examples
#                             and equivalence on fixed logits -> results/diagnostics/loss_forms.json; -> results/stable.md
#   STABLE_ONLY=<study>       one study: collapse, cancellation, generalise or saturate
#   make reproduce-stable-kd-ptb   the same KL forms in a training pipeline: self-distillation on Penn Treebank,
#                             a float32 full-softmax teacher, then bfloat16 students with the standard or the stable
#                             KL, KD_SEEDS seeds each -> results/runs/stable_kd_ptb/*.json -> results/stable.md
#: STABLE_SEEDS=3  STABLE_ONLY=collapse  KD_SEEDS=0,1,2  seeds and study of reproduce-stable, students' seeds of reproduce-stable-kd-ptb
STABLE_SEEDS ?= 3
STABLE_ONLY ?=
# Student seeds of the PTB self-distillation, a Hydra sweep list (the teacher is seed 0).
KD_SEEDS ?= 0,1,2

.PHONY: reproduce-stable reproduce-stable-kd-ptb
reproduce-stable:  ## softmax collapse + KD cancellation study (CPU) -> results/stable.md
	OMP_NUM_THREADS=1 $(BIN)/python -m softmax_zoo.studies.stable out=results/runs/stable seeds=$(STABLE_SEEDS) $(if $(STABLE_ONLY),only=$(STABLE_ONLY))
	OMP_NUM_THREADS=1 $(BIN)/python -m softmax_zoo.studies.loss_forms
	$(BIN)/python -m softmax_zoo.reports stable

reproduce-stable-kd-ptb: setup $(LM_DATA)/ptb/meta.json  ## PTB self-distillation, standard vs stable KL in bfloat16 -> results/stable.md
	$(BIN)/python -m softmax_zoo.train experiment=stable_kd_ptb_teacher scale=cpu seed=0
	$(BIN)/python -m softmax_zoo.train -m experiment=stable_kd_ptb distill=standard,stable scale=cpu seed=$(KD_SEEDS)
	$(BIN)/python -m softmax_zoo.reports stable
