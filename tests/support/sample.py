"""A hand-built Report covering every reporter feature (findings, ops, tasks, baseline, notes)."""

from __future__ import annotations

from dataclasses import replace

from opscan.config import CostConfig
from opscan.records import (
    BaselineStatus, Coverage, Evidence, Finding, Location, ModelTrace, OpSource, OpUsage, Report, RuleInfo,
)
from opscan.plan import build_tasks
from opscan.assess.verdict import judge

URL = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/best-practices-pytorch-neuron.html"


def _finding(rule, name, category, severity, path, line, snippet, message, guarded=False, fix="",
             task="device-agnostic", subject=""):
    col = max(1, len(snippet) - len(snippet.lstrip()) + 1)
    return Finding(rule, name, category, severity, message,
                   Location(path, line, col, line, col + len(snippet.strip())),
                   fix=fix, guarded=guarded, snippet=snippet, task=task, subject=subject)


def findings() -> tuple[Finding, ...]:
    return (
        _finding("OPS101", "hardcoded-cuda-device", "device-string", "error", "train.py", 12,
                 '    model = model.to("cuda")', "device pinned to 'cuda'; TorchNeuron runs on 'neuron'",
                 fix="use torch.accelerator.current_accelerator()"),
        _finding("OPS101", "hardcoded-cuda-device", "device-string", "error", "train.py", 30,
                 '    x = x.to("cuda")', "device pinned to 'cuda'; TorchNeuron runs on 'neuron'"),
        _finding("OPS102", "cuda-method-call", "device-string", "error", "data/loader.py", 7,
                 "    batch = batch.cuda()", "`.cuda()` pins the tensor to CUDA"),
        _finding("OPS201", "nccl-process-group", "cuda-api", "error", "train.py", 5,
                 'dist.init_process_group("nccl")', "process group backend 'nccl' does not exist on Trainium",
                 task="distributed-backend", subject="nccl"),
        _finding("OPS210", "cuda-availability-check", "cuda-api", "warning", "train.py", 10,
                 "if torch.cuda.is_available():", "torch.cuda.is_available() is False on Trainium",
                 guarded=True),
        _finding("OPS301", "cuda-extension-load", "custom-kernel", "error", "kernels/scan.py", 4,
                 'ext = load(name="selective_scan", sources=["scan.cu"])', "builds a CUDA extension",
                 task="kernel", subject="selective_scan"),
        _finding("OPS401", "cuda-only-import", "cuda-only-lib", "error", "model.py", 3,
                 "from flash_attn import flash_attn_func", "flash_attn only runs on CUDA",
                 task="library", subject="flash_attn"),
        _finding("OPS230", "cudnn-flag", "cuda-api", "note", "train.py", 2,
                 "torch.backends.cudnn.benchmark = True", "cuDNN flags have no effect on Trainium",
                 task="backend-flags", subject="torch.backends.cudnn.benchmark"),
    )


def traces() -> tuple[ModelTrace, ...]:
    ops = (
        OpUsage("aten::mm", 24, ("forward", "backward"), ("torch.float32",),
                (OpSource("model.py", 40, "blocks.0.mlp"),), ("train",)),
        OpUsage("aten::_fused_adamw_", 1, ("optimizer",), ("torch.float32",),
                (OpSource("train.py", 44, ""),), ("train",)),
        OpUsage("aten::embedding_dense_backward", 1, ("backward",), ("torch.float32",),
                (OpSource("model.py", 20, "wte"),), ("train",)),
        OpUsage("aten::gelu", 4, ("forward",), ("torch.float32",), (OpSource("model.py", 41, "blocks.0.mlp"),),
                ("train",)),
    )
    return (ModelTrace("model.py:build", "train", "neuron", ops, (), True, "", 1.25),)


def coverage() -> tuple[Coverage, ...]:
    ev = Evidence("inferred", "example entry for the reporter tests", url=URL)
    return (
        Coverage("aten::_fused_adamw_", "cpu-fallback", (ev,), "medium"),
        Coverage("aten::embedding_dense_backward", "unsupported", (ev,), "low"),
        Coverage("aten::gelu", "unknown", (), "low"),
        Coverage("aten::mm", "native", (ev,), "high"),
    )


def report(**changes) -> Report:
    """The sample report with `changes`; tasks (unless given) and the verdict (unless given) are
    computed from the changed findings, traces and coverage, as the analysis computes them."""
    f, t, c = (changes.get("findings", findings()), changes.get("traces", traces()),
               changes.get("coverage", coverage()))
    sources = {f[5].location: (("kernels/scan.cu", 150),)} if "findings" not in changes else {}
    tasks = build_tasks(f, t, c, CostConfig(), sources)
    values = dict(
        root="proj", tool_version="0.1.0", findings=f, traces=t, coverage=c, tasks=tasks,
        backend="torchneuron==2.33.0", files_scanned=5, notes=("torch 2.13.0 traced; backend pairs with 2.13/2.14",),
        baseline=BaselineStatus("opscan-baseline.json", 2, ("old.py:3: OPS101 device pinned to 'cuda'",)),
        rules=(RuleInfo("OPS101", "hardcoded-cuda-device", "error", "device-string",
                        what="Flags device strings that pin code to CUDA.",
                        why="TorchNeuron runs on device 'neuron'.",
                        fix="Use torch.accelerator.current_accelerator()."),),
    )
    values.update(changes)
    report = Report(**values)
    if "verdict" in changes:
        return report
    return replace(report, verdict=judge(report))   # as the analysis does (opscan/pipeline/analyse.py)
