# softmax_zoo: every command a user needs. `make help` lists them.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# torch for `make setup`, the version CI tests. Where `nvidia-smi` runs (an NVIDIA driver is present):
# pip's default Linux wheel, the CUDA build (CUDA runtime as nvidia-* wheels); elsewhere the CPU
# wheel from PyTorch's CPU index when that index answers within 5 s, else the default index
# (scripts/torch_spec.py probes it once and says which). TORCH_SPEC="<pip arguments>" overrides
# both, e.g. TORCH_SPEC="torch==2.13.0 --index-url https://download.pytorch.org/whl/cu128".
TORCH_VERSION := 2.13.0
HAS_NVIDIA := $(shell nvidia-smi >/dev/null 2>&1 && echo yes)
TORCH_SPEC ?= $(shell $(PY) scripts/torch_spec.py --version $(TORCH_VERSION) $(if $(HAS_NVIDIA),--cuda))
CHECK_CUDA_TORCH = $(BIN)/python -c "import torch; assert torch.cuda.is_available(), 'nvidia-smi runs but torch ' + torch.__version__ + ' sees no CUDA GPU: set TORCH_SPEC'"
# The hub is reached where the user has a network (UniLM's checkpoint, the Gigaword hub fallback download on
# first use); offline only where asked (HF_HUB_OFFLINE=1 make ...) or where huggingface_hub finds no network and
# reads its cache. The tests never need the hub and set both themselves (TEST_ENV).
TEST_ENV := HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
# WANDB_MODE is left unset: logger=wandb logger.mode=offline|online|disabled decides (logger=none, the default, logs nothing).
export PYTHONHASHSEED ?= 0
# Idle OpenMP threads sleep instead of spinning: on a shared machine spinning threads slow small ops.
export OMP_WAIT_POLICY ?= PASSIVE

.PHONY: help setup lint test test-all bench data clean

help:  ## list the commands, then the variables they take (the `#: ` lines of make/*.mk)
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-22s %s\n", $$1, $$2}'
	@echo "variables (make <target> NAME=value):"
	@grep -h '^#: ' $(MAKEFILE_LIST) | sed 's/^#: /  /'

$(BIN)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q $(TORCH_SPEC)
	$(BIN)/python -c "import torch; print('make setup: installed torch', torch.__version__, '(CUDA ' + str(torch.version.cuda) + ')')"
	$(BIN)/pip install -q -e ".[test]"
	$(if $(HAS_NVIDIA),$(CHECK_CUDA_TORCH))
	touch $@

setup: $(BIN)/.installed  ## create .venv and install the package with its test extras (CUDA torch where nvidia-smi runs)

lint: setup  ## ruff: pyflakes, pycodestyle errors and import order (pyproject.toml [tool.ruff]); CI runs it before the tests
	$(BIN)/ruff check src tests scripts

test: setup  ## the fast suite (what CI runs)
	$(TEST_ENV) $(BIN)/python -m pytest -q

test-all: setup  ## every test, slow ones included
	$(TEST_ENV) $(BIN)/python -m pytest -q -m ""

bench: setup  ## losses benchmark → results/bench_losses_<device>.md
	$(BIN)/python scripts/bench_losses.py

clean:  ## remove the venv and caches (prepared data and results stay)
	rm -rf $(VENV) .pytest_cache

# Task-specific targets (data, reproductions) live beside their pipelines.
-include make/*.mk
