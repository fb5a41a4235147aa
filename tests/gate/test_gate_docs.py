"""The CI examples in docs/ci.md are valid YAML and every opscan command in them parses."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from opscan.cli import COMMANDS, DEFAULT_COMMAND, build_parser

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _blocks(name: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", (DOCS / name).read_text(encoding="utf-8"), flags=re.S)


def _opscan_commands(text: str) -> list[list[str]]:
    out = []
    for line in text.splitlines():
        line = line.split(" #", 1)[0]
        for part in re.split(r"&&|;|\|", line):
            words = shlex.split(part.replace(">>", " ").replace('"$GITHUB_STEP_SUMMARY"', ""))
            if words and words[0] in ("-", "run:"):
                words = words[1:]
            if words and words[0] == "run:":
                words = words[1:]
            if len(words) >= 2 and words[0] == "opscan":
                out.append(words[1:])
    return out


def test_ci_yaml_examples_load():
    blocks = _blocks("ci.md", "yaml")
    assert len(blocks) >= 3
    for block in blocks:
        assert yaml.safe_load(block)


@pytest.mark.parametrize("doc", ["ci.md", "check.md", "config.md"])
def test_every_opscan_command_in_the_docs_parses(doc):
    text = "\n".join(_blocks(doc, "yaml") + _blocks(doc, "sh"))
    commands = _opscan_commands(text)
    if doc == "ci.md":
        assert len(commands) >= 8
    for args in commands:
        args = [a for a in args if a != "$GITHUB_STEP_SUMMARY"]
        if args[0] not in COMMANDS:
            args = [DEFAULT_COMMAND, *args]
        parser = build_parser(args[0])
        parser.parse_args(args)       # raises on an unknown flag or value
