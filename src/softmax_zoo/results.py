"""``python -m softmax_zoo.results <page>``: an alias of ``python -m softmax_zoo.reports <page>``.

The committed pages and the claims ledger were written naming this command, so it keeps working;
the Makefile and the documentation use ``python -m softmax_zoo.reports``. Records live in
:mod:`softmax_zoo.records`, the pages and their helpers in :mod:`softmax_zoo.reports`.
"""

import sys

from softmax_zoo.reports.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
