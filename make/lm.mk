# Language modelling: One Billion Word head comparison and the kernel-sampler bias study.
#   make reproduce-lm1b          softmax / adaptive / sampled (quadratic, unigram, uniform) LSTM LMs on lm1b -> results/lm1b.{md,png}
#   make reproduce-lm1b-transformer   the same five heads on a transformer decoder (model=transformer_lm) -> results/lm1b.md
#   make lm1b-speed              the heads' training steps timed side by side, for the page's speed column
#   make lm1b-unigram-baseline   the unigram frequency predictor's perplexity, the floor the page flags heads against
#   make reproduce-kernel-bias   sampler x m sweep on Penn Treebank + full softmax -> results/kernel_bias.{md,png}
#   make sampler-diagnostic CKPT=checkpoints/kernel_bias/ptb_full_softmax_cpu_seed0/checkpoint-400 (or CKPT=init)
#                                KL, loss and gradient bias per sampler x m at that PTB checkpoint
# Sizes (chosen to fit the cpu-scale budget; measured times on the pages) are in the scales.$(LM_SCALE) block of configs/families/lm.yaml
# and the `scales:` blocks of configs/task/{lm1b,ptb}.yaml; LM_SCALE=paper gives the papers' settings (GPU).
#: LM_SCALE=cpu|paper|smoke  LM_SEEDS=0  LM_ARGS="train.max_steps=500"  scale, seeds and extra overrides of the lm1b and kernel-bias targets
LM_SCALE ?= cpu
# Seeds, a Hydra sweep list: LM_SEEDS=0,1,2
LM_SEEDS ?= 0
# Extra overrides for every run, e.g. LM_ARGS="train.max_steps=500" on a busy machine.
LM_ARGS ?=
LM1B_EXPERIMENTS := lm1b_softmax,lm1b_adaptive,lm1b_sampled_quadratic,lm1b_sampled_unigram,lm1b_sampled_uniform
# Where the task configs look for prepared data (task.data_dir), as softmax_zoo.data.prepare writes it.
LM_DATA := $(or $(SOFTMAX_ZOO_DATA),data)

# Options of the diagnostic, e.g. DIAG_ARGS="--draws 32 --batches 4 --out /tmp/diag" (python -m softmax_zoo.studies.sampler_bias --help).
DIAG_ARGS ?=

.PHONY: reproduce-lm1b reproduce-lm1b-transformer lm1b-unigram-baseline reproduce-kernel-bias reproduce-kernel-bias-paper sampler-diagnostic lm1b-speed

$(LM_DATA)/%/meta.json:
	$(MAKE) data TASK=$*

reproduce-lm1b: setup $(LM_DATA)/lm1b/meta.json  ## One Billion Word: full vs adaptive vs sampled softmax -> results/lm1b.md, lm1b.png
	$(BIN)/python -m softmax_zoo.train -m experiment=$(LM1B_EXPERIMENTS) scale=$(LM_SCALE) seed=$(LM_SEEDS) $(LM_ARGS)
	$(BIN)/python -m softmax_zoo.reports lm1b results_dir=$(call results_for,$(LM_SCALE))

# Threads of the transformer runs: one, so that their tokens/s is a one-thread rate (on a shared CPU the
# other cores stay for other jobs); LM1B_TRANSFORMER_THREADS= (empty) lets torch choose.
LM1B_TRANSFORMER_THREADS ?= 1
reproduce-lm1b-transformer: setup $(LM_DATA)/lm1b/meta.json  ## One Billion Word heads on a transformer decoder, the LSTM rows' steps and batches -> results/lm1b.md
	$(if $(LM1B_TRANSFORMER_THREADS),OMP_NUM_THREADS=$(LM1B_TRANSFORMER_THREADS)) $(BIN)/python -m softmax_zoo.train -m experiment=$(LM1B_EXPERIMENTS) model=transformer_lm scale=$(LM_SCALE) seed=$(LM_SEEDS) $(LM_ARGS)
	$(BIN)/python -m softmax_zoo.reports lm1b results_dir=$(call results_for,$(LM_SCALE))

lm1b-unigram-baseline: setup $(LM_DATA)/lm1b/meta.json  ## the unigram frequency predictor's lm1b perplexity -> results/diagnostics/lm1b_unigram_baseline.json (the lm1b page's floor)
	$(BIN)/python -m softmax_zoo.studies.unigram_baseline data_dir=$(LM_DATA)/lm1b

lm1b-speed: setup $(LM_DATA)/lm1b/meta.json  ## lm1b heads' training steps timed side by side -> results/diagnostics/lm1b_speed.json (the lm1b page's speed column)
	$(BIN)/python -m softmax_zoo.studies.lm_speed

reproduce-kernel-bias: setup $(LM_DATA)/ptb/meta.json  ## Blanc & Rendle bias vs m on PTB -> results/kernel_bias.md, kernel_bias.png
	$(BIN)/python -m softmax_zoo.train -m experiment=kernel_bias_full scale=$(LM_SCALE) seed=$(LM_SEEDS) $(LM_ARGS)
	$(BIN)/python -m softmax_zoo.train -m experiment=kernel_bias_sampled scale=$(LM_SCALE) seed=$(LM_SEEDS) $(LM_ARGS)
	$(BIN)/python -m softmax_zoo.reports kernel_bias results_dir=$(call results_for,$(LM_SCALE))

# A paper-like setting, ours (no output bias, plain SGD, 1,200 steps, uniform m up to 2,048): 12 runs, resumable
# (rerun the same command; the kernel runs take most of the time). Then the
# sampler diagnostic on the full-softmax run's checkpoints (init, 400, 1,200 steps).
# The full-softmax run's checkpoints folder, as the configs name it (python -m softmax_zoo.config).
KB_PAPER_CKPT = $(shell $(BIN)/python -m softmax_zoo.config output_dir experiment=kernel_bias_paper_full scale=$(LM_SCALE) seed=0)
reproduce-kernel-bias-paper: setup $(LM_DATA)/ptb/meta.json  ## Blanc & Rendle bias vs m in a paper-like setting (ours) -> results/kernel_bias.md
	$(BIN)/python -m softmax_zoo.studies.kernel_bias_paper scale=$(LM_SCALE) $(LM_ARGS)
	for c in init $(KB_PAPER_CKPT)/checkpoint-400 $(KB_PAPER_CKPT)/checkpoint-1200; do \
	  $(BIN)/python -m softmax_zoo.studies.sampler_bias $$c experiment=kernel_bias_paper_full scale=$(LM_SCALE) \
	    --trained-by "python -m softmax_zoo.train experiment=kernel_bias_paper_full scale=$(LM_SCALE)" $(DIAG_ARGS) || exit 1; \
	done
	$(BIN)/python -m softmax_zoo.reports kernel_bias results_dir=$(call results_for,$(LM_SCALE))

sampler-diagnostic: setup $(LM_DATA)/ptb/meta.json  ## Sampler bias (KL, loss, gradient) at a PTB checkpoint: make sampler-diagnostic CKPT=.../checkpoint-N|init
	$(if $(CKPT),,$(error CKPT is required: a checkpoint-N folder of experiment=kernel_bias_full, or init))
	$(BIN)/python -m softmax_zoo.studies.sampler_bias $(CKPT) experiment=kernel_bias_full scale=$(LM_SCALE) $(LM_ARGS) $(DIAG_ARGS)
