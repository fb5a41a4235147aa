"""One real, tiny end-to-end run: transformers default config -> real tracer -> real coverage db."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("transformers")


@pytest.mark.slow
def test_zoo_traces_a_real_model_and_reuses_the_cache(run_cli, tmp_path):
    cache = tmp_path / "cache"
    out = tmp_path / "zoo.json"
    args = ("zoo", "hf:gpt2", "--layers", "1", "--workers", "1", "--cache-dir", str(cache), "--quiet",
            "--timeout", "240")
    code, _text, err = run_cli(*args, "--json", str(out), "--html", str(tmp_path / "zoo.html"))
    assert code == 0, err
    data = json.loads(out.read_text())
    (row,) = data["models"]
    assert row["name"] == "gpt2" and row["status"] == "ok", row
    assert row["note"] == "n_layer 12 -> 1"
    assert row["ops"] >= 20 and "aten::mm" in row["op_cells"]
    assert data["meta"]["backend"].startswith("torchneuron==")
    assert data["meta"]["traced"] == 1
    assert 'class="op">aten::mm</th>' in (tmp_path / "zoo.html").read_text()  # a matrix column
    code, _text, err = run_cli(*args, "--json", str(out))
    assert code == 0
    again = json.loads(out.read_text())
    assert again["meta"]["traced"] == 0 and again["meta"]["row_cache"] == 1
    assert again["models"][0]["op_cells"] == row["op_cells"]
