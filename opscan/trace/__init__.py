"""Model tracing, the engine: a built model's one step on fake tensors -> the ops it dispatches.

How a model and its inputs are built from a target string (`file.py:NAME`, `hf:PATH`, `timm:NAME`,
`pt2:FILE`) is opscan/targets/, which calls this engine; trace/ imports neither targets/ nor zoo/
(tests/test_architecture.py). torch is imported on first use of `trace`; the coverage database's
registry and probe (opscan/db/) import it too, when asked about the installed torch.

Public API (the signature of `trace` is pinned by tests/targets/test_targets_api.py):

    trace(target, build, *, mode="train", device="neuron", profile=None, optimizer="adamw",
          optimizer_impl=None, amp=None, inputs=(), project_root=None, fsdp=None)
        -> opscan.records.ModelTrace      # build(specs) -> spec.Built, called under the trace's clock
    prepare()   register the imitated `neuron` device before any real backward in this process
    DEFAULT_PROFILE, DEVICES, MODES
Module map: tracer (options, the step under the recorder) -> recorder (ops, sources) -> device
(the imitated `neuron`), fakes, standins (data-dependent values), step (loss, optimizer), fsdp;
export (the ops of a loaded exported program); spec (what is traced: Built, --input specs).
run/ is `opscan run` on this engine, with its own public API (opscan.trace.run.run_script); the
engine never imports it.
"""

from __future__ import annotations

import importlib.util

from opscan.errors import MissingDependencyError
from opscan.records import MODES

INSTALL_HINT = "pip install 'opscan-neuron[trace]' (and pin torch to the version you train with)"

if importlib.util.find_spec("torch") is None:
    raise MissingDependencyError(f"tracing needs PyTorch, which is not installed: {INSTALL_HINT}", "torch")

DEVICES = ("neuron", "cpu", "cuda", "meta")


def trace(target: str, build, **options):
    """Trace the model `build(specs)` makes; see opscan.trace.tracer.trace."""
    from opscan.trace.tracer import trace as run

    return run(target, build, **options)


def prepare() -> None:
    """Register the imitated `neuron` device now (imports torch).

    Call it at the start of a process that will run real backward passes before tracing
    (a test session, a worker): PyTorch's autograd engine sizes its device queues at the first
    backward, and a device registered after that cannot run a backward in that process.
    trace calls it too.
    """
    from opscan.trace.device import ensure_neuron

    ensure_neuron()


def __getattr__(name: str):
    if name == "DEFAULT_PROFILE":
        from opscan.trace.device import DEFAULT_PROFILE

        return DEFAULT_PROFILE
    raise AttributeError(name)


__all__ = ["DEFAULT_PROFILE", "DEVICES", "INSTALL_HINT", "MODES", "prepare", "trace"]
