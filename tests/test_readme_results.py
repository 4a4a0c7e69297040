"""The README's results numbers are the pages' numbers: a README number that differs from its page fails here.

Scope: the README's "## Use it with Hugging Face models" and "## Results" sections (each up to the next
"## " heading). Each is split into chunks at its "### " headings (the text before the first one is a
chunk too); a chunk's pages are the `results/*.md` files it links to, and each number it reports must
occur in one of them.

Which numbers are checked (the rule):
- Code spans and link targets are not read (commands, paths).
- A number is a maximal run of digits, with optional thousands separators ("32,696") and an optional
  decimal part and exponent ("3.6e-2"). Digits that are part of a name are not numbers: a run preceded
  or followed by a letter or "_", or preceded by "." ("float32", "BLEU-4", "MiniLM-L6-v2", "Ω_20",
  "ROUGE-1.5.5", "e5391a9"), is skipped; "7.6×" and "2-10x" are numbers (a ratio sign is no letter).
- A leading "+", "-", "−" or "–" is the number's sign unless a letter, digit or ")" comes before it
  ("9.7–15.8": a range; "top-20": a name).
- A number is a measurement, and is checked, when it has a decimal part, a thousands separator or an
  exponent, or is followed by "%", "×" or "x" (a range "32–49%" lends its unit to its start), or is a
  plain integer of 3 or more digits (perplexities "879", memory "791", ranks and logit counts "971",
  years "2017").
- Not checked: plain integers of 1 or 2 digits (seeds, epochs, k, m, beam sizes, runs, minutes: the
  settings the README states, and small counts), and the 3+ digit settings in `SETTINGS`.

How a README number matches a page number: "−" (U+2212) and "–" read as "-", "×" as "x", thousands
separators are dropped; a README number with d decimals matches a page number that rounds to it at d
decimals, half up (7.6× matches 7.60x, 83.4 matches 83.42, 879 matches 878.5); a README percentage
also matches a page fraction (77% matches 0.772); a "−" must match a negative page number and a "+" a
non-negative one, an unsigned README number either (the page may write "-0.54" in a column of deltas).

Paper values the README quotes must be on the page too; the ones no page carries are in
`PAPER_QUOTED`, each with where it comes from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
SECTIONS = ("## Use it with Hugging Face models", "## Results")

# Plain integers of 3+ digits that the README states as a run's configuration and its page does not
# print as a number (the others, steps, widths, class counts, are on the pages and are checked).
SETTINGS = {
    "2000",  # lm1b: adaptive softmax cutoffs 2000/10000 (the page does not print them)
    "10000",
}

# Paper values the README quotes that no page carries, each with the paper and table it is from. Empty
# while every quoted paper value (96.1, 60.7, 43.9, 34.21 / 15.28, 22.78, the Δ's +0.67 ...) is on its
# page; `test_paper_quoted_numbers_are_on_no_page` keeps an entry from outliving its need.
PAPER_QUOTED: dict[str, str] = {}

# An exponent has its sign, as Python prints it (6.36e+05): "759e852" is a commit id, not a number.
_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?(?:e[-+−]\d+)?")
_RANGE_END = re.compile(r"–[\d.,]+([%×x])")
_SIGNS = {"+": "+", "-": "-", "−": "-", "–": "-"}
_PAGE_LINK = re.compile(r"\]\((results/[^)#\s]+\.md)\)")
_CODE_OR_LINK = re.compile(r"`[^`]*`|\]\([^)]*\)")


@dataclass(frozen=True)
class Number:
    """One number as written: sign ("+", "-" or ""), digits without separators, decimal places, whether it is checked."""

    sign: str
    digits: str
    decimals: int
    measured: bool
    percent: bool = False

    def __str__(self) -> str:
        return self.sign + self.digits


def numbers_in(text: str) -> list[Number]:
    """Every number in `text` by the module's rule, in order (code spans and link targets removed)."""
    text = _CODE_OR_LINK.sub(lambda m: " " * len(m.group()), text)
    found = []
    for match in _NUMBER.finditer(text):
        start, end = match.span()
        before = text[start - 1] if start else " "
        after = text[end] if end < len(text) else " "
        if before.isalpha() or before in "_." or after.isalpha() and after not in "x×" or after == "_":
            continue  # part of a name
        if after == "." and end + 1 < len(text) and text[end + 1].isdigit():
            continue  # a version "1.5.5"
        sign = ""
        if before in _SIGNS:
            prior = text[start - 2] if start >= 2 else " "
            if not (prior.isalnum() or prior in "_)"):  # "a-b" or "3–5" is a range or a name
                sign = _SIGNS[before]
            elif before in "-–" and prior.isalpha():
                continue  # "BLEU-4", "top-20": a name
        raw = match.group()
        digits = raw.replace(",", "").replace("−", "-")
        mantissa = digits.split("e")[0]
        decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
        range_end = _RANGE_END.match(text, end)  # "32–49%": the range's unit is its start's too
        unit = range_end.group(1) if range_end else after
        marked = decimals or "," in raw or "e" in digits or unit in "%×x"
        measured = bool(marked or len(mantissa) >= 3 and digits not in SETTINGS)
        found.append(Number(sign, digits, decimals, measured, percent=unit == "%"))
    return found


def numbers_in_page(text: str) -> list[Number]:
    """Every number on a page, names included (a page's "LSTM-128" still carries 128)."""
    text = text.replace("−", "-").replace("–", "-")
    found = []
    for match in _NUMBER.finditer(text):
        start = match.start()
        before = text[start - 1] if start else " "
        prior = text[start - 2] if start >= 2 else " "
        sign = "-" if before == "-" and not (prior.isalnum() or prior in "_)") else ""
        raw = match.group()
        digits = raw.replace(",", "")
        mantissa = digits.split("e")[0]
        decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
        found.append(Number(sign, digits, decimals, True))
    return found


def _rounded(value: Decimal, decimals: int) -> Decimal:
    return abs(value).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)


def matches(number: Number, page_numbers: list[Number]) -> bool:
    """Whether a README number is one of the page's, at the README's rounding and sign."""
    target = abs(Decimal(number.digits))
    exact = "e" in number.digits  # "3.6e-2": compare values, not digits
    for page in page_numbers:
        if number.sign == "-" and page.sign != "-" or number.sign == "+" and page.sign == "-":
            continue
        value = Decimal(page.digits)
        candidates = [value] + ([value * 100] if number.percent else [])
        for candidate in candidates:
            if exact:
                if abs(abs(candidate) - target) <= target * Decimal("1e-9"):
                    return True
            elif _rounded(candidate, number.decimals) == target:
                return True
    return False


def chunks(readme: str) -> list[tuple[str, str]]:
    """(heading, text) for each "### " chunk of the checked sections, the text before the first one included."""
    out = []
    for section in SECTIONS:
        start = readme.index(section + "\n")
        end = readme.find("\n## ", start + len(section))
        body = readme[start : end if end != -1 else len(readme)]
        parts = re.split(r"\n(?=### )", body)
        for part in parts:
            out.append((part.splitlines()[0], part))
    return out


def unmatched(text: str, pages_root: Path = REPO) -> tuple[list[str], list[str], int]:
    """(pages linked, README numbers not on any of them, count of numbers checked) for one chunk."""
    pages = sorted(set(_PAGE_LINK.findall(text)))
    page_numbers = [n for page in pages for n in numbers_in_page((pages_root / page).read_text(encoding="utf-8"))]
    checked = [n for n in numbers_in(text) if n.measured and str(n).lstrip("+") not in PAPER_QUOTED]
    return pages, [str(n) for n in checked if not matches(n, page_numbers)], len(checked)


def test_checked_sections_link_their_pages():
    chunk_list = chunks(README.read_text(encoding="utf-8"))
    assert len(chunk_list) >= 8, [h for h, _ in chunk_list]
    for heading, text in chunk_list:
        pages, _, checked = unmatched(text)
        assert not checked or pages, f"{heading!r} reports {checked} numbers but links no results/*.md page"
        for page in pages:
            assert (REPO / page).is_file(), f"{heading!r} links {page}, which is not committed"


@pytest.mark.parametrize(
    "heading, text", chunks(README.read_text(encoding="utf-8")), ids=lambda v: v[:60] if v.startswith("#") else ""
)
def test_readme_numbers_are_on_their_pages(heading, text):
    pages, missing, _ = unmatched(text)
    assert not missing, f"{heading!r}: README numbers on none of {pages}: {missing}"


def test_paper_quoted_numbers_are_on_no_page():
    for heading, text in chunks(README.read_text(encoding="utf-8")):
        pages = sorted(set(_PAGE_LINK.findall(text)))
        page_numbers = [n for page in pages for n in numbers_in_page((REPO / page).read_text(encoding="utf-8"))]
        for number in numbers_in(text):
            if str(number).lstrip("+") in PAPER_QUOTED:
                assert not matches(number, page_numbers), f"{number} is on {pages}: drop it from PAPER_QUOTED"


# A README snippet and its page, as the checked sections have them.
_SNIPPET = """### One Billion Word (see [results/lm1b.md](results/lm1b.md))

| head | test ppl | training-step tokens/s (side by side) | speed-up |
|---|---|---|---|
| softmax | 537.6 | 2,255 | 1.00× |
| adaptive (cutoffs 2000/10000) | **436.1** | 17,136 | **7.60×** |
| sampled, uniform, m=64 | 33,827 | 12,138 | 5.38× |

Adaptive's step was 7.6× faster; the paper's 43.9 needs the full corpus; transformer adaptive 879.
"""


def test_the_unchanged_snippet_passes():
    assert unmatched(_SNIPPET)[1] == []


@pytest.mark.parametrize(
    "old, new",
    [
        ("537.6", "537.7"),  # a decimal
        ("**7.60×**", "**7.70×**"),  # a ratio
        ("7.6×", "7.7×"),  # a rounded ratio
        ("33,827", "33,817"),  # thousands separators
        ("| 2,255 |", "| 2,256 |"),
        ("43.9", "43.8"),  # a paper value the page carries
        ("adaptive 879", "adaptive 878"),  # a plain 3-digit measurement (page 878.5)
        ("| 537.6 |", "| −537.6 |"),  # a sign the page lacks
    ],
)
def test_a_changed_number_fails(old, new):
    assert old in _SNIPPET
    assert unmatched(_SNIPPET.replace(old, new, 1))[1] != []


@pytest.mark.parametrize(
    "old, new",
    [
        ("**7.60×**", "**7.6×**"),  # the README's rounding of the page's 7.60x
        ("537.6", "538"),
        ("33,827", "33827"),
        ("m=64", "m=65"),  # a setting, not checked
    ],
)
def test_a_rounding_or_a_setting_passes(old, new):
    assert unmatched(_SNIPPET.replace(old, new, 1))[1] == []


def test_signs_and_percentages_match_the_page_forms():
    page = numbers_in_page("Δ -0.54 [-0.97, -0.06]; share 0.772; top-20 42.4%")
    assert matches(numbers_in("−0.54")[0], page)
    assert not matches(numbers_in("+0.54")[0], page)
    assert matches(numbers_in("77%")[0], page)  # a share written as a fraction
    assert matches(numbers_in("42.4%")[0], page)
    assert not matches(numbers_in("42.5%")[0], page)


def test_the_rule_skips_names_and_settings():
    text = "float32, BLEU-4, ROUGE-1.5.5, MiniLM-L6-v2, Ω_20, k=20, 3 seeds, cutoffs 2000/10000, `make bench 7.5`, [a](results/x1.25.md)"
    assert [n for n in numbers_in(text) if n.measured] == []
    kept = [str(n) for n in numbers_in("9.7–15.8×, 32–49%, 3.6e-2, −0.00, 971 logits, +0.15 [−0.45, +0.79]") if n.measured]
    assert kept == ["9.7", "15.8", "32", "49", "3.6e-2", "-0.00", "971", "+0.15", "-0.45", "+0.79"]
