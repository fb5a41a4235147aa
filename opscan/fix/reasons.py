"""Why `opscan fix` left a finding: a closed vocabulary of reasons, and the reason of each rule without a rewrite.

Every finding `opscan fix` does not rewrite carries one of these codes (`SiteOutcome.reason`) and
a sentence for that site (`SiteOutcome.detail`); the report groups the findings left by code.
"""

from __future__ import annotations

from enum import StrEnum

from opscan.scan.rule_records import Rule


class FixStatus(StrEnum):
    """What `opscan fix` did with one finding (SiteOutcome.status)."""

    FIXED = "fixed"      # rewritten
    UNSAFE = "unsafe"    # a rewrite exists, applied only with --unsafe-fixes
    LEFT = "left"        # the rule has a rewrite, but not for this site
    MANUAL = "manual"    # the rule has no rewrite (no codemod)

    @property
    def left(self) -> bool:
        """Not rewritten, and no flag would rewrite it (left or manual)."""
        return self in (FixStatus.LEFT, FixStatus.MANUAL)


class Reason(StrEnum):
    """Why `opscan fix` left a finding (SiteOutcome.reason; REASONS says each)."""

    UNSAFE = "unsafe"
    GUARD = "guard"
    DECISION = "decision"
    PORT_TASK = "port-task"
    NO_EQUIVALENT = "no-equivalent"
    MISSING_IN_TORCH = "missing-in-torch"
    FORM = "form"
    NO_DEVICE = "no-device"
    NO_CODEMOD = "no-codemod"
    FILE_SKIPPED = "file-skipped"
    NOT_PORT_WORK = "not-port-work"

    @property
    def description(self) -> str:
        return _REASONS[self]


_REASONS: dict[str, str] = {
    "unsafe": "the rewrite may change what the code does on CUDA: applied only with --unsafe-fixes",
    "guard": "an availability test, or code it guards: it keeps CUDA-only work off other devices",
    "decision": "what the code should do on a Neuron device is a choice, not a rewrite (the finding's fix says how)",
    "port-task": "port work the plan sizes: a custom kernel or a CUDA-only library",
    "no-equivalent": "PyTorch has no device-agnostic replacement",
    "missing-in-torch": "the replacement is not in the installed torch",
    "form": "a form the rewrite does not handle: fix it by hand",
    "no-device": "the module's device cannot be defined for this line",
    "no-codemod": "opscan has no automatic rewrite for this rule: the finding's fix says what to do",
    "file-skipped": "the file was not rewritten",
    "not-port-work": "not port work: an input opscan could not read, or a note about opscan's own run",
}
REASONS: dict[str, str] = {k.value: k.description for k in Reason}

# Rules without an `autofix`: why, by rule name first, then by the rule's task kind (model.TASKS).
BY_NAME: dict[str, tuple[str, str]] = {
    "cuda-device-type-branch": ("decision", ("a branch on the device type: which path a Neuron device takes is a "
                                            "choice per branch (keep CUDA-only work on the CUDA path)")),
    "cuda-device-type-check": ("decision", ("a check that raises off CUDA: accept a Neuron device once the code it "
                                           "protects runs there")),
    "hardcoded-accelerator-device": ("decision", ("a device of another accelerator: the branch for it is the template "
                                                 "of the Neuron one, not something to replace")),
    "cuda-env-var": ("decision", ("a CUDA/NCCL environment variable: keep it for CUDA runs, drop it, or set the "
                                 "Neuron equivalent")),
    "torch-c-cuda-internal": ("no-equivalent", "a private torch._C CUDA binding: no public device-agnostic API"),
    "cuda-specific-torch-api": ("no-equivalent", ("an API that answers for CUDA only: its device-agnostic form takes "
                                                 "the device type, which the code must choose")),
    "nvidia-tool": ("no-equivalent", "an NVIDIA command-line tool: what a Trainium host runs instead is a choice"),
}
BY_TASK: dict[str, tuple[str, str]] = {
    "kernel": ("port-task", ("a custom kernel, or its build or call: it needs a Neuron implementation (an NKI kernel "
                            "or a PyTorch reference path)")),
    "library": ("port-task", "a CUDA-only library: replace it with its PyTorch or Neuron equivalent"),
    "cuda-graphs": ("port-task", "CUDA graph capture: TorchNeuron has no equivalent; run eagerly or compiled"),
    "backend-flags": ("decision", ("a cuDNN/TF32 setting: it does nothing off CUDA; keep it for CUDA behind a device "
                                  "check, or drop it")),
    "torch-compile": ("decision", ("a torch.compile option TorchNeuron ignores or rejects: dropping it changes the "
                                  "CUDA run")),
    "none": ("not-port-work", "nothing to rewrite"),
}
DEFAULT = ("no-codemod", "no automatic rewrite for this rule: see the finding's fix")


def manual(rule: Rule | None) -> tuple[str, str]:
    """(reason code, sentence) for a finding whose rule declares no rewrite (`rule` may be None)."""
    if rule is None:
        return DEFAULT
    return BY_NAME.get(rule.name) or BY_TASK.get(rule.task) or DEFAULT
