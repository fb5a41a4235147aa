"""The records of one release file: its entries, known failures, narrowings, no-kernel rule and packages."""

from __future__ import annotations

from dataclasses import dataclass

from opscan.records import CONFIDENCES as CONFIDENCES   # the words of records.Confidence, strongest first
from opscan.records import NoKernel as NoKernelMode
from opscan.records import OpName


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
class DtypeFallback:
    """An op that has a kernel for some dtypes and runs on the CPU for others (`dtype_fallbacks:`):
    a compatibility table's CPU_FALLBACK row that names dtypes. A trace calling the op with one of
    `dtypes` makes it `cpu-fallback` for that model (opscan/db/annotate.py, `with_dtype_fallbacks`)."""

    op: str                           # canonical overload, as the op entry (which is `limited`)
    dtypes: tuple[str, ...]           # torch dtype names without "torch.", e.g. ("float32",)
    sources: tuple[str, ...]
    note: str = ""


# What a release says it does with a dtype (`dtype_narrowing:` rows; NOTE [dtypes after
# decomposition] in opscan/db/lookup.py says how each reaches a model's ops).
DTYPE_EFFECTS = {
    "narrowed": "computed in a narrower dtype (`computed_as`) by default: a caveat on the ops computing in it",
    "cpu-fallback": "not supported on the device: an op with a kernel runs on the CPU for this dtype",
    "raises": "not supported: an op with a kernel raises for this dtype (a blocker)",
}


@dataclass(frozen=True)
class Narrowing:
    """What the backend does with one dtype by default: computes it narrower (float64 as float32),
    runs it on the CPU, or raises (`effect`, one of DTYPE_EFFECTS)."""

    dtype: str                        # "float64"
    computed_as: str                  # "float32" ("" unless the effect is narrowed)
    sources: tuple[str, ...]
    note: str = ""
    effect: str = "narrowed"


# the words of records.NoKernel, in the order the database's errors list them
NO_KERNEL_MODES = tuple(m.value for m in (NoKernelMode.CPU_FALLBACK, NoKernelMode.ERROR, NoKernelMode.UNKNOWN))


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
