"""Whether a script sits inside a copy of another project kept in the repository (NOTE [vendored copies]).

NOTE [vendored copies]
Research repositories keep copies of other projects beside their own code: a GitHub archive
unpacked as it downloads (`models/pytorch-ssim-master/`, `*-main/`), a `third_party/` or
`external/` folder, or a folder that carries its own packaging and licence (`setup.py` or
`pyproject.toml` with a `LICENSE`/`COPYING` file: a project of its own, below the root). A script
of such a copy that trains (its demo: "maximise SSIM by gradient descent") is that other project's
command, not the team's: it ranks after every command of the project's own code, whatever its
evidence (ranking.py), and its reason says so. The root itself is never a copy; the project's own
package folder with its own packaging files is rare in research code and, when all scripts sit in
such folders, the order among them is unchanged. Read from names and the listing only.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

COPY_FOLDERS = frozenset({"third_party", "third-party", "thirdparty", "3rdparty", "external", "externals",
                          "extern", "vendor", "vendored", "_vendor"})
_ARCHIVE = re.compile(r".+-(master|main)$", re.I)   # a GitHub archive's folder: NAME-master, NAME-main
_PACKAGING = ("setup.py", "pyproject.toml")
_LICENCE = re.compile(r"(LICEN[CS]E|COPYING)([-.].*)?$", re.I)


def copy_folder(index, rel: str) -> str:
    """The folder (relative to the root) of the copy of another project that holds the file `rel`,
    or "" when it is the project's own (NOTE [vendored copies])."""
    parts = PurePosixPath(rel).parts[:-1]
    for depth in range(1, len(parts) + 1):
        name = parts[depth - 1]
        folder = PurePosixPath(*parts[:depth])
        if name.lower() in COPY_FOLDERS or _ARCHIVE.fullmatch(name) or _packaged(index, folder):
            return str(folder)
    return ""


def _packaged(index, folder: PurePosixPath) -> bool:
    """The folder holds packaging files and a licence of its own."""
    where = index.root / folder
    if not any((where / name).is_file() for name in _PACKAGING):
        return False
    try:
        return any(_LICENCE.match(entry.name) and entry.is_file() for entry in where.iterdir())
    except OSError:
        return False
