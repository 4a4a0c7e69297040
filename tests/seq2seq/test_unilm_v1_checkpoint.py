"""UniLM v1 checkpoints in their hub layout load as what they are, and train and decode Gigaword.

The layout of microsoft/unilm-base-cased: config.json without model_type (type_vocab_size 6,
layer_norm_epsilon), pytorch_model.bin with BERT names and the MLM head, vocab.txt only (cased).
"""

import random

import pytest
import torch

from softmax_zoo import config, engine
from softmax_zoo.data.prepare.generated import WORDS, summaries, write_pairs
from softmax_zoo.data.tokenizers import vocab_is_cased, wordpiece_from_vocab
from softmax_zoo.losses import SoftmaxHead
from softmax_zoo.models.unilm import build_unilm, load_bert
from softmax_zoo.tasks.seq2seq import load_tokenizer

from ..models.tiny_unilm import write_unilm_v1_checkpoint

SPECIALS = ["[PAD]", "[unused0]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
# A cased vocabulary: each word lower-case and capitalised, and the punctuation of the generated pairs.
TOKENS = [*SPECIALS, ".", *WORDS, *(w.capitalize() for w in WORDS)]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hub") / "unilm-tiny-cased"
    return folder, write_unilm_v1_checkpoint(folder, TOKENS)


def _head(vocab):
    return lambda d, weight=None: SoftmaxHead(d, vocab, weight=weight)


def test_loads_as_bert_with_its_epsilon_segments_and_mlm_head(checkpoint):
    folder, state = checkpoint
    bert = load_bert(str(folder))
    cfg = bert.encoder.config
    assert cfg.layer_norm_eps == 1e-5 and cfg.type_vocab_size == 6 and cfg.vocab_size == len(TOKENS)
    assert bert.fresh == []
    assert torch.equal(bert.transform.dense.weight, state["cls.predictions.transform.dense.weight"])
    assert torch.equal(bert.encoder.embeddings.token_type_embeddings.weight, state["bert.embeddings.token_type_embeddings.weight"])
    model = build_unilm(_head(len(TOKENS)), len(TOKENS), checkpoint=str(folder))
    assert model.segment_ids == (4, 5) and model.fresh == []
    assert torch.equal(model.head.bias, state["cls.predictions.bias"])  # the MLM output bias, not zeros


def test_source_and_target_use_segment_embeddings_4_and_5(checkpoint):
    folder, _ = checkpoint
    model = build_unilm(_head(len(TOKENS)), len(TOKENS), checkpoint=str(folder)).eval()
    ids = torch.tensor([[3, 7, 8, 4, 9, 4]])
    parts = torch.tensor([[0, 0, 0, 0, 1, 1]])
    table = model.encoder.embeddings.token_type_embeddings.weight
    before = model.encode(ids, parts, torch.ones_like(ids))
    with torch.no_grad():
        table[[0, 1, 2, 3]] += 1.0  # segments UniLM's s2s mode never uses
    assert torch.allclose(model.encode(ids, parts, torch.ones_like(ids)), before)
    for row in (4, 5):
        with torch.no_grad():
            table[row] += 1.0
        assert not torch.allclose(model.encode(ids, parts, torch.ones_like(ids)), before)


def test_plain_bert_keeps_segments_0_and_1():
    from ..models.tiny_unilm import tiny_unilm

    assert tiny_unilm().segment_ids == (0, 1)


def test_segment_ids_outside_the_checkpoint_are_refused(checkpoint):
    folder, _ = checkpoint
    with pytest.raises(ValueError, match=r"segment_ids must be 2 ids in \[0, 6\).*\(4, 6\)"):
        build_unilm(_head(len(TOKENS)), len(TOKENS), checkpoint=str(folder), segment_ids=[4, 6])


def test_bare_vocab_gives_a_cased_wordpiece_tokenizer(checkpoint):
    folder, _ = checkpoint
    tok = load_tokenizer(str(folder))
    assert tok.is_fast and len(tok) == len(TOKENS)
    ids = tok("Apple apple [UNK] .", add_special_tokens=False)["input_ids"]
    assert ids == [TOKENS.index("Apple"), TOKENS.index("apple"), TOKENS.index("[UNK]"), TOKENS.index(".")]
    assert tok.convert_tokens_to_string(tok.convert_ids_to_tokens(ids[:2])) == "Apple apple"
    assert (tok.cls_token_id, tok.sep_token_id, tok.mask_token_id, tok.pad_token_id) == (3, 4, 5, 0)
    assert load_tokenizer(str(folder), lowercase=True)("Apple", add_special_tokens=False)["input_ids"] == [TOKENS.index("apple")]


def test_casedness_is_read_from_the_vocabulary(tmp_path):
    assert vocab_is_cased(TOKENS) and not vocab_is_cased([*SPECIALS, "apple", "##s", "."])
    (tmp_path / "vocab.txt").write_text("apple\n[PAD]\n")
    with pytest.raises(ValueError, match=r"lacks the BERT special tokens \['\[UNK\]', '\[CLS\]'"):
        wordpiece_from_vocab(tmp_path / "vocab.txt")


@pytest.mark.parametrize("experiment", ["table5_softmax", "table5_sparse_softmax"])
def test_gigaword_trains_and_decodes_from_the_hub_layout(tmp_path, checkpoint, experiment):
    folder, _ = checkpoint
    rng = random.Random(0)
    rows = summaries(rng, 24)
    rows = [{**r, "target": r["target"].capitalize()} for r in rows]  # cased headlines
    write_pairs(tmp_path / "data", {"train": rows[:16], "test": rows[16:]})
    record = engine.run(config.compose([
        f"experiment={experiment}", "model=unilm_base_cased", f"model.checkpoint={folder}", "scale=smoke",
        f"task.data_dir={tmp_path / 'data'}", f"results_dir={tmp_path / 'results'}", f"output_dir={tmp_path / 'ckpt'}",
        "train.max_steps=2", "train.batch_size=8", "train.save_steps=0", "train.precision=fp32",
    ]))
    info = record["task_info"]
    assert info["fresh_weights"] == [] and info["checkpoint"] == str(folder)
    assert info["segment_ids"] == [4, 5] and info["tokenizer_lowercase"] is False
    assert record["timing"]["global_steps"] == 2
    assert {"test/rouge1_beam1", "test/rouge2_beam5"} <= set(record["metrics"])
    assert record["choices"]["model"] == "unilm_base_cased"


def test_an_encoder_without_mlm_head_loads_quietly_naming_what_starts_fresh(tmp_path, capfd, caplog):
    """all-MiniLM-L6-v2's layout (encoder + pooler, no cls.predictions.*): transformers' load report
    and tied-weights warning stay silent; one line of ours names the fresh parts."""
    from transformers import BertConfig, BertModel
    from transformers.utils import logging as hf_logging

    before = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    bert = BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32)
    BertModel(bert).save_pretrained(tmp_path)
    with caplog.at_level("INFO", logger="softmax_zoo.models.unilm"):
        bert = load_bert(str(tmp_path))
    err = capfd.readouterr().err
    assert "LOAD REPORT" not in err and "corrupted" not in err and "MISSING" not in err, err
    assert bert.bias is None and all(k.startswith("cls.predictions.transform.") for k in bert.fresh) and bert.fresh
    assert [r.getMessage() for r in caplog.records] == [f"loaded {tmp_path}; starts fresh: the LM-head transform and the output bias"]
    assert (hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()) == before  # restored after
