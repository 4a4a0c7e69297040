"""``python -m softmax_zoo.results <page>``: the same as ``python -m softmax_zoo.reports <page>``.

Kept because the committed pages and the claims ledger name this command. Records live in
:mod:`softmax_zoo.records`, the pages and their helpers in :mod:`softmax_zoo.reports`.
"""

import sys

from softmax_zoo.reports.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
