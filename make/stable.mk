# "A Fix for Softmax and Cross-Entropy": softmax collapse and cancellation, measured in training.
#   make reproduce-stable     modular-addition MLP, standard vs stable CE / KD, float32 and bfloat16, 3 seeds
#                             -> results/runs/stable/*.json (a rerun skips finished runs) -> results/stable.md
STABLE_SEEDS ?= 3

.PHONY: reproduce-stable
reproduce-stable:  ## softmax collapse + KD cancellation study (CPU) -> results/stable.md
	$(BIN)/python -m softmax_zoo.studies.stable out=results/runs/stable seeds=$(STABLE_SEEDS)
	$(BIN)/python -m softmax_zoo.reports stable
