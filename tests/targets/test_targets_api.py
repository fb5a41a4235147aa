"""Targets and their errors: one-line messages, exit code 2; and the API stays as documented."""

from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")

from opscan.errors import TargetError, UsageError
from opscan.targets import trace_target
from opscan.trace.spec import parse_input


def one_line_error(run_cli, *args) -> str:
    code, out, err = run_cli("trace", *args)
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("opscan: error: "), err
    return lines[0]


@pytest.mark.slow
def test_missing_file(run_cli, tmp_path):
    line = one_line_error(run_cli, f"{tmp_path}/nope.py:Model")
    assert "nope.py" in line and "no such file" in line


@pytest.mark.slow
def test_import_error_in_target_names_file_and_line(run_cli, tmp_path):
    (tmp_path / "broken.py").write_text("import torch\n\nimport not_a_module_anywhere\n")
    line = one_line_error(run_cli, f"{tmp_path}/broken.py:Model")
    assert "broken.py:3:" in line and "ModuleNotFoundError" in line


@pytest.mark.slow
def test_syntax_error_in_target(run_cli, tmp_path):
    (tmp_path / "bad.py").write_text("def f(:\n")
    assert "syntax error" in one_line_error(run_cli, f"{tmp_path}/bad.py:f")


@pytest.mark.slow
def test_wrong_name_lists_what_exists(run_cli):
    line = one_line_error(run_cli, "examples/models/mlp.py:Nope")
    assert "'Nope'" in line and "make_mlp" in line


@pytest.mark.slow
def test_unknown_module(run_cli):
    assert "cannot import module" in one_line_error(run_cli, "no_such_pkg_xyz.models:Net")


@pytest.mark.slow
def test_target_without_name(run_cli):
    assert "expected path/to/file.py:NAME" in one_line_error(run_cli, "examples/models/mlp.py")


@pytest.mark.parametrize("spec", ["x", "x:float32", "x:flot[2]", "x:float32[0]", "x:int64[a]"])
def test_bad_input_specs(run_cli, spec):
    line = one_line_error(run_cli, "examples/models/mlp.py:TinyMLP", "--input", spec)
    assert "--input" in line


@pytest.mark.slow
def test_class_without_inputs_asks_for_them(run_cli):
    assert "--input" in one_line_error(run_cli, "examples/models/mlp.py:TinyMLP")


@pytest.mark.slow
def test_factory_that_raises(run_cli, tmp_path):
    (tmp_path / "f.py").write_text("def build():\n    raise ValueError('no config')\n")
    assert "no config" in one_line_error(run_cli, f"{tmp_path}/f.py:build")


@pytest.mark.slow
def test_factory_returning_something_else(run_cli, tmp_path):
    (tmp_path / "f.py").write_text("def build():\n    return 42\n")
    assert "expected an nn.Module" in one_line_error(run_cli, f"{tmp_path}/f.py:build")


@pytest.mark.slow
def test_hf_without_config(run_cli, tmp_path):
    assert "no config.json" in one_line_error(run_cli, f"hf:{tmp_path}")


@pytest.mark.slow
def test_hf_bad_json(run_cli, tmp_path):
    (tmp_path / "config.json").write_text("{not json")
    assert "not valid JSON" in one_line_error(run_cli, f"hf:{tmp_path}")


@pytest.mark.slow
def test_hf_unknown_model_type(run_cli, tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "no-such-arch"}')
    assert "unknown model_type 'no-such-arch'" in one_line_error(run_cli, f"hf:{tmp_path}")


def _timm_importable() -> bool:
    try:
        import timm  # noqa: F401
    except Exception:  # noqa: BLE001
        return False
    return True


@pytest.mark.slow
@pytest.mark.skipif(_timm_importable(), reason="timm imports here: the error path cannot be shown")
def test_timm_missing_gives_install_hint(run_cli):
    line = one_line_error(run_cli, "timm:resnet18")
    assert "timm" in line and "torchvision" in line and "install" in line


@pytest.mark.timm
@pytest.mark.skipif(not _timm_importable(), reason="timm (with torchvision) is not importable")
def test_timm_model_traces():
    trace = trace_target("timm:resnet18", batch=1)
    names = {u.op for u in trace.ops}
    assert trace.complete and "aten::convolution_backward" in names and "aten::nll_loss_forward" in names


def test_input_override_by_name_and_position(tmp_path):
    trace = trace_target("examples/models/mlp.py:TinyMLP", inputs=("x:float32[3,16]",))
    assert "aten::addmm" in {u.op for u in trace.ops}
    trace = trace_target("examples/models/encoder.py:make_encoder", inputs=("0:float64[2,4,32]",),
                         mode="inference", device="cpu")
    fast_path = {u.op: u for u in trace.ops}["aten::_transformer_encoder_layer_fwd"]
    assert "torch.float64" in fast_path.dtypes       # the positional input was replaced


def test_parse_input():
    spec = parse_input("input_ids:int64[2,128]")
    assert (spec.name, spec.dtype, spec.shape) == ("input_ids", "int64", (2, 128))
    assert parse_input("1:bf16[]").position == 1
    with pytest.raises(UsageError):
        parse_input("ids:int64[2,-1]")


def test_bad_api_arguments():
    with pytest.raises(UsageError):
        trace_target("examples/models/mlp.py:make_mlp", mode="training")
    with pytest.raises(UsageError):
        trace_target("examples/models/mlp.py:make_mlp", optimizer="nosuch")
    with pytest.raises(TargetError):
        trace_target("examples/models/mlp.py:missing")


def test_api_signature_is_stable():
    from opscan.targets.loader import trace_target as impl
    from opscan.trace.tracer import trace as engine

    assert list(inspect.signature(engine).parameters) == [
        "target", "build", "mode", "device", "profile", "optimizer", "optimizer_impl", "amp", "inputs",
        "project_root", "fsdp", "steps", "step"]

    params = inspect.signature(impl).parameters
    assert list(params) == ["target", "mode", "device", "profile", "optimizer", "optimizer_impl",
                            "amp", "inputs", "batch", "seq_len", "project_root", "fsdp", "trust_remote_code",
                            "gpu_only", "steps", "call_sites", "step", "built_with"]
    assert params["fsdp"].default is None   # added later: optional, last, keyword-only
    assert params["call_sites"].default == ()   # added later: what the parent read, handed to the child
    assert params["built_with"].default == ()   # added later: what the training command's run built
    assert params["step"].default is None   # added later: the training script's step (issue 42)
    assert params["steps"].default == 1 and inspect.signature(engine).parameters["steps"].default == 1
    assert params["trust_remote_code"].default is False   # added later (model folders with auto_map)
    assert params["gpu_only"].default == ()   # added later (repo: targets: the catalog's CUDA-only packages)
    assert params["mode"].default == "train" and params["device"].default == "neuron"
    assert params["optimizer"].default == "adamw" and params["profile"].default is None


def test_import_without_torch_gives_install_hint():
    code = textwrap.dedent("""
        import sys
        sys.modules["torch"] = None
        try:
            import opscan.trace
        except Exception as exc:
            from opscan.errors import TraceError
            print(type(exc).__name__, isinstance(exc, TraceError), exc)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith("MissingDependencyError True ") and "pip install 'opscan-neuron[trace]'" in out


def test_model_folders_are_read_without_torch(tmp_path):
    """`opscan PATH` classifies a model folder (opscan/targets/folders.py) with no torch installed."""
    (tmp_path / "config.json").write_text('{"model_type": "llama"}')
    code = textwrap.dedent("""
        import sys
        from pathlib import Path
        sys.modules["torch"] = None
        from opscan.targets.discovery import direct
        print(direct(Path(sys.argv[1]), "m").traced)
        try:
            from opscan.targets.loader import trace_target
        except ImportError as exc:
            print(type(exc).__name__)
    """)
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[:2] == ["('hf:m',)", "ModuleNotFoundError"]


def test_relative_hf_target_is_found_in_the_project(tmp_path, monkeypatch):
    project = tmp_path / "project"
    (project / "configs").mkdir(parents=True)
    llama = Path(__file__).resolve().parents[2] / "examples" / "models" / "hf" / "llama-tiny" / "config.json"
    (project / "configs" / "config.json").write_text(llama.read_text())
    monkeypatch.chdir(tmp_path)           # not the project: the path resolves through project_root
    trace = trace_target("hf:configs", mode="inference", project_root=str(project))
    assert trace.complete and "aten::embedding" in {u.op for u in trace.ops}
