# Training entry point and tables (softmax_zoo.train, softmax_zoo.results); included by the Makefile.

.PHONY: train tables

train: setup  ## one run: make train ARGS="task=clinc_oos loss=sparse_softmax loss.k=20 scale=cpu seed=0"
	$(BIN)/python -m softmax_zoo.train $(ARGS)

tables: setup  ## a report from the run records: make tables REPORT=fig2 (no REPORT: list them)
	$(BIN)/python scripts/make_tables.py $(REPORT)
