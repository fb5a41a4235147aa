"""The records of traced ops: names, usages and where they came from, coverage with its evidence,
fallback costs, the device profile and how a trace was shrunk."""

from __future__ import annotations

import re
from dataclasses import dataclass

from opscan.records.vocabulary import EvidenceKind, Status


_OP_NAME = re.compile(r"^(?P<ns>[A-Za-z_][A-Za-z0-9_]*)::(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
                      r"(?:\.(?P<overload>[A-Za-z_][A-Za-z0-9_]*))?$")


@dataclass(frozen=True, order=True)
class OpName:
    """A canonical operator name as `OpOverload.name()` prints it: `aten::add.Tensor`, `aten::relu`."""

    namespace: str
    name: str
    overload: str = ""  # "" is the default overload

    @classmethod
    def parse(cls, text: str) -> "OpName":
        """Parse `ns::name[.overload]`; `.default` is normalised to no overload. Raises ValueError."""
        match = _OP_NAME.match(text.strip())
        if not match:
            raise ValueError(f"not an operator name: {text!r} (expected e.g. 'aten::add.Tensor')")
        overload = match["overload"] or ""
        if overload == "default":
            overload = ""
        return cls(match["ns"], match["name"], overload)

    @property
    def packet(self) -> str:
        """The overload packet, e.g. `aten::add`."""
        return f"{self.namespace}::{self.name}"

    def __str__(self) -> str:
        return f"{self.packet}.{self.overload}" if self.overload else self.packet


@dataclass(frozen=True, order=True)
class OpSource:
    """Where an op was dispatched from: the first frame in the user's code and the module path; and,
    when that frame is a library's, the line of the project the user can change (NOTE [sites the
    user can change] in opscan/trace/sources.py): the first frame in the project, or the call that
    configures the library (a DataLoader's `collate_fn`)."""

    path: str
    line: int
    module: str = ""     # e.g. "model.layers.3.mlp.down_proj"; "" outside any module
    site_path: str = ""  # the project's line for a library's `path:line` ("" when path is the project's, or
    site_line: int = 0   # no frame of the project called it: an hf: model traced by opscan)

    @property
    def site(self) -> tuple[str, int]:
        """The line a port task points at: the project's line, else `path:line` itself."""
        return (self.site_path, self.site_line) if self.site_path else (self.path, self.line)


@dataclass(frozen=True)
class OpUsage:
    """One operator a traced model dispatched, aggregated over the trace."""

    op: str                          # canonical name, e.g. "aten::mm"
    count: int
    phases: tuple[str, ...] = ()     # subset of PHASES, in PHASES order
    dtypes: tuple[str, ...] = ()     # e.g. ("torch.float32",), sorted
    sources: tuple[OpSource, ...] = ()
    modes: tuple[str, ...] = ()      # ("inference",), ("train",) or both
    custom: bool = False             # namespace is not a PyTorch one
    # NOTE [fallback cost]: what the op would cost as a CPU fallback in one training step, at the
    # traced shapes: every call copies the device tensors it reads to the host and the tensors it
    # writes back (step_bytes, summed over the train-mode calls), and waits for the device (one
    # sync per call). 0 when no train step was traced (inference only, or an older trace).
    step_calls: int = 0              # calls in the traced training step
    step_bytes: int = 0              # bytes of the device tensors those calls read and write
    # per dtype the op was called with: the source lines of those calls (at most five each), so a
    # caveat about one dtype points at the calls with that dtype; () in older traces
    dtype_sources: tuple[tuple[str, tuple[OpSource, ...]], ...] = ()
    # how the train-step figures grow with the real model (NOTE [fallback scaling] in opscan/assess/assessment.py):
    # of step_calls, those inside the repeated layers (Shrink.layer_list); of step_bytes, the bytes
    # that grow with the layer count, with batch x sequence, and with both (the rest stay fixed)
    step_layer_calls: int = 0
    step_layer_bytes: int = 0
    step_token_bytes: int = 0
    step_layer_token_bytes: int = 0
    # the same bytes split further by how they grow with the width and the sequence (NOTE [fallback
    # scaling]): (class, width dims, extra sequence dims, bytes), class 0 fixed, 1 x layers, 2 x batch
    # x sequence, 3 x both; width dims: dims of the traced hidden size (or a small multiple);
    # extra sequence dims: 1 for an [.., S, S] tensor (attention scores). () in older traces
    step_shape_bytes: tuple[tuple[int, int, int, int], ...] = ()


@dataclass(frozen=True)
class Fallback:
    """The cost of one op that runs, or may run, on the CPU, per training step (NOTE [fallback cost])."""

    op: str
    status: Status                       # cpu-fallback | device-or-cpu (OpStatus.may_fall_back)
    bytes_per_step: int                  # copied to the host and back, at the model's real size
    syncs_per_step: int                  # device -> host waits (one per call)
    calls_per_step: int
    scale: float = 1.0                   # factor applied to the traced figures (1.0: as traced)
    traced_bytes: int = 0                # the figures at the traced size, before scaling
    traced_syncs: int = 0
    traced_calls: int = 0
    scaled_by: str = ""                  # how they were scaled ("" as traced; NOTE [fallback scaling])

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", Status(self.status))


@dataclass(frozen=True)
class StandIn:
    """A data-dependent value the trace had to invent (the branch taken may differ from a real run)."""

    op: str          # e.g. "aten::_local_scalar_dense", "aten::nonzero"
    kind: str        # e.g. "item", "dynamic-shape"
    value: str       # what was used instead, e.g. "1", "upper bound 16"
    count: int
    source: OpSource | None = None


@dataclass(frozen=True)
class Evidence:
    """Why the database says what it says about an op."""

    kind: EvidenceKind           # one of EVIDENCE_KINDS
    text: str                    # one line a person can read, e.g. "pre-release source, unverified for 2.33"
    url: str | None = None
    date: str | None = None
    repo: str | None = None
    commit: str | None = None
    install: str | None = None   # for probed evidence: e.g. "torch-neuronx 2.14.3.0 / torch 2.14.0"
    compared: bool = False       # probed evidence: results were run and compared with the CPU
                                 # (`--samples`, `--report`); a registration alone proves less

    def __post_init__(self) -> None:   # NOTE [typed vocabularies]
        object.__setattr__(self, "kind", EvidenceKind(self.kind))


@dataclass(frozen=True)
class Coverage:
    """The answer to "will this op run on the backend?" for one op and one release."""

    op: str
    status: Status                       # one of STATUSES
    evidence: tuple[Evidence, ...] = ()
    confidence: str = "low"              # "high" | "medium" | "low"
    via: str = ""                        # how the answer was found, e.g. "overload packet aten::add"
    parts: tuple[str, ...] = ()          # for composite: the ops it expands into
    confidence_note: str = ""            # why the confidence is not high, in a phrase ("" when high):
                                         # "listed at medium confidence", "one level below its part ..."

    def __post_init__(self) -> None:   # NOTE [typed vocabularies]
        object.__setattr__(self, "status", Status(self.status))


@dataclass(frozen=True)
class DeviceProfile:
    """What a backend looks like to the trace: the ops it implements itself and its SDPA choice."""

    name: str                            # e.g. "torchneuron==2.33.0"
    device: str = "neuron"
    native_ops: tuple[str, ...] = ()     # the trace stops at these instead of their decompositions
    sdpa_policy: str = "math"            # which SDPA kernel the backend picks: math, overrideable,
                                         # overrideable-4d (overrideable for 4-D q/k/v, else math)


@dataclass(frozen=True)
class Shrink:
    """How a trace is smaller than the model it stands for, where known (NOTE [fallback scaling] in
    opscan/assess/assessment.py); 0 = not known, taken as traced."""

    layer_list: str = ""                 # module path of the repeated layers, e.g. "model.layers"
    layers: int = 0                      # layers traced (the list's length)
    real_layers: int = 0                 # the model's count before `--layers` cut it
    batch: int = 0                       # batch and sequence length of the traced step
    seq_len: int = 0
    real_batch: int = 0                  # the real training step's, when stated
    real_seq_len: int = 0
    hidden: int = 0                      # the traced model's width (hidden size), where the trace found it
    real_hidden: int = 0                 # the real model's width, when known (--real-hidden, config.json)
    hidden_from: str = ""                # where the real width was read ("--real-hidden", "config.json")
    roles: str = ""                      # how dims were told apart when sizes coincide (NOTE [sizes by role] in
                                         # opscan/trace/roles.py): "" by value (nothing coincides), "probe N"
                                         # (a second trace at sequence N), or "not told apart: why" (width unscaled)
