"""The table of docs/reliability.md ("Which commands run project code") and the code stay in step:
every command that runs project code is listed as contained, and has the containment flags."""

from __future__ import annotations

import re
from pathlib import Path

from opscan.cli import build_parser
from opscan.containment import PARTS, PROJECT_CODE_COMMANDS, READ_ONLY_COMMANDS

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _table(text: str, heading: str) -> list[list[str]]:
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|") and not line.startswith("|--")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[1:]]


def test_the_docs_table_lists_exactly_the_commands_that_run_project_code():
    rows = _table((DOCS / "reliability.md").read_text(encoding="utf-8"), "## Which commands run project code")
    commands = {re.sub(r"`([^`]*)`.*", r"\1", row[0]): row[1] for row in rows}
    assert {c for c, runs in commands.items() if runs.startswith("**yes")} == set(PROJECT_CODE_COMMANDS)
    assert {c for c, runs in commands.items() if runs.startswith("never")} == set(READ_ONLY_COMMANDS)


def test_every_command_that_runs_project_code_has_the_containment_flags():
    for words in PROJECT_CODE_COMMANDS.values():
        parser = build_parser(words[0])
        action = next(a for a in parser._subparsers._group_actions[0].choices.items() if a[0] == words[0])[1]
        if len(words) > 1:
            action = action._subparsers._group_actions[0].choices[words[1]]
        flags = {opt for a in action._actions for opt in a.option_strings}
        assert {"--pass-env", "--require-containment", "--scratch-size", "--allow-read", "--max-processes"} <= flags, \
            words


def test_the_platform_table_names_every_part():
    rows = _table((DOCS / "reliability.md").read_text(encoding="utf-8"), "## What the containment holds, by platform")
    assert [row[0] for row in rows[: len(PARTS)]] == [f"{part}" for part in PARTS]
