"""Remembers, per installed torch, which attributes the suggested fixes rely on exist, so warm scans
skip `import torch`.

Checking fixes against the installed torch (fixes.py) imports torch: about 1.5 s of CPU, more than a
whole warm scan of a large tree. The answers only change when torch does, so they are kept in the
scan cache folder, in `probe-<key>.json`, keyed by the identity of the install read without
importing it: the path of torch's `__init__.py` and the size and mtime of it and of
`torch/version.py` (any reinstall rewrites them). A missing, torn or foreign file is ignored.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from pathlib import Path

from opscan.fsutil import atomic_write
from opscan.scan.cache import fingerprint
from opscan.scan.fixes import TorchProbe

_HEADER = b"opscan-probe 1 "


def torch_identity() -> str | None:
    """A key for the installed torch, computed without importing it; None if there is none."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    origin = Path(spec.origin)
    parts = [str(origin)]
    for path in (origin, origin.parent / "version.py"):
        try:
            st = path.stat()
        except OSError:
            parts.append("-")
            continue
        parts.append(f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}")
    return fingerprint(*parts)


class CachedProbe(TorchProbe):
    """A TorchProbe that answers from the cache folder and imports torch only for new questions."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        super().__init__()
        self.identity = torch_identity() if self.installed else None
        self.path = Path(directory) / f"probe-{self.identity[:24]}.json" if self.identity else None
        self.imported = False
        self._dirty = False
        if self.path is not None:
            self._load()

    def _load(self) -> None:
        if self.path is None:
            return
        try:
            raw = self.path.read_bytes()
            header, sep, body = raw.partition(b"\n")
            if not sep or header != _HEADER + hashlib.sha256(body).hexdigest().encode():
                return
            data = json.loads(body)
            if data.get("identity") != self.identity:
                return
            known = {str(k): bool(v) for k, v in dict(data["known"]).items()}
            version = data.get("version")
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return
        self._known.update(known)
        self.version = str(version) if version else None

    def _lookup(self, path: str) -> bool:
        self.imported = True
        self._dirty = True
        return super()._lookup(path)

    def save(self) -> None:
        """Write the answers if some are new (only when torch imported fine); errors are ignored."""
        if self.path is None or not self._dirty or not self.installed or self.version is None:
            return
        body = json.dumps({"identity": self.identity, "version": self.version, "known": self._known},
                          sort_keys=True, separators=(",", ":")).encode()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, _HEADER + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
        except OSError:
            pass
