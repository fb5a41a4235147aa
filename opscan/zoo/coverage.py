"""The zoo's view of a coverage release: op -> status, a name, and a key that changes with its content."""

from __future__ import annotations

import hashlib

from opscan.errors import DatabaseError


class ReleaseCoverage:
    """Wraps an opscan.db Release; `key` hashes the release file, so an edited release re-checks rows."""

    def __init__(self, release) -> None:
        self.release = release
        self.name = release.spec
        try:
            content = release.path.read_bytes()
        except OSError:
            content = repr(sorted((k, e.status) for k, e in release.entries.items())).encode()
        self.key = hashlib.sha256(self.name.encode() + b"\0" + content).hexdigest()[:16]
        self._memo: dict[str, str] = {}

    def lookup(self, op: str):
        """The release's Coverage of `op` (with its evidence), for the verdict (opscan/verdict.py)."""
        from opscan.model import Coverage

        try:
            return self.release.lookup(op)
        except ValueError:  # not a parseable op name: nobody can have checked it
            return Coverage(op, "unknown")

    def status(self, op: str) -> str:
        hit = self._memo.get(op)
        if hit is None:
            try:
                hit = self.release.lookup(op).status
            except ValueError:  # not a parseable op name: nobody can have checked it
                hit = "unknown"
            self._memo[op] = hit
        return hit


def load_coverage(spec: str | None = None, db_file: str | None = None) -> ReleaseCoverage:
    """Load a release of the coverage database (default: the newest shipped one)."""
    try:
        from opscan.db import load_release
    except ImportError as exc:
        raise DatabaseError("the coverage database module (opscan.db.load_release) is not available") from exc
    return ReleaseCoverage(load_release(spec=spec, db_file=db_file))
