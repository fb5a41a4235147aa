"""benchmarks/speed and benchmarks/accuracy: each README lists every script and set of its folder,
with where its last result is written in the docs (a page that exists)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.mark.parametrize("folder", ["speed", "accuracy"])
def test_the_readme_lists_every_script_and_set(folder):
    root = BENCHMARKS / folder
    readme = (root / "README.md").read_text(encoding="utf-8")
    entries = sorted(f"`{p.name}/`" if p.is_dir() else f"`{p.name}`" for p in root.iterdir()
                     if (p.suffix == ".py" or (p.is_dir() and p.name != "results"))
                     and not p.name.startswith((".", "_")))
    assert entries
    assert [entry for entry in entries if entry not in readme] == []


@pytest.mark.parametrize("folder", ["speed", "accuracy"])
def test_every_docs_page_the_readme_names_exists(folder):
    readme = (BENCHMARKS / folder / "README.md").read_text(encoding="utf-8")
    pages = set(re.findall(r"docs/[\w-]+\.md", readme))
    assert pages
    assert sorted(p for p in pages if not (BENCHMARKS.parent / p).is_file()) == []
