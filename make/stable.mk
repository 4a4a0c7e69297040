# "A Fix for Softmax and Cross-Entropy": softmax collapse and cancellation, measured in training.
#   make reproduce-stable     modular-addition MLP, 3 seeds, one CPU thread per run:
#                             collapse and KD cancellation (memorise: Adam, no weight decay), the generalising regime
#                             (AdamW, weight decay 1: CE and fresh-student KD), float32 collapse reached (saturate:
#                             Adam β₂ = 0.9, float64 control); forms standard, standard on float32-cast logits, stable
#                             -> results/runs/stable/*.json (a rerun skips finished runs) -> results/stable.md
#   STABLE_ONLY=<study>       one study: collapse, cancellation, generalise or saturate
STABLE_SEEDS ?= 3
STABLE_ONLY ?=

.PHONY: reproduce-stable
reproduce-stable:  ## softmax collapse + KD cancellation study (CPU) -> results/stable.md
	OMP_NUM_THREADS=1 $(BIN)/python -m softmax_zoo.studies.stable out=results/runs/stable seeds=$(STABLE_SEEDS) $(if $(STABLE_ONLY),only=$(STABLE_ONLY))
	$(BIN)/python -m softmax_zoo.reports stable
