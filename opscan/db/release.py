"""One loaded release file: its entries, its sources, and the answers it gives (lookup, profile, pairing)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from opscan.db import registry
from opscan.db.entries import (  # the file's records; importers may take them from here too
    CONFIDENCES,
    NO_KERNEL_MODES,
    DtypeFallback,
    Entry,
    KnownFailure,
    Narrowing,
    NoKernel,
    Package,
    ReleaseNote,
)
from opscan.db.lookup import expand_packets
from opscan.db.lookup import lookup as answer
from opscan.records import Coverage, DeviceProfile, Evidence, OpName, Status

__all__ = ["CONFIDENCES", "NO_KERNEL_MODES", "DtypeFallback", "Entry", "KnownFailure", "Narrowing", "NoKernel",
           "Package",
           "Release", "ReleaseNote"]


@dataclass(frozen=True)
class Release:
    """A backend release as the database knows it. Build with `opscan.db.load_release`.

    The one coverage protocol: everything that judges traced ops (opscan/assess/assessment.py, the zoo's
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
    dtype_fallbacks: tuple[DtypeFallback, ...] = ()   # ops that run on the CPU for some dtypes only
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

    def lookup(self, op: str, dtype: str = "") -> Coverage:
        """Status, evidence and confidence for one op (called with `dtype`, e.g. "float32", when given);
        see NOTE [lookup order] and NOTE [dtypes after decomposition] in lookup.py."""
        return answer(self, op, dtype)

    def status(self, op: str) -> str:
        """The status of `lookup(op)` (answers are cached per op)."""
        return self.lookup(op).status

    def profile(self) -> DeviceProfile:
        """The device profile for the trace: the ops this backend registers itself, its SDPA choice.

        Ops the installed torch does not have are left out (they cannot be registered or dispatched).
        """
        native = sorted(e.op for e in self.entries.values() if Status(e.status).has_kernel)
        if self.op_names == "packet":
            native = expand_packets(native)
        if registry.torch_version() is not None:  # only ops this torch has can shape a trace here
            native = [op for op in native if registry.op_exists(op)]
        return DeviceProfile(name=self.spec, device=self.device, native_ops=tuple(native),
                             sdpa_policy=self.sdpa_policy)

    @cached_property
    def _dtype_limits(self) -> tuple[dict[str, frozenset[str]], dict[str, frozenset[str]]]:
        by_op: dict[str, set[str]] = {}
        by_packet: dict[str, set[str]] = {}
        for row in self.dtype_fallbacks:
            by_op.setdefault(row.op, set()).update(row.dtypes)
        for failure in self.known_failures:
            if failure.dtype and not failure.case:
                if failure.ops or failure.parts:
                    for op in failure.ops:
                        by_op.setdefault(op, set()).add(failure.dtype)
                else:
                    by_packet.setdefault(failure.packet, set()).add(failure.dtype)
        return ({op: frozenset(d) for op, d in by_op.items()}, {p: frozenset(d) for p, d in by_packet.items()})

    def dtype_limits(self, op: str) -> frozenset[str]:
        """The dtypes a row of this release names as `op`'s limits: a `dtype_fallbacks` row, or a plain
        known-failure row (one dtype, no case) listing the op (a row without `ops` or `parts`: every
        overload of its packet). An op of `limited` status with such rows is limited for these dtypes
        only (NOTE [dtypes after decomposition] in opscan/db/lookup.py); empty: none stated per dtype."""
        by_op, by_packet = self._dtype_limits
        return by_op.get(op, frozenset()) | by_packet.get(OpName.parse(op).packet, frozenset())

    def dtype_rule(self, dtype: str) -> Narrowing | None:
        """The release's rule for `dtype` ("float64"), if it states one (`dtype_narrowing:`)."""
        return next((rule for rule in self.narrowing if rule.dtype == dtype), None)

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
