# Result pages from the run records (softmax_zoo.reports); included by the Makefile.
#   make tables REPORT=fig2     rebuild results/fig2.md (+ .png) and its rows of results/claims.md
#   make check-pages            rebuild every page into a temporary folder and fail if any differs from results/

.PHONY: tables check-pages

tables: setup  ## a page from the run records: make tables REPORT=fig2 (no REPORT: list them)
	$(BIN)/python -m softmax_zoo.reports $(REPORT)

check-pages: setup  ## rebuild every committed page from its records and diff against results/
	$(BIN)/python -m softmax_zoo.reports --check
