"""Tasks: each turns the composed Hydra config into a :class:`~softmax_zoo.tasks.base.Task`.

Modules::

    base             Task, Evaluation and Batches: what the engine needs from a task
    classification   text classification (WoS-46985, OOS-eval/CLINC150, IFLYTEK) with any head
    lm               word-level language modelling (lm1b, PTB, WikiText-2) with any head
    seq2seq          Gigaword summarization and SQuAD question generation with UniLM and any head
    synthetic        a generated classification task for tests and smoke runs
"""
