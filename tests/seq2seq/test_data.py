"""Token budgets: Gigaword tail truncation, QG answer-centred chunks, drops, and the masking collator."""

import pytest
import torch

from softmax_zoo.data.layout import IGNORE_INDEX
from softmax_zoo.data.seq2seq import (
    Truncation,
    UniLMTrainCollator,
    answer_window,
    encode_question_generation,
    encode_summarisation,
    encode_target,
)
from softmax_zoo.data.tokenizers import minilm_tokenizer


@pytest.fixture(scope="module")
def tok():
    return minilm_tokenizer()


def test_answer_window():
    assert answer_window(10, (7, 9), 4) == (6, 10)  # centred: one token either side
    assert answer_window(10, (0, 1), 4) == (0, 4)  # clamped at the start
    assert answer_window(10, (9, 10), 4) == (6, 10)  # clamped at the end
    assert answer_window(3, (1, 2), 4) == (0, 3)  # fits whole
    with pytest.raises(ValueError, match="answer span of 5 tokens does not fit a window of 4"):
        answer_window(10, (2, 7), 4)


def test_summarisation_truncates_tail_and_counts(tok):
    counts = Truncation()
    src = encode_summarisation(tok, ["one two three four five six", "one two"], 6, counts)
    assert tok.convert_ids_to_tokens(src[0]) == ["[CLS]", "one", "two", "three", "four", "[SEP]"]
    assert len(src[1]) == 4 and counts.source_truncated == 1 and counts.examples == 2
    tgt = encode_target(tok, ["a b c d", "a"], 3, counts)
    assert tok.convert_ids_to_tokens(tgt[0]) == ["a", "b", "[SEP]"] and counts.target_truncated == 1


def test_question_generation_keeps_answer_and_drops_unfindable(tok):
    words = [f"w{i}" for i in range(60)]
    passage = " ".join(words[:50]) + " the red fox " + " ".join(words[50:])
    examples = [
        {"source": passage, "answer": "red fox", "answer_start": passage.index("red fox")},
        {"source": passage, "answer": "red fox", "answer_start": 0},  # wrong offset: the text is found
        {"source": passage, "answer": "blue whale", "answer_start": 3},  # nowhere in the passage
    ]
    counts = Truncation()
    ids, kept = encode_question_generation(tok, examples, 24, counts)
    assert kept == [0, 1]
    assert counts.dropped_answer_not_found == 1 and counts.answer_relocated == 1 and counts.source_truncated == 2
    text = tok.convert_ids_to_tokens(ids[0])
    assert len(ids[0]) <= 24 and text[0] == "[CLS]" and text[-3:] == ["red", "fox", "[SEP]"]
    chunk = text[1 : text.index("[SEP]")]
    assert "red" in chunk and "fox" in chunk  # the answer is inside the passage chunk
    assert ids[0] == ids[1]


def test_collator_masks_only_targets(tok):
    collator = UniLMTrainCollator(vocab_size=100, mask_id=3, pad_id=0, special_ids=[0, 1, 2, 3], mask_prob=0.7, max_pred=5, seed=0)
    examples = [
        {"source_ids": [1, 10, 11, 2], "target_ids": [20, 21, 22, 23, 24, 25, 26, 27, 28, 2], "index": 0},
        {"source_ids": [1, 12, 2], "target_ids": [30, 2], "index": 1},
    ]
    batch = collator(examples)
    assert batch["input_ids"].shape == (2, 14)
    assert batch["token_type_ids"][0].tolist() == [0] * 4 + [1] * 10
    assert batch["attention_mask"][1].tolist() == [1] * 5 + [0] * 9
    picked = batch["labels"] != IGNORE_INDEX
    assert picked.sum(1).tolist() == [5, 1]  # min(max_pred, round(0.7 * 10)); max(1, round(0.7 * 2))
    assert not picked[batch["token_type_ids"] == 0].any()
    original = torch.tensor([1, 10, 11, 2, 20, 21, 22, 23, 24, 25, 26, 27, 28, 2])
    assert torch.equal(batch["labels"][0][picked[0]], original[picked[0]])


def test_collator_masks_are_a_function_of_the_example_and_the_epoch():
    collator = UniLMTrainCollator(vocab_size=1000, mask_id=3, pad_id=0, special_ids=[0, 1, 2, 3], mask_prob=0.5, max_pred=100, seed=0)
    a, b = ({"source_ids": [1, 2], "target_ids": list(range(100 * i, 100 * i + 40)), "index": i} for i in (7, 8))
    alone = collator([a])["labels"][0]
    assert torch.equal(collator([b, a])["labels"][1, : len(alone)], alone)  # not the batch or what was drawn before
    collator.epoch = 1
    assert not torch.equal(collator([a])["labels"][0], alone)  # each epoch its own masks
    collator.epoch, collator.seed = 0, 1
    assert not torch.equal(collator([a])["labels"][0], alone)


def test_collator_replacement_rates():
    collator = UniLMTrainCollator(vocab_size=1000, mask_id=3, pad_id=0, special_ids=[0, 1, 2, 3], mask_prob=1.0, max_pred=1000, seed=1)
    batch = collator([{"source_ids": [1, 2], "target_ids": list(range(100, 600)), "index": 0}])
    inputs, labels = batch["input_ids"][0, 2:], batch["labels"][0, 2:]
    masked = (inputs == 3).float().mean().item()
    kept = (inputs == labels).float().mean().item()
    assert 0.7 < masked < 0.9 and 0.05 < kept < 0.15  # 80% [MASK], 10% unchanged (10% random)


@pytest.mark.parametrize("key, value, message", [
    ("task.max_target_len", 1, "max_target_len must be >= 2, got 1"),
    ("task.max_source_len", 3, "max_source_len must be >= 4, got 3"),
])
def test_a_budget_too_small_for_the_layout_is_refused_before_the_data_is_read(tmp_path, key, value, message):
    from softmax_zoo import config, engine

    cfg = config.compose(["task=gigaword", "scale=smoke", f"task.data_dir={tmp_path / 'absent'}", f"{key}={value}"])
    with pytest.raises(ValueError, match=message):
        engine.build_task(cfg)
