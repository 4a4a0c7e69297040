# When does sparse-softmax help? (results/sparse_helps.md): a fixed random teacher over 200 classes at the
# temperatures that put 35% ... 99% of its mass inside its top 20 (the dial); at each level and seed, students of one
# size trained from one initialisation on one stream of batches with softmax and with sparse-softmax (k=20, k=5), and
# the +init arms continuing the seed's softmax student; one CPU thread per run, records -> results/runs/sparse_helps
# (a rerun skips finished runs); the page places the Table 5, Table 3, regime-study and Fig. 2 runs on its curve.
#: SPARSE_HELPS_SEEDS=3  how many seeds (0 .. N-1) reproduce-sparse-helps runs
SPARSE_HELPS_SEEDS ?= 3
.PHONY: reproduce-sparse-helps
reproduce-sparse-helps: setup  ## controlled study: Δ (sparse − softmax) against the share of targets in Ω_k -> results/sparse_helps.md (+ .png)
	OMP_NUM_THREADS=1 $(BIN)/python -m softmax_zoo.studies.sparse_helps out=results/runs/sparse_helps seeds=$(SPARSE_HELPS_SEEDS)
	$(BIN)/python -m softmax_zoo.reports sparse_helps
