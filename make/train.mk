# Training entry point (softmax_zoo.train); included by the Makefile.

.PHONY: train

train: setup  ## one run: make train ARGS="task=clinc_oos loss=sparse_softmax loss.k=20 scale=cpu seed=0"
	$(BIN)/python -m softmax_zoo.train $(ARGS)
