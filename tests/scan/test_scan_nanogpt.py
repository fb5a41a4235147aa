"""The shipped example project: the scan reports every planted case and nothing else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "nanogpt"

# Every CUDA pin planted in examples/nanogpt: (rule, path, line).
PLANTED = [
    ("OPS309", "csrc/fused_gelu.cpp", 12),          # TORCH_LIBRARY + TORCH_LIBRARY_IMPL(..., CUDA, ...)
    ("OPS308", "csrc/fused_gelu_kernel.cu", 1),     # a CUDA source file
    ("OPS305", "ops/fused_gelu.py", 7),             # import of the extension setup.py declares
    ("OPS106", "ops/fused_gelu.py", 14),            # `and x.is_cuda` picks the fused path
    ("OPS304", "ops/fused_gelu.py", 15),            # torch.ops.nanogpt.fused_gelu
    ("OPS303", "ops/rmsnorm_op.py", 7),             # @custom_op
    ("OPS303", "ops/rmsnorm_op.py", 13),            # @register_fake
    ("OPS401", "ops/triton_softmax.py", 4),         # import triton
    ("OPS401", "ops/triton_softmax.py", 5),         # import triton.language as tl
    ("OPS302", "ops/triton_softmax.py", 8),         # @triton.jit definition
    ("OPS302", "ops/triton_softmax.py", 24),        # softmax_kernel[(n_rows,)](...) launch
    ("OPS301", "setup.py", 4),                      # from torch.utils.cpp_extension import ...
    ("OPS301", "setup.py", 11),                     # CUDAExtension
    ("OPS301", "setup.py", 17),                     # BuildExtension
    ("OPS206", "train.py", 32),                     # backend = "nccl"
    ("OPS102", "train.py", 33),                     # device = "cuda"
    ("OPS201", "train.py", 34),                     # torch.cuda.is_available() in the dtype choice
    ("OPS201", "train.py", 34),                     # torch.cuda.is_bf16_supported()
    ("OPS210", "train.py", 38),                     # os.environ.setdefault("NCCL_DEBUG", ...)
    ("OPS102", "train.py", 45),                     # device = f"cuda:{ddp_local_rank}"
    ("OPS201", "train.py", 46),                     # torch.cuda.set_device(device)
    ("OPS210", "train.py", 52),                     # os.environ.get('CUDA_VISIBLE_DEVICES')
    ("OPS204", "train.py", 55),                     # torch.backends.cuda.matmul.allow_tf32
    ("OPS203", "train.py", 56),                     # torch.backends.cudnn.allow_tf32
    ("OPS203", "train.py", 57),                     # torch.backends.cudnn.benchmark
    ("OPS102", "train.py", 58),                     # device_type = "cuda" if "cuda" in device else "cpu"
    ("OPS106", "train.py", 58),                     # ... `"cuda" in device` chooses the autocast device
    ("OPS106", "train.py", 71),                     # if device_type == "cuda": pin_memory path
    ("OPS202", "train.py", 85),                     # torch.cuda.amp.GradScaler
    ("OPS207", "train.py", 90),                     # torch.compile(mode="max-autotune")
    ("OPS201", "train.py", 132),                    # torch.cuda.synchronize()
    ("OPS201", "train.py", 135),                    # torch.cuda.max_memory_allocated()
    ("OPS201", "train.py", 138),                    # if torch.cuda.is_available():
    ("OPS105", "train.py", 140),                    # .cuda() inside that guard
    ("OPS506", "pyproject.toml", 9),                # triton in the `kernels` extra (guarded: optional)
]
GUARDED = {("OPS305", "ops/fused_gelu.py", 7), ("OPS304", "ops/fused_gelu.py", 15), ("OPS105", "train.py", 140),
           ("OPS506", "pyproject.toml", 9),
           ("OPS201", "train.py", 34)}   # is_bf16_supported() after `torch.cuda.is_available() and`


@pytest.fixture(scope="module")
def scan_json(tmp_path_factory):
    from opscan.cli import main

    out = tmp_path_factory.mktemp("nanogpt") / "report.json"
    code = main(["scan", str(EXAMPLE), "--format", "json", "--output", str(out)])
    return code, out.read_text(encoding="utf-8")


def test_reports_every_planted_case_and_nothing_else(scan_json):
    code, text = scan_json
    doc = json.loads(text)
    assert code == 1
    found = [(f["rule"], f["path"], f["line"]) for f in doc["findings"]]
    assert sorted(found) == sorted(PLANTED)
    assert {(f["rule"], f["path"], f["line"]) for f in doc["findings"] if f["guarded"]} == GUARDED
    assert doc["summary"]["files_scanned"] == 10   # pyproject.toml too: a manifest with a finding
    assert all(f["fix"] for f in doc["findings"])


def test_model_py_is_clean_and_traceable_shape():
    """model.py is what `opscan trace examples/nanogpt/model.py:build` traces: no CUDA pins in it."""
    from opscan.scan import scan_paths

    result = scan_paths(EXAMPLE, paths=[EXAMPLE / "model.py"], check_fixes=False)
    assert result.findings == () and result.files_scanned == 1


def test_build_returns_a_tiny_model_and_batch():
    torch = pytest.importorskip("torch")
    import importlib.util

    spec = importlib.util.spec_from_file_location("nanogpt_model", EXAMPLE / "model.py")
    module = importlib.util.module_from_spec(spec)
    import sys

    sys.modules["nanogpt_model"] = module     # dataclasses look their module up while the class is built
    try:
        spec.loader.exec_module(module)
        model, batch = module.build()
    finally:
        sys.modules.pop("nanogpt_model", None)
    assert set(batch) == {"idx", "targets"} and batch["idx"].dtype == torch.long
    logits, loss = model(**batch)
    assert logits.shape == (2, 32, 256) and loss.ndim == 0
    assert sum(p.numel() for p in model.parameters()) < 200_000


def test_same_input_same_bytes(scan_json, tmp_path):
    from opscan.cli import main

    out = tmp_path / "again.json"
    main(["scan", str(EXAMPLE), "--format", "json", "--output", str(out)])
    assert out.read_text(encoding="utf-8") == scan_json[1]
