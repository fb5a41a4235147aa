"""Jupyter notebooks: code cells are scanned; findings say `notebook.ipynb:cell N:line M`."""

from __future__ import annotations

import json

import pytest

from tests.support.corpus import GOOD, by_path, noise, write_tree


def notebook(cells: list[tuple[str, str | list[str]]], **meta) -> bytes:
    out = []
    for kind, src in cells:
        cell = {"cell_type": kind, "metadata": {}, "source": src}
        if kind == "code":
            cell.update(outputs=[], execution_count=None)
        out.append(cell)
    return json.dumps({"cells": out, "metadata": meta or {"kernelspec": {"language": "python"}},
                       "nbformat": 4, "nbformat_minor": 5}).encode()


TRAIN = notebook([
    ("markdown", "# Training\nuse `.cuda()` here"),          # a markdown mention: never a finding
    ("code", ["import torch\n", "from torch import cuda\n"]),  # cell 1 (list-of-lines source)
    ("code", "%matplotlib inline\n!pip install flash-attn\nx = 1\n"),   # cell 2: magics blanked
    ("code", "model = build()\ncuda.synchronize()\nmodel.cuda()"),      # cell 3: line 2 and 3
    ("code", "%%bash\nnvidia-smi\ncuda.synchronize()\n"),           # cell 4: a bash cell, not Python
    ("code", ""),                                                    # cell 5: empty
    ("code", "y = torch.zeros(2, device='cuda')\n"),                # cell 6
])


@pytest.fixture(scope="module")
def notebook_run(tmp_path_factory, scan_json):
    root = write_tree(tmp_path_factory.mktemp("nb"), {
        "train.ipynb": TRAIN,
        "broken_cell.ipynb": notebook([("code", "import torch\n"), ("code", "def f(:\n"),
                                       ("code", "x = 1\ntorch.cuda.synchronize()\n")]),
        "not_json.ipynb": b'{"cells": [',
        "not_a_notebook.ipynb": b"[1, 2, 3]",
        "bad_cells.ipynb": json.dumps({"cells": "code", "nbformat": 4}).encode(),
        "bad_utf8.ipynb": b'{"cells": [], "x": "\xff"}',
        "deep.ipynb": b"[" * 100_000 + b"]" * 100_000,
        **GOOD,
    })
    code, doc, err = scan_json(root)
    return code, by_path(doc), err


def test_notebook_cells_and_lines(notebook_run):
    found = notebook_run[1]["train.ipynb"]
    assert [(f["cell"], f["line"], f["rule"]) for f in found] == [
        (1, 2, "OPS201"), (3, 2, "OPS201"), (3, 3, "OPS105"), (6, 1, "OPS101")]
    assert found[1]["column"] == 1
    assert found[0]["severity"] == "warning"      # `from torch import cuda`: the import, its uses are errors


def test_notebook_location_text(tmp_path, run_cli):
    (tmp_path / "train.ipynb").write_bytes(TRAIN)
    code, out, err = run_cli("scan", str(tmp_path), "--no-fix-check")
    assert "cell 3:line 2" in out, out


def test_a_cell_that_does_not_parse_spares_the_others(notebook_run):
    """A syntax error in one cell is reported on that cell; the other cells are still scanned."""
    found = notebook_run[1]["broken_cell.ipynb"]
    inputs = [f for f in found if f["category"] == "input"]
    assert [(f["cell"], f["line"]) for f in inputs] == [(2, 1)], found
    assert [(f["cell"], f["line"], f["rule"]) for f in found if f["category"] != "input"] == [(3, 2, "OPS201")]


@pytest.mark.parametrize("name", ["not_json.ipynb", "not_a_notebook.ipynb", "bad_cells.ipynb",
                                  "bad_utf8.ipynb", "deep.ipynb"])
def test_malformed_notebooks(notebook_run, name):
    found = notebook_run[1][name]
    assert [f["rule"] for f in found] == ["OPS001"], found
    assert "\n" not in found[0]["message"]


def test_rest_of_run_intact(notebook_run):
    code, found, err = notebook_run
    assert found["good_a.py"] and found["good_b.py"] and code == 1 and noise(err) == []


@pytest.mark.parametrize("fmt", ["sarif", "github"])
def test_notebook_findings_in_sarif_and_github(tmp_path, fmt):
    """A cell's line is not a line of the .ipynb JSON: the message names the cell and line and the
    location is the file itself, never a wrong line of the JSON."""
    import contextlib
    import io

    from opscan.cli import main

    (tmp_path / "train.ipynb").write_bytes(TRAIN)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        main(["check", str(tmp_path), "--no-trace", "--format", fmt])
    text = out.getvalue()
    assert "cell 3, line 2:" in text and "cell 6, line 1:" in text
    if fmt == "sarif":
        results = json.loads(text)["runs"][0]["results"]
        regions = [r["locations"][0]["physicalLocation"]["region"] for r in results]
        assert regions and all(region["startLine"] == 1 for region in regions)
    else:
        located = [line for line in text.splitlines() if line.startswith("::error file=")]
        assert len(located) == 3 and all(",line=1," in line for line in located)
