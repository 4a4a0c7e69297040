"""softmax_zoo: softmax variants as swappable output heads, and the pipelines that reproduce their papers.

Modules::

    losses        every softmax variant as a function and as an output head, and their registry
    data          runtime data: prepared folders as datasets, collators, tokenizers (data.prepare: preparation)
    models        encoders with any output head, built from the model and loss configs
    tasks         each task family's datasets, collator and evaluation, from the composed config
    diagnostics   measurements of a trained model's output layer (top-k regime, sampled-softmax bias), below tasks
    studies       numerical studies, diagnostics of checkpoints and chains of resumable runs (above the engine)
    reports       result pages built from run records (``python -m softmax_zoo.reports``)
    cli_args      the one command-line parser of the package's entry points
    config        where the configs live, composing them outside ``@hydra.main``, run ids and result folders
    dry_run       every experiment at ``scale=paper`` for a few steps with a tiny model: the overrides
    engine        the training engine: task -> transformers Trainer -> record
    extras        the package's extras (hf, pipelines) and the one-line error naming a missing one
    files         the one atomic writer of every file, file and key fingerprints, content-addressed tensor caches
    trainer       the Trainer subclass, the callbacks every run gets, TrainingArguments from cfg.train
    hf            any Hugging Face language model trained with a softmax_zoo head (``use_head``)
    hub           where pretrained checkpoints and tokenizers come from
    markdown      Markdown tables, shared by the pages and the studies
    memory_plan   a run's device memory by part (weights, optimiser state, the heads' buffers), checked on CUDA before training
    metrics       evaluation metrics, each named as the papers report it
    parallelism   how a run spreads over processes: data-parallel or vocabulary-parallel, one strategy object
    preflight     checks before training: writable outputs, prepared data unchanged, the checkpoint to resume
    progress      progress bars: on at a terminal, off in logs and pipes
    provenance    where a run's numbers come from: the code's commit and changes, the CPU, the versions
    records       run records and prediction files
    run_identity  which keys make a run's identity: the one table run names, resume and the sweep page read
    run_record    the run record typed (RunRecord: its schema, load and save)
    rouge155      ROUGE-1.5.5 (Lin, 2004), the Perl script, run as UniLM's scripts ran it
    timing        side-by-side timing of several steps interleaved in one process
    tracking      experiment tracking (wandb) and the run log
    train         the training entry point ``python -m softmax_zoo.train``
    vocab_parallel_training  train.vocab_parallel: the output head split over torchrun's processes
"""

__version__ = "0.1.0"
