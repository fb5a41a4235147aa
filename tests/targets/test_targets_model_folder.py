"""`opscan FOLDER` on a model folder: traced as hf:/timm: with no configuration, remote code refused.

The first test runs as a user would (the trace in its child process); the others trace in-process.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parents[2]
LLAMA = ROOT / "examples" / "models" / "hf" / "llama-tiny"


def _json(run_cli, *args) -> tuple[int, dict, str]:
    code, out, err = run_cli(*args, "--format", "json")
    assert out, err
    return code, json.loads(out), err


@pytest.mark.slow
def test_llama_folder_is_traced_with_no_flags(run_cli, monkeypatch):
    monkeypatch.chdir(ROOT)
    code, report, err = _json(run_cli, "examples/models/hf/llama-tiny")
    assert code == 0, err
    assert [t["target"] for t in report["traces"]] == ["hf:examples/models/hf/llama-tiny"]
    assert report["traces"][0]["complete"] and report["traces"][0]["mode"] == "train"
    ops = {op["op"]: op for op in report["ops"]}
    assert "aten::embedding" in ops and "aten::_foreach_add_.Scalar" in ops     # forward .. optimizer step
    assert all(op["status"] for op in report["ops"])                              # looked up in the db
    assert report["verdict"]["checked"]["ops"] is True
    assert report["verdict"]["kind"] != "unchecked"
    assert report["discovery"]["traced"] == ["hf:examples/models/hf/llama-tiny"]


class _Planted:
    """Unpickling this writes a marker: a checkpoint that must never be loaded."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_config_dtype_is_honoured_and_weights_never_loaded(tmp_path, run_cli):
    folder = tmp_path / "llama-bf16"
    folder.mkdir()
    config = json.loads((LLAMA / "config.json").read_text())
    config["torch_dtype"] = "bfloat16"            # the key older checkpoints carry (newer: "dtype")
    (folder / "config.json").write_text(json.dumps(config))
    # a sharded checkpoint beside it, one shard a pickle that would leave a marker if loaded
    marker = tmp_path / "LOADED"
    (folder / "pytorch_model-00001-of-00002.bin").write_bytes(pickle.dumps(_Planted(marker)))
    (folder / "model-00002-of-00002.safetensors").write_bytes(b"\0" * 64)
    (folder / "model.safetensors.index.json").write_text(json.dumps(
        {"weight_map": {"lm_head.weight": "model-00002-of-00002.safetensors"}}))
    code, report, err = _json(run_cli, str(folder), "--in-process", "--mode", "inference")
    assert code in (0, 1), err
    assert not marker.exists() and report["findings"] == []
    pickle.loads((folder / "pytorch_model-00001-of-00002.bin").read_bytes()).close()
    assert marker.exists()                        # the plant works: loading the shard would have shown
    assert [t["mode"] for t in report["traces"]] == ["inference"]    # --mode reaches a found model
    ops = {op["op"]: op for op in report["ops"]}
    assert "aten::_foreach_add_.Scalar" not in ops
    assert ops["aten::embedding"]["dtypes"] == ["torch.bfloat16", "torch.int64"]   # bf16 weights


def _remote_folder(root: Path, marker: Path) -> Path:
    folder = root / "remote"
    folder.mkdir()
    payload = f"try:\n    open({str(marker)!r}, 'a').write('ran\\n')\nexcept OSError:\n    pass\n"
    (folder / "configuration_tiny.py").write_text(
        payload + "from transformers import PretrainedConfig\n\n"
        "class TinyConfig(PretrainedConfig):\n    model_type = 'tiny-remote'\n\n"
        "    def __init__(self, hidden=8, vocab_size=16, **kwargs):\n"
        "        self.hidden, self.vocab_size = hidden, vocab_size\n        super().__init__(**kwargs)\n")
    (folder / "modeling_tiny.py").write_text(
        payload + "import torch\nfrom transformers import PreTrainedModel\n"
        "from .configuration_tiny import TinyConfig\n\n"
        "class TinyModel(PreTrainedModel):\n    config_class = TinyConfig\n\n"
        "    def __init__(self, config):\n        super().__init__(config)\n"
        "        self.emb = torch.nn.Embedding(config.vocab_size, config.hidden)\n"
        "        self.out = torch.nn.Linear(config.hidden, 2)\n        self.post_init()\n\n"
        "    def forward(self, input_ids, **kwargs):\n        return (self.out(self.emb(input_ids)).tanh(),)\n")
    (folder / "config.json").write_text(json.dumps({
        "model_type": "tiny-remote", "architectures": ["TinyModel"], "hidden": 8, "vocab_size": 16,
        "auto_map": {"AutoConfig": "configuration_tiny.TinyConfig", "AutoModel": "modeling_tiny.TinyModel"}}))
    return folder


@pytest.mark.slow
def test_remote_code_is_not_run_without_trust(tmp_path, run_cli, monkeypatch):
    monkeypatch.setenv("HF_MODULES_CACHE", str(tmp_path / "hf-modules"))
    marker = tmp_path / "RAN"
    folder = _remote_folder(tmp_path, marker)
    code, report, err = _json(run_cli, str(folder), "--in-process")
    assert not marker.exists()
    assert report["traces"] == [] and report["verdict"]["kind"] != "ready"
    assert report["verdict"]["checked"]["ops"] is False
    said = [report["verdict"]["headline"], *report["verdict"]["details"]]     # the verdict says why
    assert any("--trust-remote-code" in d and "auto_map" in d for d in said), report["verdict"]
    assert [c["target"] for c in report["discovery"]["refused"]] == [f"hf:{folder.as_posix()}"]
    # also when the folder is named as a target
    code, out, err = run_cli("trace", f"hf:{folder}")
    assert code == 2 and "--trust-remote-code" in err and not marker.exists()


@pytest.mark.slow
def test_remote_code_runs_in_the_trace_child_when_trusted(tmp_path, run_cli, monkeypatch):
    monkeypatch.setenv("HF_MODULES_CACHE", str(tmp_path / "hf-modules"))
    marker = tmp_path / "RAN"
    folder = _remote_folder(tmp_path, marker)
    code, report, err = _json(run_cli, str(folder), "--trust-remote-code")
    assert report["traces"] and report["traces"][0]["complete"], err
    ops = {op["op"] for op in report["ops"]}
    assert {"aten::embedding", "aten::tanh", "aten::tanh_backward"} <= ops
    # it ran (aten::tanh is its forward's), in the contained child: its write outside was refused
    assert not marker.exists()
    code, out, err = run_cli("trace", f"hf:{folder}", "--trust-remote-code", "--mode", "inference",
                             "--format", "json")
    assert code == 0, err
    assert "aten::tanh" in {op["op"] for op in json.loads(out)["ops"]}


def test_timm_folder_target_needs_timm_or_says_so(tmp_path, run_cli):
    """Main environment: no timm, so the folder is found and the trace says what to install."""
    try:
        import timm  # noqa: F401
        pytest.skip("timm imports here: see test_timm_folder_traces")
    except Exception:  # noqa: BLE001 - timm raises various errors when torchvision is absent
        pass
    folder = tmp_path / "resnet"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"architecture": "resnet18", "num_classes": 10}))
    code, report, err = _json(run_cli, str(folder), "--in-process")
    assert report["discovery"]["traced"] == [f"timm:{folder.as_posix()}"]
    assert "timm" in err and code == 2


@pytest.mark.timm
def test_timm_folder_traces(tmp_path):
    pytest.importorskip("timm", exc_type=ImportError)
    from opscan.targets import trace_target

    folder = tmp_path / "resnet"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({
        "architecture": "resnet18", "num_classes": 10,
        "pretrained_cfg": {"input_size": [3, 64, 64]}}))
    trace = trace_target(f"timm:{folder}", mode="inference", batch=1)
    assert trace.complete and "aten::convolution" in {u.op for u in trace.ops}
