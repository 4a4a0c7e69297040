"""The vocabulary-parallel forms: each rank holds rows [start, stop) of the output weight (torch.distributed).

A variant's sharded row loss registers in :data:`vocab_parallel.SHARDED_ROWS`; the heads and the distillation
losses combine their per-rank statistics by collectives, so no rank holds the (N, C) logits.

Modules::

    vocab_parallel            the output weight's rows split over ranks: VocabShard, the sharded row losses
    vocab_parallel_head       VocabParallelHead: any linear or sampled head on its shard of the vocabulary
    vocab_parallel_kd         the stable distillation loss on sharded student and teacher logits
    vocab_parallel_linear_kd  linear_kd with the classes split over ranks: its row statistics combined by collectives
    vocab_parallel_sampled    a sampled head's negatives drawn once over the whole split vocabulary
"""
