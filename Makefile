# softmax_zoo: every command a user needs. `make help` lists them.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# CPU wheel of torch; GPU users: use environment.yml (conda) or TORCH_SPEC="torch==2.13.0 --index-url ...".
TORCH_SPEC ?= torch==2.13.0
export HF_HUB_OFFLINE ?= 1
export HF_DATASETS_OFFLINE ?= 1
# WANDB_MODE is left unset: logger=wandb logger.mode=offline|online|disabled decides (logger=none, the default, logs nothing).
export PYTHONHASHSEED ?= 0
# Idle OpenMP threads sleep instead of spinning: on a shared 2-core machine spinning threads made
# small ops up to ~10x slower (tree sampling at C=500k: 0.75 s passive vs 7-9 s active).
export OMP_WAIT_POLICY ?= PASSIVE

.PHONY: help setup test test-all bench data clean

help:  ## list the commands
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-22s %s\n", $$1, $$2}'

$(BIN)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q "$(TORCH_SPEC)"
	$(BIN)/pip install -q -e ".[test]"
	touch $@

setup: $(BIN)/.installed  ## create .venv and install the package with its test extras

test: setup  ## the fast suite (what CI runs)
	$(BIN)/python -m pytest -q

test-all: setup  ## every test, slow ones included
	$(BIN)/python -m pytest -q -m ""

bench: setup  ## losses benchmark → results/bench_losses_<device>.md
	$(BIN)/python scripts/bench_losses.py

clean:  ## remove the venv and caches (prepared data and results stay)
	rm -rf $(VENV) .pytest_cache

# Task-specific targets (data, reproductions) live beside their pipelines.
-include make/*.mk
