"""`opscan trace` on the command line: JSON shape, terminal text, exit codes, --output, config."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

pytestmark = pytest.mark.slow


def test_json_ops_shape_and_determinism(run_cli, tmp_path):
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    for path in (first, second):
        code, out, err = run_cli("trace", "examples/models/encoder.py:make_encoder", "--mode", "both",
                                 "--format", "json", "--output", str(path))
        assert code == 0, err
    doc = json.loads(first.read_text())
    assert [o["op"] for o in doc["ops"]] == sorted(o["op"] for o in doc["ops"])
    for entry in doc["ops"]:
        assert {"op", "count", "phases", "dtypes", "sources"} <= set(entry)
        for source in entry["sources"]:
            assert set(source) == {"path", "line", "module"}
    by_op = {o["op"]: o for o in doc["ops"]}
    # the default release's device profile (as `opscan PATH` uses) keeps the encoder off its fused
    # inference fast path, so both modes share the forward ops and only training adds its own
    assert by_op["aten::native_dropout"]["modes"] == ["train"]
    assert sorted(by_op["aten::native_layer_norm"]["modes"]) == ["inference", "train"]
    assert doc["traces"][0]["mode"] == "both" and doc["traces"][0]["complete"] is True
    # byte-stable apart from the measured seconds, which JSON does not carry
    assert first.read_bytes() == second.read_bytes()


def test_terminal_lists_ops_with_sources(run_cli, monkeypatch):
    code, out, _ = run_cli("trace", "examples/models/mlp.py:make_mlp")
    assert code == 0
    assert "aten::gelu_backward" in out
    assert "examples/models/mlp.py:17\n" in out     # at 80 columns: the place, on its own line
    assert "train on neuron" in out
    monkeypatch.setenv("COLUMNS", "160")               # wide: the source column, with the module
    code, out, _ = run_cli("trace", "examples/models/mlp.py:make_mlp")
    assert code == 0 and "examples/models/mlp.py:17 (mlp.act)" in out


def test_partial_trace_exits_1_and_says_where(run_cli):
    code, out, _ = run_cli("trace", "examples/models/custom_ops.py:make_without_fake", "--format", "json")
    assert code == 1
    doc = json.loads(out)
    assert doc["traces"][0]["complete"] is False
    assert doc["traces"][0]["stopped_at"].startswith("opscan_examples::opaque_gelu at examples/models/custom_ops.py:56")
    assert any(o["op"] == "opscan_examples::opaque_gelu" and o["custom"] for o in doc["ops"])


def test_stand_ins_in_json_and_terminal(run_cli):
    code, out, _ = run_cli("trace", "examples/models/data_dependent.py:make_router", "--format", "json")
    assert code == 0
    stand_ins = json.loads(out)["traces"][0]["stand_ins"]
    assert {s["op"] for s in stand_ins} == {"aten::_local_scalar_dense", "aten::nonzero"}
    code, out, _ = run_cli("trace", "examples/models/data_dependent.py:make_router")
    assert "stand-in: aten::nonzero" in out and "data_dependent.py:17" in out


def test_hf_target_with_batch_and_seq_len(run_cli):
    code, out, err = run_cli("trace", "hf:examples/models/hf/gpt2-tiny", "--batch", "1", "--seq-len", "8",
                             "--device", "cpu", "--format", "json")
    assert code == 0, err
    ops = {o["op"] for o in json.loads(out)["ops"]}
    assert {"aten::embedding_dense_backward", "aten::nll_loss_forward", "aten::_foreach_lerp_.Scalar"} <= ops


def test_models_from_pyproject_when_no_target(run_cli, tmp_path, monkeypatch, repo_root):
    pytest.importorskip("opscan.config")
    (tmp_path / "pyproject.toml").write_text(
        "[tool.opscan]\n[[tool.opscan.models]]\n"
        f'target = "{repo_root}/examples/models/mlp.py:TinyMLP"\ninputs = ["x:float32[2,16]"]\n'
        'mode = "inference"\n')
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("trace", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["traces"][0]["mode"] == "inference"
    ops = {o["op"] for o in doc["ops"]}
    # Linear stops at aten::linear when the default release's profile has it native, else decomposes
    assert "aten::gelu" in ops and ({"aten::linear"} <= ops or {"aten::addmm", "aten::t"} <= ops), ops


def test_no_target_and_no_config_is_a_usage_error(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("trace")
    assert code == 2 and "no TARGET" in err


def test_cuda_on_a_cpu_build_is_refused_cleanly(run_cli):
    import torch

    if torch.backends.cuda.is_built():
        pytest.skip("this torch has CUDA built in")
    code, _, err = run_cli("trace", "examples/models/mlp.py:make_mlp", "--device", "cuda")
    assert code == 2 and "CUDA build" in err
