"""Sparse-softmax Table 3 (``make reproduce-table3``): SQuAD 1.1 question generation (Du et al. 2017's split), corpus
BLEU-1..4 (unsmoothed) and ROUGE-L at beam 1 of UniLM fine-tuned with softmax vs sparse-softmax (:class:`._seq2seq.Table`)."""

from ._seq2seq import Table

TABLE3 = Table(
    "table3", "squad_qg", ("bleu1", "bleu2", "bleu3", "bleu4", "rougeL"),
    # Sun et al. 2021, Table 3: sparse − softmax, BLEU-1..4, beam 1.
    paper={1: {"bleu1": 0.90, "bleu2": 0.62, "bleu3": 0.80, "bleu4": 0.82}},
    # UniLM v1 (Dong et al. 2019) on Du et al.'s split: github.com/microsoft/unilm, unilm-v1/README.md, its SQuAD question-generation table.
    unilm={"bleu4": 22.78, "rougeL": 51.57}, unilm_beam=1,
    claim="Table 3 of Sun et al.: sparse-softmax above softmax",
    claim_key="{metric}",
)
summarise, build = TABLE3.summarise, TABLE3.build
HEADLINES = {"table3": "table3_cpu+init_bleu4"}  # README.md's status table: the row heading the experiment
