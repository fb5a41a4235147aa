"""The shipped release files and how a spec (`torchneuron==2.33.0`, `torch-neuronx==2.14.3.0`) picks one."""

from __future__ import annotations

import re
from pathlib import Path

from opscan.db.loader import load_file
from opscan.db.release import Release
from opscan.errors import DatabaseError
from opscan.resources import coverage_db_dir

DEFAULT_BACKEND = "torchneuron"
_SPEC = re.compile(r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9_.-]*)\s*(?:==\s*(?P<version>[A-Za-z0-9_.+-]+))?\s*$")
_LOADED: dict[tuple[Path, bool], Release] = {}


def release_files(directory: Path | None = None) -> list[Path]:
    """The release files in `directory` (default: the shipped coverage_db/), sorted by name."""
    directory = coverage_db_dir() if directory is None else Path(directory)
    return sorted(p for p in directory.glob("*.yaml") if p.is_file())


def load_cached(path: Path, check_registry: bool = True) -> Release:
    """load_file, once per process and path (shipped files do not change while opscan runs)."""
    key = (Path(path).resolve(), check_registry)
    if key not in _LOADED:
        _LOADED[key] = load_file(Path(path), check_registry=check_registry)
    return _LOADED[key]


def shipped_releases(directory: Path | None = None, check_registry: bool = True) -> list[Release]:
    """Every shipped release, sorted by backend then version (oldest first)."""
    releases = [load_cached(p, check_registry) for p in release_files(directory)]
    return sorted(releases, key=lambda r: (r.backend, version_key(r.release)))


def version_key(version: str) -> tuple:
    """Sort key for dotted versions: '2.9.0' < '2.33.0'; non-numeric parts sort after numbers."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"[.+-]", version))


def spec_problem(spec: str, db_file: Path | None = None) -> str:
    """Why `spec` names no release (in `db_file`, else the shipped database), or "". The files are
    read without the check against the installed torch, so the config check imports no torch."""
    try:
        _find(spec, db_file, check_registry=False)
    except DatabaseError as exc:
        return str(exc)
    return ""


def load_release(spec: str | None = None, db_file: Path | None = None) -> Release:
    """The release `spec` names (None: the newest TorchNeuron release), or the file `db_file`.

    `db_file` may also be a folder of release files, searched instead of the shipped one.

    A spec is `BACKEND==RELEASE` (torchneuron==2.33.0, torch-neuronx-xla==2.32.0), a bare BACKEND
    (its newest release), a bare version (a TorchNeuron release: "2.33.0"), or `PACKAGE==VERSION` of a
    package a release lists (torch-neuronx==2.14.3.0).
    Raises DatabaseError listing the available releases when nothing matches.
    """
    return _find(spec, db_file, check_registry=True)


def _find(spec: str | None, db_file: Path | None, check_registry: bool) -> Release:
    directory = None
    if db_file is not None:
        if not Path(db_file).is_dir():
            return load_cached(Path(db_file), check_registry)
        directory = Path(db_file)  # a folder of release files replaces the shipped one
    releases = shipped_releases(directory, check_registry)
    if not releases:
        raise DatabaseError("no release files found", str(directory or coverage_db_dir()))
    if spec and spec.strip()[:1].isdigit():
        spec = f"{DEFAULT_BACKEND}=={spec.strip()}"  # a bare version names a TorchNeuron release
    match = _SPEC.match(spec or DEFAULT_BACKEND)
    if not match:
        raise DatabaseError(f"not a release spec: {spec!r} (expected e.g. 'torchneuron==2.33.0'); "
                            f"available: {_available(releases)}")
    name, version = match["name"].lower(), match["version"]
    found = [r for r in releases if r.backend == name and (version is None or r.release == version)]
    if not found and version is not None:
        found = [r for r in releases for p in r.packages if p.name.lower() == name and p.version == version]
    if not found:
        raise DatabaseError(f"no release {spec!r} in the coverage database; available: {_available(releases)}")
    return max(found, key=lambda r: version_key(r.release))


def _available(releases: list[Release]) -> str:
    return ", ".join(r.spec for r in releases)
