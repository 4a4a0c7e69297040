# GPU check: run before any paper-scale job (`make reproduce-table5 SCALE=paper` and the rest).
#   make gpu-check     on a CUDA machine, <= 8 minutes on one GPU (scripts/gpu_check.py); each part in its own
#                      process, killed at its hard limit, 60 s of the 480 left as slack: the cuda-marked tests
#                      (70 s); the losses benchmark at N=8,192, d=4,096, C=128,000, float32 and bfloat16, our heads
#                      beside Liger-Kernel and cut-cross-entropy (110 s) -> results/bench_losses_cuda.md; the output
#                      heads under autocast at C=32,768 (sampled, bias=false, with the tree's partial refresh;
#                      chunked softmax; the streamed linear KD against float64) (30 s); a paper-scale Table 5
#                      slice, 300 steps with random MiniLM weights, on data/gigaword if prepared, else on
#                      generated pairs of Gigaword's lengths: steps/s, peak memory, the full run's estimated
#                      time (90 s); every pipeline at paper settings with a tiny model on generated data, 2 steps
#                      each (120 s) -> results/gpu_check.md
#   make gpu-wheels    where there is a network: .gpu_wheels/ for an offline GPU machine (scripts/gpu_wheels.sh)
# Without CUDA gpu-check says so in one line and fails (exit status 1).
#
# On the offline H200 (device `run`; 64 MiB carried in all): here, first
#   make gpu-wheels && make data TASK=gigaword DATA_ARGS="train_size=10000"   (the data is optional: see above)
# then run with carry [".gpu_wheels", "data/gigaword"] the command
#   bash scripts/gpu_setup.sh $OUT        (timeout_s 600)
# (scripts/gpu_setup.sh installs the wheels, runs scripts/gpu_check.py, writes the pages and the log's tail to $OUT).

.PHONY: gpu-check gpu-wheels

gpu-check: setup  ## on a CUDA GPU, <= 8 min: cuda tests, large-vocabulary bench, Table 5 slice, every pipeline -> results/gpu_check.md
	$(BIN)/python scripts/gpu_check.py

gpu-wheels:  ## download the wheels an offline GPU machine lacks into .gpu_wheels/ (scripts/gpu_wheels.sh)
	PY=$(if $(wildcard $(BIN)/python),$(BIN)/python,$(PY)) bash scripts/gpu_wheels.sh
