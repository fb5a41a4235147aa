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


def test_a_docs_row_and_a_metadata_row_stay_apart_and_a_rerun_changes_nothing():
    gather = _gather()
    entry = {"rows": [
        {"first": "2.10.0", "last": "2.10.0", "torch": "==2.10.0", "source": "Requires-Dist of torchaudio-2.10.0-x.whl",
         "releases": ["2.10.0"]},
        {"first": "2.11.0", "last": "2.11.0", "torch": "-", "source": "Requires-Dist of torchaudio-2.11.0-x.whl",
         "releases": ["2.11.0"]},
        {"first": "2.11.1", "last": "2.11.1", "torch": ">=2.11", "source": "Requires-Dist of torchaudio-2.11.1-x.whl",
         "releases": ["2.11.1"]}]}
    once = gather.reapply_docs("torchaudio", entry)
    rows = [(r["releases"], r["torch"], r["source"].split(" ")[0]) for r in once["rows"]]
    # 2.11.0's wheels declare no torch; the installation page's matrix states ">= 2.11" for it
    assert rows == [(["2.10.0"], "==2.10.0", "Requires-Dist"),
                    (["2.11.0"], ">=2.11", "https://docs.pytorch.org/audio/2.11.0/installation.html"),
                    (["2.11.1"], ">=2.11", "Requires-Dist")]
    assert gather.reapply_docs("torchaudio", once) == once


def test_packages_research_repositories_pin_are_gathered():
    gather = _gather()
    shipped = yaml.safe_load((ROOT / "rules" / "data" / "torch-constraints.yaml").read_text(encoding="utf-8"))
    assert "finetuner-commons" in gather.TORCH_BOUND
    for name in gather.TORCH_BOUND:
        assert name in shipped["packages"], f"{name}: run python tools/gather_torch_constraints.py {name}"
    rows = shipped["packages"]["finetuner-commons"]["rows"]
    newest = rows[-1]
    assert "0.13.10" in newest["releases"] and newest["torch"] == "~=2.0.1"
    assert newest["source"].startswith("Requires-Dist of finetuner_commons-")
