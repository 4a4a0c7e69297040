"""Each family's model contract (softmax_zoo.models.contracts), and README's "Extend it" table against the code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from softmax_zoo.data import layout
from softmax_zoo.data.prepare import writer
from softmax_zoo.losses import SoftmaxHead
from softmax_zoo.losses.machinery.row_loss import RowLoss
from softmax_zoo.losses.parallel.vocab_parallel import ROW_LOSS_VARIANTS, SHARDED_ROWS
from softmax_zoo.models import build_model
from softmax_zoo.models.classifier import TextClassifier
from softmax_zoo.models.contracts import CLASSIFICATION, CONTRACTS, LM
from softmax_zoo.models.lstm_lm import LSTMLanguageModel
from softmax_zoo.models.mlp import MLPClassifier
from softmax_zoo.reports import __main__ as reports_cli
from tests.models.tiny_unilm import tiny_unilm

REPO = Path(__file__).resolve().parents[2]
TEMPLATES = REPO / "src" / "softmax_zoo" / "reports" / "templates"


def make_head(d, weight=None):
    return SoftmaxHead(d, 5, weight=weight)


def extend_table() -> dict[str, str]:
    """README's "Extend it" table: what to add -> its "files to touch" cell."""
    section = (REPO / "README.md").read_text(encoding="utf-8").split("## Extend it", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip("|").split(" | ") for line in section.splitlines() if line.startswith("| ")]
    return {cells[0].strip(): cells[1].strip() for cells in rows[1:]}


def ticked(text: str) -> list[str]:
    """The `backticked` names of ``text``, in order."""
    return re.findall(r"`([^`]+)`", text)


REFERENCE_MODELS = {  # family -> a tiny instance of the model the package ships for it
    "classification": lambda: TextClassifier(make_head, 8),
    "lm": lambda: LSTMLanguageModel(5, make_head, embedding_dim=4, hidden_size=4),
    "seq2seq": tiny_unilm,
    "synthetic": lambda: MLPClassifier(make_head, 3, 5, hidden=4, layers=1),
}


@pytest.mark.parametrize("family", sorted(CONTRACTS))
def test_the_shipped_model_of_each_family_meets_its_contract(family):
    CONTRACTS[family].check_model(REFERENCE_MODELS[family](), "the shipped model")  # raises naming what is missing


def test_a_model_of_another_family_is_refused_naming_each_missing_member():
    cfg = {"_target_": "softmax_zoo.models.mlp.MLPClassifier", "name": "mlp", "hidden": 4, "layers": 1}
    with pytest.raises(ValueError, match=r"does not fit the lm family: it lacks \['vocab_size', 'tokens_trained', "
                                         r"'reset_eval_state', 'exclude_time', 'throughput', 'resume_state', "
                                         r"'load_resume_state'\] \(softmax_zoo.models.contracts.LanguageModel\)"):
        build_model(cfg, make_head, contract=LM, in_features=3, num_classes=5)


def test_a_config_without_the_keys_its_family_reads_is_refused_before_the_model_is_built():
    cfg = {"_target_": "softmax_zoo.models.does_not_exist.Model", "name": "custom", "tokenizer": "char"}
    with pytest.raises(ValueError, match=r"model softmax_zoo.models.does_not_exist.Model \(model=custom\) does not fit "
                                         r"the classification family: its config lacks \['pretrained', 'pooling'\]"):
        build_model(cfg, make_head, contract=CLASSIFICATION, vocab_size=10, pad_id=0)


def test_the_table_lists_each_familys_members_and_config_keys():
    models, configs = extend_table()["a model"].split("`configs/model/<name>.yaml`", 1)
    for contract in CONTRACTS.values():
        part = re.search(rf"{contract.family} \(`{contract.protocol.__name__}`[^)]*\) ([^;.]*)", models)
        assert part is not None, f"the Extend-it table's model row has no {contract.family} ({contract.protocol.__name__})"
        assert tuple(ticked(part.group(1))) == contract.members, contract.family
        keys = re.search(rf"\b{contract.family} ((?:`\w+`(?:, )?)+)(?: \(and ([^)]*)\))?", configs)
        listed = (tuple(ticked(keys.group(1))), tuple(ticked(keys.group(2) or ""))) if keys else ((), ())
        assert listed == (contract.config_keys, contract.optional_keys), contract.family


def test_the_table_names_every_part_of_a_page():
    row = extend_table()["a page"]
    for part in ("reports/<page>.py", "build(results_dir, out)", "HEADLINES", "reports/templates/<page>.md.j2",
                 "reports/__init__.py", "Modules::", "results/<page>.md"):
        assert part in ticked(row), part
    for page in reports_cli.pages():
        module = reports_cli.page_module(page)
        assert callable(module.build) and isinstance(module.HEADLINES, dict), page
        assert (TEMPLATES / f"{page}.md.j2").is_file() and (REPO / "results" / f"{page}.md").is_file(), page


def test_the_table_names_every_part_of_a_data_format():
    row = ticked(extend_table()["a data format"])
    assert {"data/layout.py", "KINDS", "split_file", "data/prepare/writer.py", "_REQUIRED", "write_prepared"} <= set(row)
    assert set(writer._REQUIRED) <= set(layout.KINDS)
    assert set(layout.KINDS) - set(writer._REQUIRED) == {"lm"}  # the one kind with its own branch, as the row says
    for kind in layout.KINDS:
        assert layout.split_file("train", kind).startswith("train.")


def test_the_table_names_the_variant_members_and_the_vocabulary_parallel_registry():
    row = ticked(extend_table()["a softmax variant"])
    for member in ("rows", "grad", "log_probs", "sparse_grad", "has_sparse_grad"):
        assert member in row and hasattr(RowLoss, member), member
    assert "SHARDED_ROWS" in row and "losses/parallel/vocab_parallel.py" in row
    assert set(SHARDED_ROWS) == set(ROW_LOSS_VARIANTS)  # each sharded row loss names its variant


def test_a_classification_model_of_the_table_is_built_through_the_contract():
    cfg = {"_target_": "softmax_zoo.models.classifier.build_text_classifier", "name": "tiny", "pretrained": None,
           "tokenizer": "char", "pooling": "cls", "bert_config": {"hidden_size": 8, "num_hidden_layers": 1,
                                                                  "num_attention_heads": 2, "intermediate_size": 16,
                                                                  "max_position_embeddings": 16}}
    model = build_model(cfg, make_head, contract=CLASSIFICATION, vocab_size=10, pad_id=0)
    hidden = model.hidden(torch.tensor([[1, 2, 3]]))  # (1, 8)
    assert hidden.shape == (1, 8) and model.num_classes == 5
