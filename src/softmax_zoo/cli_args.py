"""The one command-line parser of the package's entry points: typed options, ``key=value`` like Hydra overrides.

A command declares its options once, each with a default whose type is the option's type::

    PARSER = Parser("python -m softmax_zoo.studies.lm_speed", [
        Option("repeats", 100, "timed rounds", minimum=1),
        Option("experiments", ["lm1b_softmax", "lm1b_adaptive"], "experiments to time"),
        Option("threads", None, "torch threads (default: torch's)", kind=int, minimum=1),
    ], rest="overrides")
    args = PARSER.parse(["repeats=20", "model=small"])
    args["repeats"], args.rest          # 20, ["model=small"]

- ``name=value`` sets an option; the text becomes the default's type: bool (true/false, yes/no,
  1/0), int, float, str, or a list (comma-separated items of the first default item's type).
  A bad value raises :class:`ArgumentError` naming the option, the value and what it must be.
- A ``key=value`` whose key is not an option is kept in ``rest`` when the parser has one (the
  commands that hand Hydra overrides on), else an error listing the valid options.
- ``dashed=True``: the options are spelled ``--name value`` (``--trained-by`` for ``trained_by``)
  (the next token, whatever it holds) and a list option takes every following token up to the next
  ``--`` option or ``key=value``;
  every ``key=value`` then goes to ``rest``, so that option names may equal Hydra keys (``seed``).
- Arguments without "=" are positional (``args.positional``); the command checks their number.
- ``--help`` / ``-h`` prints :meth:`Parser.usage` (synopsis, then each option, its choices and default)
  and exits 0.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

TRUE, FALSE = ("true", "yes", "1"), ("false", "no", "0")


class ArgumentError(ValueError):
    """A command line that does not fit the command's options (the message says which argument and why)."""


@dataclass(frozen=True)
class Option:
    """One option: its name, its default (whose type is the option's, unless ``kind`` says), a help line.

    ``kind`` is needed only when the default is None (an option with no value unless given);
    ``minimum`` bounds an int or float (each item of a list); ``choices`` lists the valid strings.
    """

    name: str
    default: Any
    help: str = ""
    kind: type | None = None
    minimum: float | None = None
    choices: tuple[str, ...] = ()

    @property
    def type(self) -> type:
        return self.kind or (type(self.default) if self.default is not None else str)

    def convert(self, text: str | Sequence[str]) -> Any:
        """``text`` (one string, or the tokens of a dashed list option) as the option's type."""
        if issubclass(self.type, (list, tuple)):
            item = type(self.default[0]) if self.default else str
            tokens = [text] if isinstance(text, str) else list(text)
            return [self._scalar(t, item) for token in tokens for t in token.split(",") if t]
        if not isinstance(text, str):
            if len(text) != 1:
                raise ArgumentError(f"{self.name} takes one value, got {list(text)}")
            text = text[0]
        if text == "" and self.default is None:
            return None
        return self._scalar(text, self.type)

    def _scalar(self, text: str, kind: type) -> Any:
        if kind is bool:
            if text.lower() not in TRUE + FALSE:
                raise ArgumentError(f"{self.name}={text!r}: must be true or false")
            return text.lower() in TRUE
        if kind in (int, float):
            try:
                value = kind(text)
            except ValueError:
                noun = "an integer" if kind is int else "a number"
                raise ArgumentError(f"{self.name}={text!r}: must be {noun}"
                                    + (f" >= {self.minimum:g}" if self.minimum is not None else "")) from None
            if self.minimum is not None and value < self.minimum:
                raise ArgumentError(f"{self.name}={text!r}: must be >= {self.minimum:g}")
            return value
        if self.choices and text not in self.choices:
            raise ArgumentError(f"{self.name}={text!r}: must be one of {list(self.choices)}")
        return text

    def spelled(self, dashed: bool) -> str:
        return f"--{self.name.replace('_', '-')}" if dashed else self.name


@dataclass
class Arguments:
    """A parsed command line: the options (defaults filled, by name), the positional arguments, the rest."""

    options: dict[str, Any]
    positional: list[str] = field(default_factory=list)
    rest: list[str] = field(default_factory=list)

    def __getitem__(self, name: str) -> Any:
        return self.options[name]


@dataclass(frozen=True)
class Parser:
    """The options of one command (see the module docstring).

    Args:
        prog: the command as typed (``python -m softmax_zoo.studies.stable``), for usage and errors.
        options: its options.
        synopsis: the positional part of the usage line (``<page>``, ``CHECKPOINT``).
        rest: what the other ``key=value`` arguments are (``overrides``); empty: they are errors.
        dashed: options spelled ``--name value``.
        max_positional: how many arguments without "=" the command takes (None: any number, the
            command checks them); 0 makes every argument ``key=value``.
    """

    prog: str
    options: Sequence[Option]
    synopsis: str = ""
    rest: str = ""
    dashed: bool = False
    max_positional: int | None = None

    def by_name(self) -> dict[str, Option]:
        return {o.name: o for o in self.options}

    def defaults(self) -> dict[str, Any]:
        return {o.name: o.default for o in self.options}

    def usage(self) -> str:
        """The synopsis line, then one line per option: its spelling, default and help."""
        head = " ".join(x for x in (f"usage: {self.prog}", self.synopsis,
                                    f"[{'--option value' if self.dashed else 'option=value'} ...]",
                                    f"[<{self.rest}> ...]" if self.rest else "") if x)
        lines = [head, "options:"]
        for o in self.options:
            default = ",".join(map(str, o.default)) if isinstance(o.default, (list, tuple)) else o.default
            notes = ([f"one of {', '.join(o.choices)}"] if o.choices else []) + ([] if o.default is None else [f"default: {default}"])
            lines.append(f"  {o.spelled(self.dashed):22s} {o.help}" + (f" ({'; '.join(notes)})" if notes else ""))
        return "\n".join(lines)

    def parse(self, argv: Sequence[str]) -> Arguments:
        """Parse ``argv``; raises :class:`ArgumentError`; ``--help`` prints the usage and exits 0."""
        argv = list(argv)
        if "--help" in argv or "-h" in argv:
            print(self.usage())
            raise SystemExit(0)
        known = self.by_name()
        values, args = self.defaults(), Arguments({})
        for name, text in self._pairs(argv, args):
            if name not in known:
                raise ArgumentError(f"{self.prog}: unknown option {name!r}; valid: {list(known)}")
            try:
                values[name] = known[name].convert(text)
            except ArgumentError as e:
                raise ArgumentError(f"{self.prog}: {e}") from None
        args.options = values
        if self.max_positional is not None and len(args.positional) > self.max_positional:
            extra = args.positional[self.max_positional:]
            raise ArgumentError(f"{self.prog}: arguments must be key=value, got {extra}" if not self.max_positional
                                else f"{self.prog}: takes {self.max_positional} argument(s) without '=', got {args.positional}")
        return args

    def _pairs(self, argv: list[str], args: Arguments) -> Iterator[tuple[str, str | list[str]]]:
        """(name, text) of each option given; fills ``args.positional`` and ``args.rest`` on the way."""
        i = 0
        while i < len(argv):
            arg = argv[i]
            i += 1
            if self.dashed and arg.startswith("--"):
                name, eq, text = arg[2:].partition("=")
                name = name.replace("-", "_")
                if eq:
                    yield name, text
                    continue
                option = self.by_name().get(name)
                many = option is not None and isinstance(option.default, (list, tuple))
                tokens = []
                while i < len(argv) and not argv[i].startswith("--") and (not many or "=" not in argv[i]) and (many or not tokens):
                    tokens.append(argv[i])
                    i += 1
                if not tokens:
                    raise ArgumentError(f"{self.prog}: --{arg[2:]} needs a value")
                yield name, tokens
            elif "=" in arg:
                name, _, text = arg.partition("=")
                if not name:
                    raise ArgumentError(f"{self.prog}: arguments must be key=value, got {arg!r}")
                if self.rest and (self.dashed or name not in self.by_name()):
                    args.rest.append(arg)
                else:
                    yield name, text
            else:
                args.positional.append(arg)


def fail(parser: Parser, error: Exception) -> int:
    """Print ``error`` and the parser's usage to stderr; the exit status of a bad command line (2)."""
    print(f"{error}\n{parser.usage()}", file=sys.stderr)
    return 2
