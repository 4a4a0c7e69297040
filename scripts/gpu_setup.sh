#!/usr/bin/env bash
# On an offline GPU machine that has torch, transformers, accelerate, triton, sacrebleu,
# sentence-transformers and pytest: install the rest from .gpu_wheels/ (scripts/gpu_wheels.sh,
# run where there is a network), install this package over the existing torch, run the GPU check,
# and copy its pages (and the tail of its log) to DEST:
#
#   bash scripts/gpu_setup.sh [DEST]          # DEST defaults to results/
#
# pyproject's bounds admit the machine's own torch and transformers (torch>=2.6,<2.16,
# transformers>=5.0,<6, requires-python>=3.10), so nothing there is replaced: `--no-deps` installs
# only this package.
# The MiniLM tokenizer comes from .gpu_wheels/minilm ($SOFTMAX_ZOO_MINILM, softmax_zoo.hub); the
# Table 5 slice reads the prepared Gigaword-10k from data/gigaword when it is there.
set -uo pipefail

DEST=${1:-results}
WHEELS=${WHEELS:-.gpu_wheels}
PY=${PY:-python3}
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 WANDB_MODE=disabled PYTHONHASHSEED=0 OMP_WAIT_POLICY=PASSIVE
export SOFTMAX_ZOO_MINILM=${SOFTMAX_ZOO_MINILM:-$PWD/$WHEELS/minilm}
mkdir -p "$DEST"

$PY -m pip install -q --no-index --find-links "$WHEELS" \
    hydra-core omegaconf rouge-score liger-kernel cut-cross-entropy || exit 1
# The editable install needs setuptools>=77 there (no build isolation offline); src/ on PYTHONPATH
# serves the same where it cannot be built.
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH}
$PY -m pip install -q --no-deps --no-build-isolation -e . || echo "gpu-setup: editable install failed; softmax_zoo is read from src/ (PYTHONPATH)"
$PY -c "import torch, transformers, softmax_zoo; print('gpu-setup: torch', torch.__version__, 'CUDA', torch.version.cuda, '| transformers', transformers.__version__, '| GPU:', torch.cuda.is_available() and torch.cuda.get_device_name())"

$PY scripts/gpu_check.py 2>&1 | tee "$DEST/gpu_check.log.full"
status=${PIPESTATUS[0]}
tail -c 2000000 "$DEST/gpu_check.log.full" > "$DEST/gpu_check.log" && rm "$DEST/gpu_check.log.full"
for page in results/gpu_check.md results/bench_losses_cuda.md; do
    [ -f "$page" ] && [ "$DEST" != results ] && cp "$page" "$DEST/"
done
exit "$status"
