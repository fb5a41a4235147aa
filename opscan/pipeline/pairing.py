"""The torch pairing of a coverage-database release, read from its file's head without loading the database.

A source scan judges dependency manifests against the torch versions the selected release pairs
with (its `packages`), but must stay as fast as before: importing and loading opscan.db costs more
than a warm scan (docs/benchmarks.md). This module reads only each release file's head (the
top-level keys up to `packages`) and picks the release as `opscan.db.shipped.load_release` does
(tests/scan/test_scan_dependencies.py pins that both pick the same one for every spec form).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from opscan.errors import DatabaseError
from opscan.resources import coverage_db_dir

_HEAD_KEYS = ("schema_version", "backend", "release", "title", "released", "device", "dispatch_key", "packages")
_SPEC = re.compile(r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9_.-]*)\s*(?:==\s*(?P<version>[A-Za-z0-9_.+-]+))?\s*$")
_HEADS: dict[tuple[Path, int], "Head"] = {}


@dataclass(frozen=True)
class Head:
    """A release file's head: which release it is and the (package, version, torch minor) it pairs."""

    backend: str
    release: str
    packages: tuple[tuple[str, str, str], ...]

    @property
    def spec(self) -> str:
        return f"{self.backend}=={self.release}"

    @property
    def torch(self) -> tuple[str, ...]:
        """The torch minors the release pairs with, sorted ("2.13", "2.14")."""
        return tuple(sorted({t for _, _, t in self.packages if t}, key=_key))

    def describe(self) -> str:
        """"torch-neuronx 2.13.3.0 with torch 2.13, torch-neuronx 2.14.3.0 with torch 2.14"."""
        return ", ".join(f"{name} {version} with torch {torch}" for name, version, torch in self.packages)


def _key(version: str) -> tuple:
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"[.+-]", version))


def read_head(path: Path) -> Head:
    """The head of one release file; DatabaseError when it cannot be read or names no backend."""
    from opscan.strict_yaml import safe_data, yaml_error

    path = Path(path)
    try:
        stat = path.stat()
        cache_key = (path.resolve(), stat.st_mtime_ns)
        if cache_key in _HEADS:
            return _HEADS[cache_key]
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatabaseError(f"cannot read release file: {exc}", str(path)) from None
    head, seen = [], False
    for line in text.splitlines():
        top = re.match(r"^([A-Za-z_][\w-]*)\s*:", line)
        if top:
            if top[1] not in _HEAD_KEYS:
                break
            seen = seen or top[1] == "packages"
        head.append(line)
    try:
        doc = safe_data("\n".join(head)) if seen else safe_data(text)
    except yaml_error() as exc:
        raise DatabaseError(f"not valid YAML: {exc}", str(path)) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("backend"), str):
        raise DatabaseError("not a release file (no `backend`)", str(path))
    packages = tuple((str(p.get("name", "")), str(p.get("version", "")), str(p.get("torch", "")))
                     for p in doc.get("packages") or [] if isinstance(p, dict))
    result = Head(doc["backend"].lower(), str(doc.get("release", "")), packages)
    _HEADS[cache_key] = result
    return result


def release_head(spec: str | None = None, db_file: Path | None = None) -> Head:
    """The head of the release `spec` names (None: the newest TorchNeuron release), or of the file
    `db_file` (a folder replaces the shipped one), picked as opscan.db.load_release picks it."""
    if db_file is not None and not Path(db_file).is_dir():
        return read_head(Path(db_file))
    directory = Path(db_file) if db_file is not None else coverage_db_dir()
    heads = sorted((read_head(p) for p in sorted(directory.glob("*.yaml")) if p.is_file()),
                   key=lambda h: (h.backend, _key(h.release)))
    if not heads:
        raise DatabaseError("no release files found", str(directory))
    if spec and spec.strip()[:1].isdigit():
        spec = f"torchneuron=={spec.strip()}"
    match = _SPEC.match(spec or "torchneuron")
    available = ", ".join(h.spec for h in heads)
    if not match:
        raise DatabaseError(f"not a release spec: {spec!r} (expected e.g. 'torchneuron==2.33.0'); "
                            f"available: {available}")
    name, version = match["name"].lower(), match["version"]
    found = [h for h in heads if h.backend == name and (version is None or h.release == version)]
    if not found and version is not None:
        found = [h for h in heads for p in h.packages if p[0].lower() == name and p[1] == version]
    if not found:
        raise DatabaseError(f"no release {spec!r} in the coverage database; available: {available}")
    return max(found, key=lambda h: _key(h.release))
