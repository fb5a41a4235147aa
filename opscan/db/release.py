"""One loaded release file: its entries, its sources, and the answers it gives (lookup, profile, pairing)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from opscan.records import Coverage, DeviceProfile, Evidence, OpName

CONFIDENCES = ("high", "medium", "low")


@dataclass(frozen=True)
class Entry:
    """One op's line in a release file (or the file's `unlisted` default, with op "")."""

    op: str
    status: str
    sources: tuple[str, ...]
    confidence: str
    note: str = ""
    parts: tuple[str, ...] = ()      # for status composite: the ops it expands into
    line: int = 0
    since: str = ""                  # date the evidence says this status began (release notes: "added in")


@dataclass(frozen=True)
class KnownFailure:
    """Upstream tests recorded as failing on the backend for one op packet, dtype and case."""

    packet: str                       # e.g. "aten::scatter_add_" (the test names a packet, not an overload)
    dtype: str                        # torch dtype name without "torch.", e.g. "complex64"; "" = any dtype
    tests: tuple[str, ...]            # "TestScatterGather.test_scatter_add__neuron_complex64"
    sources: tuple[str, ...]
    case: str = ""                    # the test's variant ("large", "same_padding"); "" = the plain op test
    ops: tuple[str, ...] = ()         # overloads a trace records for the packet (in-place, out variants)
    parts: tuple[str, ...] = ()       # what a trace records in its place when it decomposes (dstack -> cat)
    reasons: tuple[str, ...] = ()     # the xfail reasons the backend's test files give
    more_tests: int = 0               # further failing tests of the row, not listed (see the source extract)

    @property
    def count(self) -> int:
        """How many failing tests the row stands for."""
        return len(self.tests) + self.more_tests

    def hits(self, op: str) -> bool:
        """Whether this row concerns `op` (an overload a trace records)."""
        if self.ops or self.parts:
            return op in self.ops or op in self.parts
        return OpName.parse(op).packet == self.packet


@dataclass(frozen=True)
class ReleaseNote:
    """A release fact about one op packet that is no known failure: failing tests that name the op
    only loosely (NOTE [release notes on ops] in tools/regen_torchneuron.py). Shown, never judged."""

    packet: str                       # e.g. "aten::group_norm"
    text: str
    sources: tuple[str, ...]
    ops: tuple[str, ...] = ()         # overloads a trace records for the packet
    parts: tuple[str, ...] = ()       # what a trace records in its place when it decomposes
    tests: tuple[str, ...] = ()

    def via(self, op: str) -> str:
        """How `op` (a traced overload) is concerned: "op", "overload" (of the packet, or its
        in-place or out form), "part" (of the packet's decomposition), or "" (not concerned)."""
        if op == self.packet:
            return "op"
        if op in self.ops or OpName.parse(op).packet == self.packet:
            return "overload"
        return "part" if op in self.parts else ""


@dataclass(frozen=True)
class Narrowing:
    """A dtype the backend computes in a narrower dtype by default (float64 as float32)."""

    dtype: str                        # "float64"
    computed_as: str                  # "float32"
    sources: tuple[str, ...]
    note: str = ""


NO_KERNEL_MODES = ("cpu-fallback", "error", "unknown")


@dataclass(frozen=True)
class NoKernel:
    """What the backend does with an op it has no kernel for, per execution mode (`no_kernel:`).

    Release data with its sources: TorchNeuron documents that in eager mode such an op falls back
    to the CPU, so an op the file does not list is `device-or-cpu` (it runs, on the device or on
    the CPU), except the ops of `not_supported` (classes the docs call not supported).
    """

    eager: str                        # one of NO_KERNEL_MODES
    compile: str                      # under torch.compile; "unknown" when the docs read do not say
    sources: tuple[str, ...]
    note: str = ""
    compile_note: str = ""
    not_supported: tuple[str, ...] = ()          # fnmatch patterns of op names (quantized::*, ...)
    not_supported_sources: tuple[str, ...] = ()
    not_supported_note: str = ""

    def refuses(self, op: str) -> bool:
        """Whether `op` is of a class the docs call not supported."""
        from fnmatch import fnmatchcase

        return any(fnmatchcase(op, pattern) for pattern in self.not_supported)


@dataclass(frozen=True)
class Package:
    """A pip package of the release and the torch minor version it pairs with."""

    name: str
    version: str
    torch: str                        # "2.13": the torch minor this package is built for


@dataclass(frozen=True)
class Release:
    """A backend release as the database knows it. Build with `opscan.db.load_release`.

    The one coverage protocol: everything that judges traced ops (opscan/assess.py, the zoo's
    rows and op ranking) asks a Release: `lookup(op)`, `status(op)`, `spec`, `key`, `profile()`.
    """

    path: Path
    backend: str                      # backend line id, e.g. "torchneuron", "torch-neuronx-xla"
    release: str                      # e.g. "2.33.0"
    title: str
    device: str                       # device string the backend uses, e.g. "neuron"
    dispatch_key: str                 # "PrivateUse1" | "XLA"
    op_names: str                     # "overload" | "packet": how the entries name ops
    kernel_list: str                  # "complete" | "partial": is every op with a kernel listed?
    sources: dict[str, Evidence]
    entries: dict[str, Entry]
    unlisted: Entry
    packages: tuple[Package, ...] = ()
    released: str = ""
    sdpa_policy: str = "math"
    sdpa_sources: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    known_failures: tuple[KnownFailure, ...] = ()
    release_notes: tuple[ReleaseNote, ...] = ()   # facts about an op that are no known failure
    narrowing: tuple[Narrowing, ...] = ()
    no_kernel: NoKernel | None = None  # what happens to an op without a kernel (None: not stated)
    environment: dict = field(default_factory=dict, compare=False)   # probed files: where the probe ran
    warnings: tuple[str, ...] = field(default=(), compare=False)
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def spec(self) -> str:
        """The name users type: `torchneuron==2.33.0`."""
        return f"{self.backend}=={self.release}"

    @cached_property
    def key(self) -> str:
        """A key that changes with the release's content (the zoo's row cache is keyed by it)."""
        try:
            content = self.path.read_bytes()
        except OSError:
            content = repr(sorted((k, e.status) for k, e in self.entries.items())).encode()
        return hashlib.sha256(self.spec.encode() + b"\0" + content).hexdigest()[:16]

    def evidence(self, ids: tuple[str, ...]) -> tuple[Evidence, ...]:
        """The Evidence records for source ids (ids were checked at load time)."""
        return tuple(self.sources[i] for i in ids)

    def entry_for(self, op: str) -> tuple[Entry | None, str]:
        """The entry that answers for `op` directly, and how it was found ("" if none)."""
        name = OpName.parse(op)
        if self.op_names == "overload":
            hit = self.entries.get(str(name))
            return (hit, f"listed as {hit.op}") if hit else (None, "")
        hit = self.entries.get(name.packet)
        return (hit, f"overload packet {name.packet} listed") if hit else (None, "")

    def lookup(self, op: str) -> Coverage:
        """Status, evidence and confidence for one op; see NOTE [lookup order] in lookup.py."""
        from opscan.db.lookup import lookup

        return lookup(self, op)

    def status(self, op: str) -> str:
        """The status of `lookup(op)` (answers are cached per op)."""
        return self.lookup(op).status

    def profile(self) -> DeviceProfile:
        """The device profile for the trace: the ops this backend registers itself, its SDPA choice.

        Ops the installed torch does not have are left out (they cannot be registered or dispatched).
        """
        from opscan.db import registry
        from opscan.db.lookup import expand_packets

        native = sorted(e.op for e in self.entries.values() if e.status in ("native", "limited"))
        if self.op_names == "packet":
            native = expand_packets(native)
        if registry.torch_version() is not None:  # only ops this torch has can shape a trace here
            native = [op for op in native if registry.op_exists(op)]
        return DeviceProfile(name=self.spec, device=self.device, native_ops=tuple(native),
                             sdpa_policy=self.sdpa_policy)

    def failures_for(self, op: str) -> tuple[KnownFailure, ...]:
        """The known failures that concern `op` (its packet's rows, or rows listing it among their ops)."""
        packet = OpName.parse(op).packet
        return tuple(f for f in self.known_failures if f.packet == packet or f.hits(op))

    def pairs_with_torch(self, version: str) -> bool:
        """True when some package of this release is built for torch `version` (major.minor)."""
        minor = _minor(version)
        return any(_minor(p.torch) == minor for p in self.packages)

    def pairing_warning(self, version: str) -> str | None:
        """A one-line warning when the installed torch `version` does not pair with this release."""
        if not self.packages or self.pairs_with_torch(version):
            return None
        pairs = ", ".join(f"{p.name} {p.version} with torch {p.torch}" for p in self.packages)
        return (f"installed torch {version} does not pair with {self.spec} ({pairs}); "
                "composite expansions and op names are judged with the installed torch")


def _minor(version: str) -> str:
    """'2.13.0+cpu' -> '2.13'."""
    parts = version.split("+")[0].split(".")
    return ".".join(parts[:2])
