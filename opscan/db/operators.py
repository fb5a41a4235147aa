"""The operators of each paired torch, shipped as data: an op name a release row or a table gives
resolves to real overloads, or is refused, with no torch installed.

NOTE [op names resolve]
A release entry, a known-failure row, a per-dtype fallback or a compatibility table names ops as
text. A name that is no operator of the torch the release pairs with matches nothing a trace
records: `aten::div` (the packet; `div` has no default overload, so the name is no operator) would
keep a CPU_FALLBACK row from ever firing on `x / 2`, which dispatches `aten::div.Tensor`. So every
name is resolved against the operator list of each torch minor the release pairs with
(coverage_db/operators/torch-MINOR.txt, made by tools/operator_lists.py from the real torch):
  - a real operator (`aten::div.Tensor`, `aten::relu`, whose default overload prints as the
    packet) is itself;
  - a packet with no default overload (`aten::div`) is, where the caller allows it (an imported
    table: the row is about the operator, every overload), every overload of the packet; a release
    file must list the overloads itself (a load error says which);
  - anything else is refused with its file and line.
The union over the paired minors counts (a name of torch 2.14 only is real for a release paired
with 2.13 and 2.14). Without a list for every paired minor the names are not checked here (the
installed torch still warns, `opscan db validate`): nothing is refused on a list opscan lacks.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from opscan.resources import coverage_db_dir


def folder():
    """Where the lists are (shipped inside the package with the coverage database)."""
    return coverage_db_dir() / "operators"


def minor(version: str) -> str:
    """'2.14.1+cpu' -> '2.14'."""
    return ".".join(version.split("+")[0].split(".")[:2])


@functools.cache
def names(torch_minor: str) -> frozenset[str] | None:
    """Every operator name of torch `torch_minor` ("2.13"), or None when opscan ships no list for it."""
    path = folder() / f"torch-{torch_minor}.txt"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    return frozenset(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


def shipped() -> tuple[str, ...]:
    """The torch minors opscan ships an operator list for, e.g. ("2.13", "2.14")."""
    return tuple(sorted(p.stem.removeprefix("torch-") for p in folder().glob("torch-*.txt")))


class Operators:
    """The operators of a set of torch minors (a release's pairing): what a name resolves to."""

    def __init__(self, minors: Iterable[str], installed: frozenset[str] | None = None,
                 installed_minor: str = "") -> None:
        """`installed`: the installed torch's names, used for `installed_minor` when no list is shipped."""
        self.minors = tuple(sorted(set(minors)))
        found: set[str] = set()
        self.missing: tuple[str, ...] = ()
        missing = []
        for m in self.minors:
            listed = names(m)
            if listed is None and m == installed_minor and installed is not None:
                listed = installed
            if listed is None:
                missing.append(m)
            else:
                found |= listed
        self.missing = tuple(missing)
        self._names = frozenset(found)
        packets: dict[str, list[str]] = {}
        for name in found:
            packets.setdefault(name.split(".")[0], []).append(name)
        self._packets = {k: tuple(sorted(v)) for k, v in packets.items()}

    @property
    def complete(self) -> bool:
        """Whether every paired minor has a list (else names are not checked: NOTE [op names resolve])."""
        return bool(self.minors) and not self.missing

    def exists(self, name: str) -> bool:
        """Whether `name` is an operator of some paired torch."""
        return name in self._names

    def is_packet(self, name: str) -> bool:
        """Whether `name` (no overload) is an overload packet of some paired torch."""
        return "." not in name.partition("::")[2] and name in self._packets

    def overloads(self, packet: str) -> tuple[str, ...]:
        """Every overload of `packet` in the paired torches, sorted; () for no such packet."""
        return self._packets.get(packet, ())

    def resolve(self, name: str, packets: bool = True) -> tuple[str, ...]:
        """The real operators `name` stands for: itself, the overloads of a packet with no default
        overload (when `packets`), or () when it names nothing (NOTE [op names resolve])."""
        if name in self._names:
            return (name,)
        if packets and self.is_packet(name):
            return self.overloads(name)
        return ()

    def why_not(self, name: str, packet: bool = False) -> str:
        """Why `name` (an operator, or with `packet` an overload packet) is refused, in one phrase
        naming what its packet has."""
        pairing = "torch " + " or ".join(self.minors)
        if self.is_packet(name):
            shown = ", ".join(o.partition(".")[2] or "default" for o in self.overloads(name)[:8])
            more = len(self.overloads(name)) - 8
            return (f"{name} is an overload packet, not an operator of {pairing}: name its overloads "
                    f"({shown}{f', and {more} more' if more > 0 else ''})")
        base = name.split(".")[0]
        if "." in name.partition("::")[2] and base in self._packets:
            shown = ", ".join(o.partition(".")[2] or "default" for o in self.overloads(base)[:8])
            return f"{name}: no such overload in {pairing} (the packet has: {shown})"
        return f"{name}: no such {'overload packet' if packet else 'operator'} in {pairing}"


def for_release(torch_minors: Iterable[str]) -> Operators:
    """The operators of a release's paired torches (its packages' torch minors); the installed
    torch stands in for a paired minor opscan ships no list for."""
    from opscan.db import registry

    wanted = {minor(m) for m in torch_minors}
    version = registry.torch_version()
    installed = None
    if version is not None and minor(version) in wanted and names(minor(version)) is None:
        import torch

        installed = frozenset(torch._C._dispatch_get_all_op_names())
    return Operators(wanted, installed, minor(version) if version else "")
