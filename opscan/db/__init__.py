"""Coverage database: strict loading, lookup, diff and probe.

Public API (pinned by tests/db/test_db_api.py; see docs/coverage-db.md):

    load_release(spec=None, db_file=None) -> Release     # None: the newest TorchNeuron release
    Release.lookup(op) -> Coverage;  check(release, ops) -> tuple[Coverage, ...] (sorted by op)
    Release.profile() -> DeviceProfile;  Release.pairs_with_torch(v) / Release.pairing_warning(v)
    shipped_releases() -> list[Release];  diff(old, new) -> Changelog;  load_file(path) -> Release
"""

from opscan.db.shipped import load_release, shipped_releases
from opscan.db.diff import Changelog, diff
from opscan.db.loader import load_file
from opscan.db.lookup import check
from opscan.db.release import Release

__all__ = ["Changelog", "Release", "check", "diff", "load_file", "load_release", "shipped_releases"]
