# Text classification: the sparse-softmax Fig. 2 k sweep and the Fig. 1 loss curves.
#   make reproduce-fig2                          OOS-eval + IFLYTEK at cpu scale -> results/fig2.md, fig2.png, fig1.png
#   make reproduce-fig2 SCALE=paper              BERT-base (uncased / Chinese) fine-tuned (GPU; our choice: the paper names no model)
#   make reproduce-fig2 FIG2_TASKS="clinc_oos iflytek wos" FIG2_SEEDS=0,1,2,3,4
# Per task: the softmax baseline once per seed (it has no k), then sparse-softmax over
# k = 5,10,20,50,100 x seeds (configs/experiment/fig2{,_softmax}.yaml with task=<task>); each task's
# numbers per scale are in its `scales:` block (configs/task/<task>.yaml). WoS is not in the default list
# (its `caveat:` in configs/task/wos.yaml says why).
# Set-up and data preparation run first when missing.
#: SCALE=cpu|paper|smoke  scale of reproduce-fig2, -fig2-finetune, -table5, -table3 (+ -init), -sparse-regime (smoke: into scratch/)
#: FIG2_TASKS="clinc_oos iflytek"  FIG2_SEEDS=0,1,2  the tasks and seeds of reproduce-fig2 (-finetune: FIG2_SEEDS)
FIG2_SCALE = $(or $(SCALE),cpu)
FIG2_TASKS ?= clinc_oos iflytek
FIG2_SEEDS ?= 0,1,2
# One BLAS/OpenMP thread per run: on a shared CPU, spinning threads of several processes slow each
# other's small ops by far more than a second thread gains; a GPU run ignores it.
FIG2_THREADS ?= 1
# paper scale: the paper's encoders (the cpu models are each task's default in configs/task/).
FIG2_MODEL_paper_clinc_oos := model=bert
FIG2_MODEL_paper_wos := model=bert
FIG2_MODEL_paper_iflytek := model=bert_chinese

.PHONY: reproduce-fig2

data/clinc_oos/meta.json data/iflytek/meta.json data/wos/meta.json:
	$(MAKE) data TASK=$(patsubst data/%/meta.json,%,$@)

define fig2_task
	OMP_NUM_THREADS=$(FIG2_THREADS) $(BIN)/python -m softmax_zoo.train -m experiment=fig2_softmax task=$(1) scale=$(FIG2_SCALE) seed=$(FIG2_SEEDS) $(FIG2_MODEL_$(FIG2_SCALE)_$(1))
	OMP_NUM_THREADS=$(FIG2_THREADS) $(BIN)/python -m softmax_zoo.train -m experiment=fig2 task=$(1) scale=$(FIG2_SCALE) seed=$(FIG2_SEEDS) $(FIG2_MODEL_$(FIG2_SCALE)_$(1))

endef

reproduce-fig2: setup $(foreach t,$(FIG2_TASKS),data/$(t)/meta.json)  ## sparse-softmax k sweep (Fig. 2) + loss curves (Fig. 1) -> results/fig2.md, fig2.png, fig1.png
	$(foreach t,$(FIG2_TASKS),$(call fig2_task,$(t)))
	$(BIN)/python -m softmax_zoo.reports fig2 results_dir=$(call results_for,$(FIG2_SCALE))

# Fig. 2 on OOS-eval with MiniLM's top layer fine-tuned (model.cache_layers=1) on cached token states of the
# 5 layers below: softmax and k = 5,10,20,50,100 x 3 seeds (configs/experiment/fig2_finetune{,_softmax}.yaml)
# -> the fine-tuned rows of results/fig2.md. Caching the states runs once (data/clinc_oos/features/, 401 MB).
# Measured times per run: the fine-tuned rows' setup line on results/fig2.md.
.PHONY: reproduce-fig2-finetune
reproduce-fig2-finetune: setup data/clinc_oos/meta.json  ## Fig. 2 (OOS-eval) with MiniLM's top layer fine-tuned on cached states -> results/fig2.md
	OMP_NUM_THREADS=$(FIG2_THREADS) $(BIN)/python -m softmax_zoo.train -m experiment=fig2_finetune_softmax scale=$(FIG2_SCALE) seed=$(FIG2_SEEDS)
	OMP_NUM_THREADS=$(FIG2_THREADS) $(BIN)/python -m softmax_zoo.train -m experiment=fig2_finetune scale=$(FIG2_SCALE) seed=$(FIG2_SEEDS)
	$(BIN)/python -m softmax_zoo.reports fig2 results_dir=$(call results_for,$(FIG2_SCALE))
