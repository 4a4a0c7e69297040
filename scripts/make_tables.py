"""Build a report from the run records: ``python scripts/make_tables.py <report-name>``.

The same as ``python -m softmax_zoo.results <report-name>``: runs
``softmax_zoo.reports.<report-name>.build()``, which writes results/<name>.md (+ .png) and its
rows of results/claims.md. Without an argument, lists the reports.
"""

import sys

from softmax_zoo.results import main

sys.exit(main())
