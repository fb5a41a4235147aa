"""The shipped table of packages that constrain torch (rules/data/torch-constraints.yaml), and the
judgement of one requirement against it (NOTE [packages that hold torch back]).

The table is gathered from published metadata by tools/gather_torch_constraints.py; the scan only
reads it (offline). scan/dependencies.py calls `held_back` and `cuda_requires` for its rules
torch-held-back (OPS509) and cuda-dependent-package (OPS510).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from opscan.resources import rules_dir

# NOTE [packages that hold torch back]
# Each release of torchvision, torchdata, torchcodec, xformers, vllm, composer, ... declares the
# torch it needs (`Requires-Dist: torch==2.0.1`; for torchcodec, whose wheels declare none, its
# README's table). A requirement on such a package admits some of its releases; when the NEWEST
# release it admits (the one a resolver picks first) requires a torch the TorchNeuron release does
# not pair with, the torch upgrade is held back by that line: OPS509, naming the first later
# release known to admit a paired torch (or saying that no release up to the newest gathered does
# yet). When an older release it also admits would leave torch free (years-old versions that did
# not cap torch), the message says so: only a resolver's backtracking would reach them.
# Unknown stays unknown: a requirement that admits a minor or major
# release newer than the table's newest (`torchcodec>=0.5`), a version the table lacks, or a
# release that does not require torch is never judged; a later patch of the newest minor
# (`mosaicml<0.33` with 0.32.1 the newest) is assumed to keep that minor's requirement. A locked
# version is judged alone.
# NOTE [cuda by metadata]
# A package not in the CUDA-only library catalog whose published metadata requires NVIDIA's wheels
# (`nvidia-*`, `*-cu12`) or triton unconditionally (`cuda_requires` in the table: quack-kernels,
# liger-kernel, ...) is CUDA-only by what it installs: OPS510, a warning (lower confidence than the
# catalog's reviewed entries: the package may still run without a GPU). With `--environment`, a
# distribution installed there in the version the manifest admits is judged by its installed
# metadata instead (opscan/pipeline/environment.py): what that build requires on Linux, outside
# extras; the table decides only for packages the environment does not have in that version.


@dataclass(frozen=True)
class Release:
    version: Version
    torch: str            # its torch specifier; "" any torch; "-" it does not require torch
    source: str


@dataclass(frozen=True)
class Constraints:
    releases: dict[str, tuple[Release, ...]]   # canonical name -> releases, oldest first
    cuda: dict[str, tuple[str, ...]]           # canonical name -> the NVIDIA / triton requirements
    gathered_on: str


@lru_cache(maxsize=1)
def table() -> Constraints:
    """The shipped table (loaded once per process)."""
    from opscan.strict_yaml import shipped_data

    doc = shipped_data((rules_dir() / "data" / "torch-constraints.yaml").read_text(encoding="utf-8"))
    releases: dict[str, tuple[Release, ...]] = {}
    cuda: dict[str, tuple[str, ...]] = {}
    for name, entry in (doc.get("packages") or {}).items():
        out = []
        for row in entry.get("rows") or ():
            for version in row.get("releases") or ():
                try:
                    out.append(Release(Version(str(version)), str(row.get("torch", "-")), str(row.get("source", ""))))
                except InvalidVersion:
                    continue
        releases[canonicalize_name(name)] = tuple(sorted(out, key=lambda r: r.version))
        if entry.get("cuda_requires"):
            cuda[canonicalize_name(name)] = tuple(entry["cuda_requires"])
    return Constraints(releases, cuda, str(doc.get("gathered_on", "")))


def _beyond(newest: Version) -> tuple[str, ...]:
    """The next minor and major release after the table's newest (a specifier admitting one is not
    judged: NOTE [packages that hold torch back]); a later patch of the newest minor is assumed to
    keep its torch requirement."""
    parts = list(newest.release) + [0, 0]
    return (f"{parts[0]}.{parts[1] + 1}.0", f"{parts[0] + 1}.0.0")


def held_back(name: str, spec: str, locked: str, paired: tuple[str, ...],
              admits: Callable[[str, str], bool]) -> str | None:
    """The message when every release of `name` the requirement admits (`spec`, or the `locked`
    version) requires a torch none of the `paired` minors satisfies; None otherwise or when unknown.
    `admits(torch_spec, minor)`: whether a torch specifier admits a minor (scan/dependencies.py)."""
    releases = table().releases.get(name)
    if not releases or not paired:
        return None
    if locked:
        admitted = [r for r in releases if str(r.version) == locked or r.version == _version(locked)]
    else:
        try:
            wanted = SpecifierSet(spec)
        except InvalidSpecifier:
            return None
        if any(wanted.contains(v, prereleases=True) for v in _beyond(releases[-1].version)):
            return None   # it admits releases the table does not know yet
        admitted = [r for r in releases if wanted.contains(r.version, prereleases=True)]
    if not admitted:
        return None
    newest = admitted[-1]   # what a resolver picks first (NOTE [packages that hold torch back])
    if newest.torch in ("", "-") or _fits(newest.torch, paired, admits):
        return None
    later = [r for r in releases if r.version > newest.version and r.torch != "-"]
    first = next((r for r in later if r.torch == "" or _fits(r.torch, paired, admits)), None)
    older = [r for r in admitted if r.torch != "-" and (r.torch == "" or _fits(r.torch, paired, admits))]
    what = f"{name}=={locked} (locked)" if locked else f"{name}{spec}"
    text = f"{what} holds torch back: {name} {newest.version}"
    text += " requires" if locked else ", the newest release it admits, requires"
    text += f" torch{newest.torch}"
    if older:
        text += f" (only {name} {older[-1].version} or older, which it also admits, would leave torch free)"
    if first is not None:
        return text + f"; the first {name} release known to admit torch {'/'.join(paired)} is {first.version}"
    return text + (f"; no {name} release up to {releases[-1].version} (gathered {table().gathered_on}) admits "
                   f"torch {'/'.join(paired)} yet")


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def _fits(torch_spec: str, paired: tuple[str, ...], admits: Callable[[str, str], bool]) -> bool:
    return any(admits(torch_spec, minor) for minor in paired)


def cuda_requires(name: str) -> tuple[str, ...]:
    """The NVIDIA / triton requirements `name`'s published metadata declares (NOTE [cuda by metadata])."""
    return table().cuda.get(name, ())

