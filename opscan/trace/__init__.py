"""Model tracing: the only package that imports torch (on first use of trace_target).

Public API (pinned by tests/trace/test_trace_api.py):

    trace_target(target, *, mode="train", device="neuron", profile=None, optimizer="adamw",
                 optimizer_impl=None, amp=None, inputs=(), batch=None, seq_len=None,
                 project_root=None, fsdp=None, trust_remote_code=False) -> opscan.model.ModelTrace
    (a target `pt2:FILE` is an exported program: read with torch.export.load, never run)
    prepare()   register the imitated `neuron` device before any real backward in this process
    DEFAULT_PROFILE, DEVICES, MODES
"""

from __future__ import annotations

import importlib.util

from opscan.errors import MissingDependencyError

INSTALL_HINT = "pip install 'opscan-neuron[trace]' (and pin torch to the version you train with)"

if importlib.util.find_spec("torch") is None:
    raise MissingDependencyError(f"tracing needs PyTorch, which is not installed: {INSTALL_HINT}", "torch")

MODES = ("train", "inference", "both")
DEVICES = ("neuron", "cpu", "cuda", "meta")


def trace_target(target: str, **options):
    """Trace `target` and return an opscan.model.ModelTrace; see opscan.trace.runner.trace_target."""
    from opscan.trace.runner import trace_target as run

    return run(target, **options)


def prepare() -> None:
    """Register the imitated `neuron` device now (imports torch).

    Call it at the start of a process that will run real backward passes before tracing
    (a test session, a worker): PyTorch's autograd engine sizes its device queues at the first
    backward, and a device registered after that cannot run a backward in that process.
    trace_target calls it too.
    """
    from opscan.trace.device import ensure_neuron

    ensure_neuron()


def __getattr__(name: str):
    if name == "DEFAULT_PROFILE":
        from opscan.trace.device import DEFAULT_PROFILE

        return DEFAULT_PROFILE
    raise AttributeError(name)


__all__ = ["DEFAULT_PROFILE", "DEVICES", "INSTALL_HINT", "MODES", "prepare", "trace_target"]
