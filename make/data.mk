# Data preparation (softmax_zoo.data.prepare; formats in data/README.md).
#   make data                                   every task whose release folder is under $SOFTMAX_ZOO_RAW
#   make data TASK=gigaword DATA_ARGS="train_size=10000"   one task, with task options
#   make data TASK=clinc_oos DATA_ARGS="source=hub variant=oos_plus"   from the hub (needs .[hub] and a network)
# $SOFTMAX_ZOO_RAW defaults to the release folders beside this checkout.
#: TASK=gigaword  DATA_ARGS="train_size=10000"  SOFTMAX_ZOO_RAW=../shared/data  the task, options and release folders of make data
SOFTMAX_ZOO_RAW ?= ../shared/data
TASK ?=
DATA_ARGS ?=

.PHONY: data bench-data

data: setup  ## prepare datasets into data/ (TASK=<task> for one, DATA_ARGS="key=value ..." for options)
	$(BIN)/python -m softmax_zoo.data.prepare $(if $(TASK),$(TASK),all) raw_root=$(SOFTMAX_ZOO_RAW) $(DATA_ARGS)

bench-data: setup  ## streaming lm1b-format preparation benchmark → results/bench_data_cpu.md
	$(BIN)/python scripts/bench_data.py
