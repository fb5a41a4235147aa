"""A repository's files, breadth first: the one walk of discovery (opscan/discover.py) and of the
call-site reader (opscan/targets/call_sites.py).

Folders are taken level by level, each sorted by name, so a project's own `model.py` comes before
vendored trees and the order is the same on every machine. Symbolic links, hidden folders,
`*.egg-info`, virtual environments (a `pyvenv.cfg` inside) and the caller's `skip_dirs` are never
entered. At most `limit` files that `keep` accepts are given.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path

MAX_FILES = 2000          # a search stops after this many files, shallowest first (docs/check.md)


def files(root: Path, keep: Callable[[Path], bool], skip_dirs: frozenset[str],
          limit: int = MAX_FILES) -> Iterator[Path]:
    """The files under `root` that `keep` accepts, breadth first, at most `limit` of them."""
    count = 0
    queue = deque([Path(root)])
    while queue:
        folder = queue.popleft()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.is_symlink():
                continue
            path = Path(entry.path)
            if entry.is_dir():
                if entry.name not in skip_dirs and not entry.name.startswith(".") \
                        and not entry.name.endswith(".egg-info") and not (path / "pyvenv.cfg").exists():
                    queue.append(path)
                continue
            if keep(path):
                count += 1
                if count > limit:
                    return
                yield path
