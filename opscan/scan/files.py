"""Finds the files to scan under a root: skips VCS, virtualenv, dependency and build folders; no loops."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from fnmatch import fnmatchcase
from pathlib import Path

from opscan.errors import InputError
from opscan.fsutil import inside
from opscan.index.walk import skipped_folder

PYTHON_SUFFIXES = (".py", ".ipynb")
NATIVE_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c++", ".h", ".hpp", ".hh", ".hxx")
BUILD_FILES = ("setup.py", "pyproject.toml")
SCANNED_SUFFIXES = PYTHON_SUFFIXES + NATIVE_SUFFIXES

MANIFEST_KINDS = ("requirements", "pyproject", "setup-py", "setup-cfg", "pipfile", "uv-lock", "poetry-lock",
                  "pdm-lock", "pipfile-lock", "conda", "dockerfile")


_FIXED_MANIFESTS = {"pyproject.toml": "pyproject", "setup.py": "setup-py", "setup.cfg": "setup-cfg",
                    "Pipfile": "pipfile", "uv.lock": "uv-lock", "poetry.lock": "poetry-lock", "pdm.lock": "pdm-lock",
                    "Pipfile.lock": "pipfile-lock"}


def manifest_kind(relpath: str) -> str:
    """The kind of manifest a path is by its name, or "" when it is none."""
    parts = relpath.rsplit("/", 2)
    base = parts[-1]
    low = base.lower()
    if low.endswith(".py") and not low.startswith(("dockerfile", "containerfile")):
        return _FIXED_MANIFESTS.get(base, "")   # most of a tree: only setup.py is one
    folder = parts[-2].lower() if len(parts) > 1 else ""
    if low.endswith((".txt", ".in")) and ("requirements" in low or "constraints" in low or folder == "requirements"
                                          or low.startswith("requirements")):
        return "requirements"
    if base in _FIXED_MANIFESTS:
        return _FIXED_MANIFESTS[base]
    if low.endswith((".yml", ".yaml")) and (low.startswith(("environment", "conda", "env.", "env-", "env_"))
                                            or "conda" in low):
        return "conda"
    if low in ("dockerfile", "containerfile") or low.startswith(("dockerfile.", "dockerfile-", "containerfile."))\
            or low.endswith((".dockerfile", ".containerfile")):
        return "dockerfile"
    return ""


# NOTE [manifests for other hardware]
# A Trainium host is an x86_64 Linux machine with no GPU, so the install a port changes never reads a
# manifest written for other hardware: a ROCm, Ascend NPU or Intel XPU build, an Arm (aarch64) host or
# macOS / Windows. A requirement whose environment marker excludes Linux x86_64 is skipped for that
# reason; a manifest whose own name says so (`requirements_rocm.txt`, `requirements_cuda12_arm.txt`,
# `requirements/npu.txt`, `Dockerfile.rocm`, a `docker-rocm/` or `xpu/` folder) is the same
# statement made by the file, and is not judged either (the precision sweep: 43 errors on such files,
# every one a line the port need not change). Words are whole parts of the name split at `/ . _ -`;
# `arm`, `mac`, `win` and `apple` (`requirements_apple-silicon.txt`: a Mac) count in the file's own
# name only (a robot's `arm/` folder is no Arm host).
_OTHER_HARDWARE = {"rocm", "hip", "npu", "ascend", "xpu", "aarch64", "arm64", "macos", "osx", "darwin", "mps",
                   "windows", "win32", "win64"}
_OTHER_HARDWARE_NAME = _OTHER_HARDWARE | {"arm", "mac", "win", "apple"}


def other_hardware(relpath: str) -> str:
    """The word of a manifest's path saying it is for other hardware than a Trainium host, or ""
    (NOTE [manifests for other hardware])."""
    *folders, name = relpath.lower().split("/")
    for word in re.split(r"[._-]+", name):
        if word in _OTHER_HARDWARE_NAME:
            return word
    for folder in folders:
        for word in re.split(r"[._-]+", folder):
            if word in _OTHER_HARDWARE:
                return word
    return ""


def _manifest(name: str, rel: str) -> bool:
    """A dependency manifest (scan/manifests.py): requirements files, locks, conda envs, Dockerfiles."""
    if not name.endswith((".txt", ".in", ".lock", ".cfg", ".yml", ".yaml")) and "ockerfile" not in name \
            and "ontainerfile" not in name and name != "Pipfile":
        return False
    return bool(manifest_kind(rel))


def _skip_dir(entry: os.DirEntry[str]) -> bool:
    return skipped_folder(entry.name, entry.path)   # the one skip list (opscan/index/walk.py)


def _excluded(relpath: str, exclude: tuple[str, ...]) -> bool:
    """`--exclude` globs match the relative path, any suffix of it, or any one path component."""
    parts = relpath.split("/")
    for pattern in exclude:
        pattern = pattern.rstrip("/")
        if fnmatchcase(relpath, pattern) or any(fnmatchcase(p, pattern) for p in parts):
            return True
        if any(fnmatchcase("/".join(parts[i:]), pattern) for i in range(1, len(parts))):
            return True
    return False


def relative(path: Path, root: Path) -> str:
    """`path` relative to `root` with `/` separators (the absolute path if outside the root)."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        try:
            return Path(os.path.relpath(path, root)).as_posix()
        except ValueError:  # pragma: no cover - another drive on Windows
            return path.as_posix()


def discover(root: Path, paths: Iterable[str | os.PathLike[str]] | None = None,
             exclude: Iterable[str] = ()) -> list[str]:
    """Relative paths (sorted, unique) of the files to scan.

    Args:
        root: the folder findings are relative to.
        paths: files or folders to scan (default: the root); a missing one raises InputError.
            Files given explicitly are scanned whatever their suffix or folder, unless excluded.
        exclude: extra glob patterns (see _excluded).
    """
    exclude = tuple(exclude)
    root = root.resolve() if root.exists() else root
    found: set[str] = set()
    for raw in (paths or [root]):
        start = Path(raw)
        if not start.is_absolute():
            start = Path.cwd() / start
        if not start.exists() and not start.is_symlink():
            raise InputError("no such file or directory", path=str(raw))
        if start.is_file() or (start.is_symlink() and not start.is_dir()):
            rel = relative(start.absolute(), root)
            if not _excluded(rel, exclude):
                found.add(rel)
            continue
        _walk(start, root, exclude, found)
    return sorted(found)


def _walk(start: Path, root: Path, exclude: tuple[str, ...], found: set[str]) -> None:
    # Strings, not Path objects: on a 3,000-file tree the Path arithmetic was most of the walk.
    visited: set[tuple[int, int]] = set()
    top = str(start.absolute())
    root_prefix = str(root).rstrip(os.sep) + os.sep
    stack = [top]

    def rel_of(path: str) -> str:
        if path.startswith(root_prefix):
            rel = path[len(root_prefix):]
            return rel.replace(os.sep, "/") if os.sep != "/" else rel
        return relative(Path(path), root)

    while stack:
        folder = stack.pop()
        try:
            st = os.stat(folder)
        except OSError:
            continue
        key = (st.st_dev, st.st_ino)
        if key in visited:          # a symlink loop or a folder reached twice
            continue
        visited.add(key)
        try:
            entries = list(os.scandir(folder))
        except OSError:
            if folder != top:  # reported as an unreadable "file" (OPS001), not skipped
                found.add(rel_of(folder))
            continue
        for entry in entries:
            try:
                is_dir = entry.is_dir()
                is_file = entry.is_file()
            except OSError:
                continue
            if is_dir:
                if entry.is_symlink() and not inside(entry.path, root):
                    continue        # a link out of the tree: never followed (docs/reliability.md)
                if not _skip_dir(entry) and not (exclude and _excluded(rel_of(entry.path), exclude)):
                    stack.append(entry.path)
            elif is_file and (entry.name.endswith(SCANNED_SUFFIXES) or entry.name in BUILD_FILES
                              or _manifest(entry.name, rel_of(entry.path))):
                rel = rel_of(entry.path)
                if not _excluded(rel, exclude):
                    found.add(rel)
