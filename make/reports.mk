# Result pages from the run records (softmax_zoo.reports); included by the Makefile.
#   make tables REPORT=fig2     rebuild results/fig2.md (+ .png) and its rows of results/claims.md
#   make tables                 list the pages
#   make check-pages            rebuild every page into a temporary folder and fail if any differs from results/
#   make sweep SWEEP=<records folder | experiment | multirun folder> [METRIC=test/loss] [DIAGNOSTICS=true]
#                               any sweep as a table + plot of the task's primary_metric (configs/task/*.yaml)
#                               or METRIC; DIAGNOSTICS=true also tabulates the top-k diagnostics, counts, throughput
# Where a reproduction's records and pages go: the committed results/ at cpu and paper scale,
# scratch/ (git-ignored) at smoke scale, so that `make reproduce-* SCALE=smoke` changes nothing committed.
# (The training config makes the same choice: softmax_zoo.config.results_dir.)
#: REPORT=fig2  SWEEP=<folder|experiment|multirun folder>  METRIC=test/loss  DIAGNOSTICS=true  of make tables and make sweep
results_for = $(if $(filter smoke,$(1)),scratch,results)

.PHONY: tables check-pages sweep

tables: setup  ## a page from the run records: make tables REPORT=fig2 (no REPORT: list them)
	$(BIN)/python -m softmax_zoo.reports $(REPORT)

check-pages: setup  ## rebuild every committed page from its records and diff against results/
	$(BIN)/python -m softmax_zoo.reports --check

sweep: setup  ## any sweep as a table (mean ± 95% CI per swept value, seeds pooled) + plot: make sweep SWEEP=scratch/runs/default
	$(BIN)/python -m softmax_zoo.reports sweep $(SWEEP) $(if $(METRIC),metric=$(METRIC)) $(if $(DIAGNOSTICS),diagnostics=$(DIAGNOSTICS))
