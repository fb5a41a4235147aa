"""Paths written with Windows separators, read as the project's own files on POSIX.

NOTE [a path written with Windows separators]
Research code written on Windows names its data with backslashes (`default='EnglishDataset\\train.csv'`,
`'data\\images'`). On POSIX a backslash is an ordinary character of a file name, so that path names
no file, and the run stopped at the script's own existence check (`assert os.path.exists(...)`)
although the project holds `EnglishDataset/train.csv`. While a command runs with stand-ins
(`opscan PATH`; `opscan run` keeps them off and runs the command as written), a relative or absolute
path that holds a backslash, is absent as written, and whose form with `/` for every `\\` exists is
read as that form: `open`, `os.stat` (so `os.path.exists`/`isfile`/`isdir`/`getsize` and pathlib's
checks), `os.lstat`, `os.access`, `os.listdir` and `os.scandir`, hence every library reader that
opens the file through them (pandas' readers, `np.load`, `torch.load`, PIL). The stand-ins decide on the same
form (StandIns.answers), so a Windows path of the project's own file is read as the file, never
stood in for; one whose `/` form is absent too stays absent data, answered by the stand-ins as any
absent path is. A path that exists as written (a file whose name really holds a backslash) is left
alone. The report names each path read so once (kind `data`).
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Callable

from opscan.trace.run.stand_ins import Patches, StandIns, really_exists


def posix_form(path) -> str | None:
    """`path` with `/` for `\\` when it holds a backslash, is absent as written and exists so, else None."""
    if isinstance(path, os.PathLike):
        try:
            path = os.fspath(path)
        except TypeError:
            return None
    if not isinstance(path, str) or "\\" not in path or "\0" in path or "://" in path:
        return None
    form = path.replace("\\", "/")
    return form if not really_exists(path) and really_exists(form) else None


def install(stand_ins: StandIns, patches: Patches) -> dict[str, Callable]:
    """open and os's path calls patched now (installed first: every other stand-in wraps these)."""
    seen: set[str] = set()
    stand_ins.posix_form = posix_form   # the stand-ins decide on the form read

    def moved(path):
        form = posix_form(path)
        if form is None:
            return path
        if form not in seen:
            seen.add(form)
            stand_ins.record("data", os.fspath(path), f"read as {form} (a path written with Windows "
                             "separators; NOTE [a path written with Windows separators])")
        return form

    def opener(original: Callable) -> Callable:
        def open_(file, *args, **kwargs):
            return original(moved(file), *args, **kwargs)
        return open_

    def wrap(original: Callable) -> Callable:
        def call(path=".", *args, **kwargs):
            return original(moved(path), *args, **kwargs)
        return call

    patches.set(builtins, "open", opener(builtins.open))
    for name in ("stat", "lstat", "access", "listdir", "scandir"):
        patches.set(os, name, wrap(getattr(os, name)))
    return {}
