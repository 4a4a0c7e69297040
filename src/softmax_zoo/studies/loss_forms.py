"""The loss forms on fixed logits: the fix paper's minimal examples, equivalence and near-identical KD.

    python -m softmax_zoo.studies.loss_forms [out=results/diagnostics/loss_forms.json]

Runs the measurements of :mod:`softmax_zoo.diagnostics.loss_forms` (no model, no training, no seed) and writes
``out`` (JSON, atomically) with the machine, CPU capability, versions, date, command and the code's commit. Errors
at float64's rounding depend on the CPU's vector code, so the stable page reads them from this file instead of
recomputing them: it rebuilds the same on every machine and names the CPU they came from.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..cli_args import ArgumentError, Option, Parser, fail
from ..diagnostics import loss_forms as forms
from ..files import write_text
from ..provenance import measurement_provenance

log = logging.getLogger(__name__)

COMMAND = "python -m softmax_zoo.studies.loss_forms"
OUT = "results/diagnostics/loss_forms.json"
PARSER = Parser(COMMAND, [Option("out", OUT, "the JSON written")], max_positional=0)


def measure() -> dict[str, Any]:
    """Every measurement of :mod:`~softmax_zoo.diagnostics.loss_forms`, its tables as rows (JSON keys are strings)."""
    return {
        "collapse": forms.collapse_example(), "cancellation": forms.cancellation_example(),
        "equivalence": forms.equivalence(),
        "kd_equivalence": [{"scale": s, "temperature": t, **e} for (s, t), e in forms.kd_equivalence().items()],
        "near_identical": [{"dtype": dtype, "delta": delta, **e}
                           for dtype, by_delta in forms.near_identical().items() for delta, e in by_delta.items()],
        "settings": {"seed": forms.EQUIVALENCE_INPUTS_SEED, "equivalence_shape": forms.EQUIVALENCE_SHAPE,
                     "scales": forms.EQUIVALENCE_SCALES, "kd_shape": forms.KD_SHAPE, "temperatures": forms.KD_TEMPERATURES,
                     "near_shape": forms.NEAR_SHAPE, "near_deltas": forms.NEAR_DELTAS},
    }


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        out = Path(PARSER.parse(argv).options["out"])
    except ArgumentError as e:
        return fail(PARSER, e)
    write_text(out, json.dumps(measure() | measurement_provenance(COMMAND, argv), indent=1) + "\n")
    log.info("wrote %s", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
