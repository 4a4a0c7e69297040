"""Prepare datasets into data/<task>/: a thin wrapper of ``python -m softmax_zoo.data.prepare``.

Usage: ``python scripts/prepare_data.py <task|all|list> [raw_dir=PATH] [source=local|hub] [key=value ...]``
(see softmax_zoo/data/prepare/cli.py and data/README.md).
"""

import sys

from softmax_zoo.data.prepare import main

if __name__ == "__main__":
    sys.exit(main())
