"""The catalog of CUDA-only libraries and kernel families (libraries.yaml): strict loading and lookup.

Loaded like the coverage database (opscan/db/loader.py): safe YAML, no duplicate keys, closed
key sets and vocabularies, errors naming the file and line (CatalogError).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from packaging.version import InvalidVersion, Version

from opscan.errors import CatalogError
from opscan.strict_yaml import YamlProblem, check_keys as _keys, line_of, load_checked

SCHEMA_VERSION = 1
CATALOG_PATH = Path(__file__).with_name("libraries.yaml")
SIZES = ("small", "medium", "large")

_TOP = {"schema_version": True, "sizes": True, "libraries": True, "kernel_families": True, "cuda_extras": False}
_LIBRARY = {"id": True, "packages": True, "size": True, "replacement": True, "why": True, "hours": True,
            "call_site_minutes": True, "api": False, "sources": True, "distributions": False, "cpu_since": False}
_CPU_SINCE = {"version": True, "why": True, "sources": True}
_EXTRA = {"distribution": True, "extras": True, "why": True, "sources": True}
_PART = {"names": True, "size": True, "replacement": True, "why": True, "hours": True}
_FAMILY = {"id": True, "rules": True, "replacement": True, "why": True, "factor": True, "sources": True}
_RANGE = {"low": True, "likely": True, "high": True}


@dataclass(frozen=True)
class Range:
    """low <= likely <= high, in the unit of the field that holds it."""

    low: float
    likely: float
    high: float


@dataclass(frozen=True)
class ApiPart:
    """A part of a library whose move differs from the rest (matched on the names a project imports)."""

    names: tuple[str, ...]
    size: str
    replacement: str
    why: str
    hours: Range

    def matches(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.names)


@dataclass(frozen=True)
class CpuSince:
    """From which release a catalog library's wheels also run on CPU (NOTE [CPU-capable releases])."""

    version: str
    why: str
    sources: tuple[str, ...]


@dataclass(frozen=True)
class CudaExtra:
    """Extras of a distribution that install its CUDA kernels (`aqlm[gpu]`, `sglang[srt]`): the bare
    distribution, or its CPU extra, installs and runs without them (NOTE [CUDA extras])."""

    distribution: str
    extras: tuple[str, ...]
    why: str
    sources: tuple[str, ...]


# NOTE [CPU-capable releases]
# A library the catalog calls CUDA-only may gain CPU wheels in a later release (bitsandbytes'
# multi-backend support). `cpu_since` names that release with its source: a requirement that admits
# only earlier releases still installs a CUDA-only build (OPS506, an error); one that admits that
# release or a later one installs and runs on a CPU host (OPS513, a warning naming the release): the
# code that calls the library still needs its port (OPS401 on its imports is unchanged).
# NOTE [CUDA extras]
# Some distributions run on CPU but have an extra that is their CUDA install (`aqlm[gpu]`: the
# Triton and CUDA kernels; `sglang[srt]`: sgl-kernel, flashinfer, cuda-python). `cuda_extras` lists
# them with sources; a requirement that asks for one of those extras is judged as a CUDA-only
# library (OPS506), the bare distribution or another extra is not.


@dataclass(frozen=True)
class Library:
    """One CUDA-only library: what replaces it on TorchNeuron, how big that is, and why."""

    id: str
    packages: tuple[str, ...]
    size: str
    replacement: str
    why: str
    hours: Range
    call_site_minutes: float
    api: tuple[ApiPart, ...]
    sources: tuple[str, ...]
    # the distributions (pip names, fnmatch patterns) that install it; () = its packages' names
    # (`flash_attn` -> `flash-attn`): read by the dependency rules (OPS506, docs/dependencies.md)
    distributions: tuple[str, ...] = ()
    # NOTE [CPU-capable releases]: the first release whose published wheels install and run on a CPU
    # host (bitsandbytes 0.46.0), with why and sources; None: no release does
    cpu_since: CpuSince | None = None

    def part_for(self, name: str) -> ApiPart | None:
        """The first API part that covers an imported name, else None (the entry's own hours)."""
        return next((part for part in self.api if part.matches(name)), None)


@dataclass(frozen=True)
class KernelFamily:
    """Custom kernels found by some rules: what they become and a factor on their measured size."""

    id: str
    rules: tuple[str, ...]
    replacement: str
    why: str
    factor: Range
    sources: tuple[str, ...]


@dataclass(frozen=True)
class Catalog:
    libraries: tuple[Library, ...]
    families: tuple[KernelFamily, ...]
    sizes: dict
    cuda_extras: tuple[CudaExtra, ...] = ()

    def library(self, package: str) -> Library | None:
        """The entry covering a top-level package (a library finding's subject); None: no entry."""
        return next((lib for lib in self.libraries if package in lib.packages), None)

    def family(self, rule: str) -> KernelFamily | None:
        """The kernel family of a rule id; None when the catalog has none for it."""
        return next((fam for fam in self.families if rule in fam.rules), None)


def _text(mapping, key: str, what: str) -> str:
    value = mapping.get(key)
    if not isinstance(value, str) or not value.strip():
        raise YamlProblem(f"{what}: {key!r} must be a non-empty string", line_of(mapping, key))
    return " ".join(value.split())


def _strings(mapping, key: str, what: str) -> tuple[str, ...]:
    value = mapping.get(key)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
        raise YamlProblem(f"{what}: {key!r} must be a non-empty list of strings", line_of(mapping, key))
    if len(set(value)) != len(value):
        raise YamlProblem(f"{what}: {key!r} lists a value twice", line_of(mapping, key))
    return tuple(value)


def _urls(mapping, what: str) -> tuple[str, ...]:
    urls = _strings(mapping, "sources", what)
    for url in urls:
        if not url.startswith("https://"):
            raise YamlProblem(f"{what}: source {url!r} is not a public https:// URL", line_of(mapping, "sources"))
    return urls


def _number(mapping, key: str, what: str) -> float:
    value = mapping.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise YamlProblem(f"{what}: {key!r} must be a number >= 0", line_of(mapping, key))
    return float(value)


def _range(mapping, key: str, what: str) -> Range:
    raw = mapping.get(key)
    _keys(raw, _RANGE, f"{what}.{key}", line_of(mapping, key))
    low, likely, high = (_number(raw, k, f"{what}.{key}") for k in ("low", "likely", "high"))
    if not low <= likely <= high:
        raise YamlProblem(f"{what}.{key}: needs low <= likely <= high (got {low:g}, {likely:g}, {high:g})",
                          line_of(mapping, key))
    return Range(low, likely, high)


def _size(mapping, what: str) -> str:
    value = mapping.get("size")
    if value not in SIZES:
        raise YamlProblem(f"{what}: size {value!r} is not one of: {', '.join(SIZES)}", line_of(mapping, "size"))
    return value


def _list(doc, key: str) -> list:
    items = doc.get(key)
    if not isinstance(items, list) or not items:
        raise YamlProblem(f"{key} must be a non-empty list", line_of(doc, key))
    return items


def _library(raw, seen_ids: dict, seen_packages: dict, line: int | None) -> Library:
    _keys(raw, _LIBRARY, "library entry", line)
    lib_id = _text(raw, "id", "library entry")
    what = f"library {lib_id}"
    if lib_id in seen_ids:
        raise YamlProblem(f"duplicate library id {lib_id!r} (first at line {seen_ids[lib_id]})", line_of(raw, "id"))
    seen_ids[lib_id] = line_of(raw, "id")
    packages = _strings(raw, "packages", what)
    for package in packages:
        if package in seen_packages:
            raise YamlProblem(f"{what}: package {package!r} is already covered by {seen_packages[package]}",
                              line_of(raw, "packages"))
        seen_packages[package] = lib_id
    parts = []
    api = raw.get("api", [])
    if not isinstance(api, list):
        raise YamlProblem(f"{what}: 'api' must be a list", line_of(raw, "api"))
    for item in api:
        part_line = line_of(item) if isinstance(item, dict) else getattr(api, "line", None)
        _keys(item, _PART, f"{what} api part", part_line)
        part_what = f"{what} api part"
        parts.append(ApiPart(_strings(item, "names", part_what), _size(item, part_what),
                             _text(item, "replacement", part_what), _text(item, "why", part_what),
                             _range(item, "hours", part_what)))
    return Library(lib_id, packages, _size(raw, what), _text(raw, "replacement", what), _text(raw, "why", what),
                   _range(raw, "hours", what), _number(raw, "call_site_minutes", what), tuple(parts),
                   _urls(raw, what), _strings(raw, "distributions", what) if "distributions" in raw else (),
                   _cpu_since(raw, what) if "cpu_since" in raw else None)


def _version(mapping, key: str, what: str) -> str:
    text = _text(mapping, key, what)
    try:
        Version(text)
    except InvalidVersion:
        raise YamlProblem(f"{what}: {key!r} {text!r} is not a version", line_of(mapping, key)) from None
    return text


def _cpu_since(raw, what: str) -> CpuSince:
    item = raw["cpu_since"]
    _keys(item, _CPU_SINCE, f"{what} cpu_since", line_of(raw, "cpu_since"))
    return CpuSince(_version(item, "version", f"{what} cpu_since"), _text(item, "why", f"{what} cpu_since"),
                    _urls(item, f"{what} cpu_since"))


def _extra(raw, seen: dict, line: int | None) -> CudaExtra:
    _keys(raw, _EXTRA, "cuda_extras entry", line)
    name = _text(raw, "distribution", "cuda_extras entry")
    what = f"cuda_extras {name}"
    if name in seen:
        raise YamlProblem(f"duplicate cuda_extras distribution {name!r} (first at line {seen[name]})",
                          line_of(raw, "distribution"))
    seen[name] = line_of(raw, "distribution")
    return CudaExtra(name, _strings(raw, "extras", what), _text(raw, "why", what), _urls(raw, what))


def _family(raw, seen_ids: dict, seen_rules: dict, line: int | None) -> KernelFamily:
    _keys(raw, _FAMILY, "kernel family", line)
    fam_id = _text(raw, "id", "kernel family")
    what = f"kernel family {fam_id}"
    if fam_id in seen_ids:
        raise YamlProblem(f"duplicate kernel family id {fam_id!r} (first at line {seen_ids[fam_id]})",
                          line_of(raw, "id"))
    seen_ids[fam_id] = line_of(raw, "id")
    rules = _strings(raw, "rules", what)
    for rule in rules:
        if rule in seen_rules:
            raise YamlProblem(f"{what}: rule {rule} already belongs to {seen_rules[rule]}", line_of(raw, "rules"))
        seen_rules[rule] = fam_id
    return KernelFamily(fam_id, rules, _text(raw, "replacement", what), _text(raw, "why", what),
                        _range(raw, "factor", what), _urls(raw, what))


def _build(doc) -> Catalog:
    _keys(doc, _TOP, "the catalog", 1)
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise YamlProblem(f"schema_version {doc.get('schema_version')!r} is not supported (expected {SCHEMA_VERSION})",
                          line_of(doc, "schema_version"))
    sizes = doc["sizes"]
    _keys(sizes, {name: True for name in SIZES}, "sizes", line_of(doc, "sizes"))
    for name in SIZES:
        _text(sizes, name, "sizes")
    libraries, ids, packages = [], {}, {}
    items = _list(doc, "libraries")
    for raw in items:
        libraries.append(_library(raw, ids, packages,
                                  line_of(raw) if isinstance(raw, dict) else getattr(items, 'line', None)))
    families, fam_ids, rules = [], {}, {}
    items = _list(doc, "kernel_families")
    for raw in items:
        families.append(_family(raw, fam_ids, rules,
                                line_of(raw) if isinstance(raw, dict) else getattr(items, 'line', None)))
    extras, seen = [], {}
    items = doc.get("cuda_extras", [])
    if not isinstance(items, list):
        raise YamlProblem("cuda_extras must be a list", line_of(doc, "cuda_extras"))
    for raw in items:
        extras.append(_extra(raw, seen, line_of(raw) if isinstance(raw, dict) else getattr(items, 'line', None)))
    return Catalog(tuple(libraries), tuple(families), {k: " ".join(v.split()) for k, v in sizes.items()},
                   tuple(extras))


def load_catalog(path: Path | str = CATALOG_PATH) -> Catalog:
    """Load and check a catalog file. Raises CatalogError naming the file and line."""
    return load_checked(path, _build, CatalogError, "cannot read the library catalog", memo=True)


@lru_cache(maxsize=1)
def shipped() -> Catalog:
    """The catalog shipped inside the package (loaded once per process)."""
    return load_catalog(CATALOG_PATH)


__all__ = ["CATALOG_PATH", "SIZES", "ApiPart", "Catalog", "CatalogError", "CpuSince", "CudaExtra", "KernelFamily",
           "Library", "Range",
           "load_catalog", "shipped"]
