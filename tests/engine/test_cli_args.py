"""The shared key=value parser of the entry points (softmax_zoo.cli_args): types, errors, rest, dashed options, usage."""

import pytest

from softmax_zoo.cli_args import ArgumentError, Option, Parser

PARSER = Parser("python -m tool", [
    Option("repeats", 100, "timed rounds", minimum=1),
    Option("lr", 0.1, "learning rate"),
    Option("fast", False, "skip the slow part"),
    Option("ks", [20, 100], "k of each arm", minimum=1),
    Option("names", ["a", "b"], "names"),
    Option("mode", "local", "where from", choices=("local", "hub")),
    Option("threads", None, "threads", kind=int),
], synopsis="<task>", rest="overrides")


def test_values_take_the_type_of_their_default():
    args = PARSER.parse(["repeats=3", "lr=1e-3", "fast=yes", "ks=5,10", "names=x", "mode=hub", "threads=2", "task"])
    assert args.options == {"repeats": 3, "lr": 1e-3, "fast": True, "ks": [5, 10], "names": ["x"], "mode": "hub", "threads": 2}
    assert args.positional == ["task"] and args.rest == []


def test_defaults_fill_what_is_not_given_and_other_keys_are_the_rest():
    args = PARSER.parse(["model=unilm_tiny", "loss.k=5"])
    assert args["repeats"] == 100 and args["threads"] is None and args["ks"] == [20, 100]
    assert args.rest == ["model=unilm_tiny", "loss.k=5"]
    assert PARSER.parse(["threads="])["threads"] is None  # empty: the option stays unset


@pytest.mark.parametrize("argv, message", [
    (["repeats=x"], "repeats='x': must be an integer >= 1"),
    (["repeats=0"], "repeats='0': must be >= 1"),
    (["lr=fast"], "lr='fast': must be a number"),
    (["fast=maybe"], "fast='maybe': must be true or false"),
    (["ks=5,x"], "ks='x': must be an integer >= 1"),
    (["mode=ftp"], r"mode='ftp': must be one of \['local', 'hub'\]"),
    (["=3"], "arguments must be key=value, got '=3'"),
])
def test_a_bad_value_is_named(argv, message):
    with pytest.raises(ArgumentError, match=message):
        PARSER.parse(argv)


def test_without_a_rest_an_unknown_key_lists_the_valid_ones():
    strict = Parser("python -m tool", [Option("out", "x")], max_positional=0)
    with pytest.raises(ArgumentError, match=r"unknown option 'outt'; valid: \['out'\]"):
        strict.parse(["outt=y"])
    with pytest.raises(ArgumentError, match=r"arguments must be key=value, got \['y'\]"):
        strict.parse(["y"])


def test_dashed_options_leave_every_key_value_to_the_rest():
    dashed = Parser("python -m tool", [Option("seed", 0), Option("samples", [8]), Option("trained_by", None, kind=str)],
                    rest="overrides", dashed=True)
    args = dashed.parse(["ckpt", "seed=3", "--seed", "1", "--samples", "4", "16", "x=1", "--trained-by", "a b=c", "--seed=2"])
    assert args.options == {"seed": 2, "samples": [4, 16], "trained_by": "a b=c"}
    assert args.positional == ["ckpt"] and args.rest == ["seed=3", "x=1"]
    with pytest.raises(ArgumentError, match="--seed needs a value"):
        dashed.parse(["--seed"])


def test_help_lists_every_option_with_its_default(capsys):
    with pytest.raises(SystemExit) as stop:
        PARSER.parse(["--help"])
    assert stop.value.code == 0
    usage = capsys.readouterr().out
    assert usage.startswith("usage: python -m tool <task> [option=value ...] [<overrides> ...]")
    assert "repeats" in usage and "timed rounds (default: 100)" in usage
    assert "ks                     k of each arm (default: 20,100)" in usage
    assert "where from (one of local, hub; default: local)" in usage and "threads                threads\n" in usage + "\n"
