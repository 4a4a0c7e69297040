"""``python -m softmax_zoo.data.prepare``: see :mod:`softmax_zoo.data.prepare.cli`."""

import sys

from softmax_zoo.data.prepare.cli import main

sys.exit(main())
