# Cross-entropy's logit gradient against float64 at confident predictions ("A Fix for Softmax and Cross-Entropy").
#   make precision            the target-logit and whole-row gradient errors for p_t from 0.9 to 1 - 1e-6, in float32,
#                             bfloat16 and float16 autocast, for torch's F.cross_entropy / F.linear_cross_entropy and our
#                             softmax, stable and sparse heads, whole and chunked (CPU, one thread, under a minute)
#                             -> results/diagnostics/grad_precision.json -> results/grad_precision.md (+ .png)
#: PRECISION_CLASSES=32000  PRECISION_SEEDS=5  classes a row and generator seeds of make precision
PRECISION_CLASSES ?= 32000
PRECISION_SEEDS ?= 5

.PHONY: precision
precision: setup  ## gradient precision vs float64 per head and precision -> results/grad_precision.md
	OMP_NUM_THREADS=1 $(BIN)/python -m softmax_zoo.studies.grad_precision classes=$(PRECISION_CLASSES) seeds=$(PRECISION_SEEDS)
	$(BIN)/python -m softmax_zoo.reports grad_precision
