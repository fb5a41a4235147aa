"""The CI examples in docs/ci.md are valid YAML, and every opscan command in the README and docs parses."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from opscan.cli import COMMANDS, DEFAULT_COMMAND, build_parser

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _blocks(name: str, lang: str) -> list[str]:
    path = DOCS.parent / name if name == "README.md" else DOCS / name
    return re.findall(rf"```{lang}\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)


def _opscan_commands(text: str) -> list[list[str]]:
    out = []
    for line in text.splitlines():
        line = line.split(" #", 1)[0]
        for part in re.split(r"&&|;|\|", line):
            if "$(" in part:             # shell substitution: its words are not known here
                continue
            part = re.sub(r"\[--?[^\]]*\]", "", part)       # usage notation: [--flag VALUE]
            part = re.sub(r"(?<!>)>\s*\S+", "", part)         # `> file` redirection
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


# the README keeps one command per job (14); the rest of what it showed is in the pages it links
@pytest.mark.parametrize("doc,least", [("README.md", 14), ("ci.md", 8), ("scan.md", 3), ("trace.md", 3),
                                       ("coverage-db.md", 8), ("zoo.md", 4), ("workflow.md", 8), ("check.md", 4),
                                       ("fix.md", 4), ("run.md", 7)])
def test_every_opscan_command_in_the_docs_parses(doc, least):
    text = "\n".join(_blocks(doc, "yaml") + _blocks(doc, "sh") + _blocks(doc, "console")
                     + _blocks(doc, "bash")).replace("$ opscan", "opscan")
    commands = _opscan_commands(text)
    assert len(commands) >= least, "fewer opscan commands found than the page shows"
    for args in commands:
        args = [a for a in args if a != "$GITHUB_STEP_SUMMARY"]
        if args[0] not in COMMANDS:
            args = [DEFAULT_COMMAND, *args]
        parser = build_parser(args[0])
        parser.parse_args(args)       # raises on an unknown flag or value


# What the walk-throughs of docs/contributing.md create (and revert): not in the tree.
_WALKTHROUGH_FILES = {"rules/semi-structured-sparsity.yaml", "tests/targets/repos/NAME/",
                      "tests/targets/repos/classctor", "tests/targets/repos/classctor/model.py",
                      "coverage_db/torch-neuronx-xla-2.4.0.yaml",
                      "opscan/reporters/tasks_csv.py", "tests/reporters/golden/sample.csv"}


def test_every_path_the_contributor_page_names_exists():
    """Code moves: a path docs/contributing.md names that is gone fails here, not a newcomer's afternoon."""
    text = (DOCS / "contributing.md").read_text(encoding="utf-8")
    paths = set(re.findall(r"(?<![\w./-])((?:opscan|tests|tools|rules|coverage_db|benchmarks|docs|examples)/"
                           r"[\w./-]*[\w/])", text))
    assert len(paths) >= 40 and _WALKTHROUGH_FILES <= paths
    missing = sorted(p for p in paths - _WALKTHROUGH_FILES if not (DOCS.parent / p).exists())
    assert missing == [], f"docs/contributing.md names paths that do not exist: {missing}"


def test_the_readme_fits_one_screen_and_the_index_lists_every_page():
    """README.md stays short (issue 45); every docs page is reachable from docs/index.md."""
    readme = (DOCS.parent / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 150
    assert "](docs/index.md)" in readme
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(([\w-]+\.md)\)", index))
    assert sorted(p.name for p in DOCS.glob("*.md") if p.name != "index.md" and p.name not in linked) == []


@pytest.mark.parametrize("page", ["README.md", "docs/index.md", "docs/install.md", "docs/style.md"])
def test_every_relative_link_resolves(page):
    path = DOCS.parent / page
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8"))
    local = [t for t in targets if "://" not in t]
    assert local, "no relative link found"
    missing = sorted(t for t in local if not (path.parent / t).exists())
    assert missing == [], f"{page} links to what does not exist: {missing}"
