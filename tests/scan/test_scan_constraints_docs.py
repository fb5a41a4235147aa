"""The docs' rows of the table of packages that hold torch back (tools/gather_torch_constraints.py
DOCS_ROWS, NOTE [packages that hold torch back]): the shipped table is what `--docs-only` builds."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _gather():
    spec = importlib.util.spec_from_file_location("gather_torch_constraints",
                                                  ROOT / "tools" / "gather_torch_constraints.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_shipped_table_is_what_the_docs_rows_build():
    gather = _gather()
    shipped = yaml.safe_load((ROOT / "rules" / "data" / "torch-constraints.yaml").read_text(encoding="utf-8"))
    for name in gather.DOCS_ROWS:
        entry = shipped["packages"][name]
        assert gather.reapply_docs(name, entry) == entry, (
            f"{name}: rules/data/torch-constraints.yaml differs from DOCS_ROWS: run "
            "python tools/gather_torch_constraints.py --docs-only")


def test_a_release_whose_metadata_declares_no_torch_takes_what_its_docs_state():
    gather = _gather()
    entry = {"rows": [{"first": "0.13.0", "last": "0.17.0", "torch": "-", "source": "Requires-Dist of a ... b",
                       "releases": ["0.13.0", "0.14.0", "0.14.1", "0.17.0"]}], "cuda_requires": []}
    rows = gather.reapply_docs("torchao", entry)["rows"]
    assert [(r["releases"], r["torch"]) for r in rows] == [
        (["0.13.0", "0.14.0"], "==2.8.0"), (["0.14.1"], "==2.9.0"), (["0.17.0"], ">=2.11.0")]
    assert all(r["source"].startswith("https://github.com/pytorch/ao") for r in rows)
    unknown = {"rows": [{"first": "0.2.0", "last": "0.2.0", "torch": "-", "source": "Requires-Dist of x",
                         "releases": ["0.2.0"]}]}
    assert gather.reapply_docs("torchrec", unknown)["rows"][0]["torch"] == "-"   # no page states it: unknown
