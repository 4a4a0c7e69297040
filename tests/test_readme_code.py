"""Every code block of README.md runs as written.

- Each ```python block is executed as it stands. The names it uses but leaves to the reader (``d``,
  ``hidden``, ``model``, ...) come from :func:`prelude`, tiny and random; only those are defined.
  ``from_pretrained("path/to/model")`` of the transformers auto classes builds a tiny random model
  (tests/hf/conftest.py's configs) instead of loading one.
- Each command line of a ```bash block or of an indented block: ``python -m softmax_zoo.train
  <overrides>`` composes (Hydra, :func:`softmax_zoo.config.compose`; a sweep's first values), any
  other ``python -m softmax_zoo.<module>`` answers ``--help``, and ``make <target>`` names a target
  of the Makefile. Nothing is trained. The bash blocks of "Extend it" need the reader's own files:
  the extension tests run them whole, as written (tests/conftest.py's ``run_readme_recipe``).

The blocks are read from README.md each run, so blocks added later are covered without editing this file.
"""

from __future__ import annotations

import ast
import builtins
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import transformers
from torch import nn

from softmax_zoo.config import compose
from tests.hf.conftest import batch, make_model

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
COMMAND = re.compile(r"^(python -m softmax_zoo\.|make )")
PLACEHOLDER = "path/to/"  # a README's stand-in for the reader's own model folder
AUTO_MODELS = {"AutoModelForCausalLM": "llama", "AutoModelForMaskedLM": "bert"}
RECIPES = "## Extend it"  # the heading of the section whose blocks the extension tests run


def blocks(language: str) -> list[tuple[int, str]]:
    """(line number, text) of every fenced block of ``language`` in README.md."""
    text = README.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 1, m.group(2)) for m in FENCE.finditer(text) if m.group(1) == language]


def recipe_lines() -> range:
    """The line numbers of README's "Extend it" section, whose bash blocks the extension tests run whole, in a
    folder of the reader's files (tests/conftest.py's ``run_readme_recipe``), so they are not composed here."""
    lines = README.read_text(encoding="utf-8").splitlines()
    start = lines.index(RECIPES) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return range(start + 1, end + 1)


def command_lines() -> list[tuple[int, str]]:
    """(line number, command) of each ``python -m softmax_zoo.…`` or ``make …`` line of a bash or indented block
    outside :func:`recipe_lines`."""
    found = [(start + i + 1, line.strip()) for start, text in blocks("bash") + blocks("sh")
             for i, line in enumerate(text.splitlines())]
    outside = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), README.read_text(encoding="utf-8"))
    found += [(i + 1, line.strip()) for i, line in enumerate(outside.splitlines()) if line.startswith("    ")]
    return sorted((n, line) for n, line in found if COMMAND.match(line) and n not in recipe_lines())


def free_names(source: str) -> set[str]:
    """The names ``source`` reads but neither assigns, imports nor defines (nor are builtins)."""
    tree = ast.parse(source)
    loaded, bound = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return loaded - bound - set(dir(builtins))


def prelude() -> dict[str, object]:
    """What the README leaves to the reader, tiny: d = 32, C = 100 classes, N = 24 rows, a tiny random model's batch."""
    torch.manual_seed(0)
    d, C, N = 32, 100, 24
    input_ids, labels = batch("llama")
    return {
        "d": d, "C": C, "vocab_size": C, "pad_id": 0,
        "model": SimpleNamespace(embed=nn.Embedding(C, d)),  # the reader's model, with its input embedding
        "hidden": torch.randn(N, d, requires_grad=True), "target": torch.randint(0, C, (N,)),
        "weight": torch.randn(C, d, requires_grad=True), "counts": torch.arange(C, 0, -1).double(),
        "logits": torch.randn(N, C), "student_logits": torch.randn(N, C), "teacher_logits": torch.randn(N, C),
        "input_ids": input_ids, "labels": labels,
    }


@pytest.fixture
def tiny_from_pretrained(monkeypatch):
    """``AutoModelFor*.from_pretrained("path/to/…")`` builds the tiny random model of that kind."""
    for auto, arch in AUTO_MODELS.items():
        def from_pretrained(path, *args, _arch=arch, **kwargs):
            assert str(path).startswith(PLACEHOLDER), f"the README loads {path!r}, not a placeholder path"
            return make_model(_arch, dtype=torch.float32)
        monkeypatch.setattr(getattr(transformers, auto), "from_pretrained", from_pretrained)


def test_the_readme_has_code_blocks_and_commands():
    assert len(blocks("python")) >= 2 and len(command_lines()) >= 3
    assert {"hidden", "model", "d"} <= free_names(blocks("python")[0][1])
    assert free_names("import torch\nx = torch.ones(n)\nprint([y for y in x])") == {"n"}


@pytest.mark.parametrize("line, source", blocks("python"), ids=[f"README.md:{n}" for n, _ in blocks("python")])
def test_a_python_block_runs_as_written(line, source, tiny_from_pretrained):
    given = prelude()
    missing = free_names(source) - given.keys()
    assert not missing, f"README.md line {line}: the block uses {sorted(missing)}; define them in prelude()"
    namespace = {name: given[name] for name in free_names(source)}
    exec(compile(source, f"README.md:{line}", "exec"), namespace)


def make_targets() -> set[str]:
    """Every target GNU make knows from the Makefile (its database, ``make -pRrq``; nothing is run)."""
    database = subprocess.run(["make", "-pRrq", ":"], cwd=ROOT, capture_output=True, text=True).stdout
    return {m.group(1) for m in re.finditer(r"^([A-Za-z0-9][\w.-]*):(?!=)", database, re.M)}


def overrides_of(args: list[str]) -> list[str]:
    """Hydra overrides of a command's arguments, flags dropped and a sweep's values cut to its first."""
    return [arg if "=" not in arg else arg.split(",")[0] for arg in args if not arg.startswith("-")]


@pytest.mark.parametrize("line, command", command_lines(), ids=[f"README.md:{n}" for n, _ in command_lines()])
def test_a_command_line_composes_or_names_a_target(line, command):
    words = shlex.split(command, comments=True)
    if words[0] == "make":
        targets = [w for w in words[1:] if "=" not in w and not w.startswith("-")]
        unknown = set(targets) - make_targets()
        assert targets and not unknown, f"README.md line {line}: make has no target {sorted(unknown)}"
        return
    module = words[2]
    if module == "softmax_zoo.train":
        cfg = compose(overrides_of(words[3:]))
        assert cfg.run_name, f"README.md line {line}"
    else:
        done = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"README.md line {line}: {module} --help failed: {done.stderr[-500:]}"


def test_a_bad_command_fails_the_checks():
    with pytest.raises(Exception):
        compose(overrides_of(["loss=no_such_loss"]))
    assert "no-such-target" not in make_targets() and "test" in make_targets()


def quoted_errors(text: str) -> list[tuple[str, str]]:
    """``(command, error)`` pairs of README's sentence on bad values: "`<overrides>`: `<what it prints>`"."""
    sentence = text[text.index("A bad value prints its message"):].split("HYDRA_FULL_ERROR", 1)[0]
    return [(" ".join(c.split()), " ".join(e.split())) for c, e in re.findall(r"`([^`]+)`: `([^`]+)`", sentence)]


@pytest.mark.parametrize("command, error", quoted_errors(README.read_text(encoding="utf-8")))
def test_the_readme_quotes_the_errors_the_program_prints(command, error, tmp_path):
    done = subprocess.run([sys.executable, "-m", "softmax_zoo.train", *shlex.split(command), f"hydra.run.dir={tmp_path}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "WANDB_MODE": "disabled", "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 1 and error in " ".join(done.stderr.split()), done.stderr


def test_the_readme_quotes_four_errors():
    assert len(quoted_errors(README.read_text(encoding="utf-8"))) == 4
