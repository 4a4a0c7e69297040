"""Print the pip arguments that install torch for `make setup`, choosing the build once.

    python scripts/torch_spec.py --version 2.13.0 [--cuda]

--cuda (an NVIDIA driver answers): pip's default Linux wheel, the CUDA build. Otherwise the CPU
wheel from PyTorch's CPU index, if that index answers one request within --timeout seconds; where
it does not (a mirror, an air-gapped cluster) pip would retry it for every package, so this falls
back to the default index at once and says so on stderr. Standard library only: it runs before
the virtual environment has anything installed.
"""

from __future__ import annotations

import argparse
import os
import sys
import urllib.request

CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def index_answers(url: str, timeout_s: float) -> bool:
    """Whether one GET of ``url`` succeeds (HTTP 200) within ``timeout_s``: a refusal, a time-out or
    an error status (a proxy's 403, say) all mean pip would not get its wheels there."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as answer:
            return answer.status == 200
    except (OSError, ValueError):  # URLError and HTTPError are OSErrors
        return False


def torch_spec(version: str, cuda: bool, index: str, timeout_s: float) -> tuple[str, str]:
    """(pip arguments, one line saying which build and why)."""
    if cuda:
        return f"torch=={version}", f"torch {version}: the default index's CUDA build (an NVIDIA driver answers)"
    if index_answers(index, timeout_s):
        return f"torch=={version}+cpu --extra-index-url {index}", f"torch {version}+cpu from {index}"
    return (
        f"torch=={version}",
        f"torch {version} from the default index: PyTorch's CPU index {index} did not answer within {timeout_s:g} s",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", required=True, help="the torch version, e.g. 2.13.0")
    parser.add_argument("--cuda", action="store_true", help="an NVIDIA driver answers: the CUDA build")
    parser.add_argument("--index", default=os.environ.get("TORCH_CPU_INDEX", CPU_INDEX), help="PyTorch's CPU index")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for the index")
    args = parser.parse_args(argv)
    spec, why = torch_spec(args.version, args.cuda, args.index, args.timeout)
    print(f"make setup: {why}", file=sys.stderr)
    print(spec)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
