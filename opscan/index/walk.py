"""The folders a run never enters (the one skip list) and a project's files breadth first.

`SKIP_DIRS` is the one list of folders opscan never enters unless given explicitly: version
control, environments, caches, build output (docs/scan.md). The scan's walk
(opscan/scan/files.py) skips them, plus any virtual environment (a `pyvenv.cfg` inside) and
`*.egg-info` (`skipped_folder`). The model search (`files`, the walk of opscan/index's
`ProjectIndex`) skips the same, and also every hidden folder, a folder named `env` (SEARCH_ONLY)
and symbolic links: it looks for a project's own models, not for code to check.

`files` takes folders level by level, each sorted by name, so a project's own `model.py` comes
before vendored trees and the order is the same on every machine. At most `limit` files that
`keep` accepts are given.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path

# Folders never entered unless given explicitly (see docs/scan.md).
SKIP_DIRS = frozenset({
    ".git", ".hg", ".svn", ".tox", ".nox", ".venv", "venv", ".env", "site-packages", "dist-packages",
    "node_modules", "build", "dist", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache",
    ".eggs", ".ipynb_checkpoints", ".opscan_cache", ".hypothesis", ".idea", ".vscode",
})
# The model search also skips a folder named `env` (and every hidden folder): an environment
# without its `pyvenv.cfg` holds installed packages, not the project's models.
SEARCH_ONLY = frozenset({"env"})
MAX_FILES = 2000          # a search stops after this many files, shallowest first (docs/check.md)


def skipped_folder(name: str, path: str) -> bool:
    """Whether the scan's walk leaves the folder `name` at `path` out (SKIP_DIRS, `*.egg-info`, a venv)."""
    if name in SKIP_DIRS or name.endswith(".egg-info"):
        return True
    return os.path.exists(os.path.join(path, "pyvenv.cfg"))  # any virtual environment


def searched_folder(name: str, path: str) -> bool:
    """Whether the model search enters the folder (not skipped, not hidden, not `env`)."""
    return not (name in SEARCH_ONLY or name.startswith(".") or skipped_folder(name, path))


def files(root: Path, keep: Callable[[Path], bool] = lambda path: True,
          limit: int | None = MAX_FILES) -> Iterator[Path]:
    """The files under `root` that `keep` accepts, breadth first, at most `limit` of them (None: all)."""
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
                if searched_folder(entry.name, entry.path):
                    queue.append(path)
                continue
            if keep(path):
                count += 1
                if limit is not None and count > limit:
                    return
                yield path
