# GPU check: run before any paper-scale job (`make reproduce-table5 SCALE=paper` and the rest).
#   make gpu-check     on a CUDA machine, <= 8 minutes on one GPU: the cuda-marked tests, the GPU rows of
#                      the losses benchmark (float32, bfloat16), and every pipeline at paper settings with a
#                      tiny model (2 optimiser steps + a small evaluation/decode) -> results/gpu_check.md
# Without CUDA it says so in one line and fails (exit status 1).

.PHONY: gpu-check

gpu-check: setup  ## on a CUDA GPU, <= 8 min: cuda tests, GPU bench rows, every pipeline at paper settings -> results/gpu_check.md
	$(BIN)/python scripts/gpu_check.py
