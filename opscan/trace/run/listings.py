"""Listings of an absent data folder (NOTE [an empty listing of absent data]): `glob.glob`,
`glob.iglob`, `os.walk`, `os.listdir`, `os.scandir` and `pathlib.Path`'s `glob`, `rglob` and
`iterdir` called by the project's code on a folder that is not here: a glob of media files, or a
listing whose code names the media kind it keeps (listed_kinds.py), lists synthetic names (NOTE
[synthetic files of an absent media folder]); any other listing is as it was (empty, or the
absent folder's error), and remembered so that a run stopping on the empty dataset says why. Also
`os.mkdir` of an output folder whose parent is absent (`_mkdir`).

NOTE [an empty listing of absent data]
Research datasets often find their files by listing a folder (`os.walk('../BSD68/cropped/clean')`
keeping `.png` names, `glob.glob(root + '/*/T1/T1_brain.nii.gz')`), and a listing of an absent
folder is not an error: it is empty. The run then stops far from the cause, on the empty dataset
(`random.randint(0, len(dataset) - 1)`: "empty range for randrange()", a sampler's "num_samples
should be a positive integer value, but got num_samples=0"). Synthetic names are listed only where
the pattern says the files' kind and a stand-in reads that kind (below); otherwise (which names and
formats a loader keeps is the project's, and a listing of the wrong kind would only move the
failure; a listing whose code compares the names with a media suffix says it: NOTE [the media kind
a listing's code names]) the stop reason names the absent folder and the line that listed it.
A listing that keeps folders of an absent root lists synthetic class folders (NOTE [class folders
of an absent dataset] in listed_kinds.py). Only reads made by the project's own code count
(StandIns.asked_by_library), of paths the stand-ins would answer (absent, or outside the project);
an empty listing of a folder that exists says nothing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from opscan.trace.run import listed_kinds
from opscan.trace.run.stand_ins import Patches, StandIns


LISTED = 64   # synthetic files a glob of an absent media folder lists
# suffixes whose absent files a stand-in answers: PIL / cv2 images, audio clips, np.load arrays, tables
# (pandas' read_csv, np.loadtxt: table_stand_ins.py)
MEDIA = (".jpg", ".jpeg", ".png", ".bmp", ".wav", ".flac", ".npy", ".csv")


def install(stand_ins: StandIns, patches: Patches) -> dict[str, Callable]:
    """glob, os's and pathlib's listings and os.mkdir patched now (all are imported by then)."""
    import glob
    import pathlib

    for name in ("glob", "iglob"):
        patches.set(glob, name, _watched(getattr(glob, name), stand_ins, glob_pattern=True, lazy=name == "iglob"))
    patches.set(os, "walk", _watched(os.walk, stand_ins, glob_pattern=False))
    patches.set(os, "listdir", _names_of(os.listdir, stand_ins, "os.listdir", lambda top, names: names))
    patches.set(os, "scandir", _names_of(os.scandir, stand_ins, "os.scandir",
                                         lambda top, names: _entries(top, names, stand_ins.folders)))
    for name in ("glob", "rglob", "iterdir"):
        patches.set(pathlib.Path, name, _path_listing(getattr(pathlib.Path, name), name, stand_ins))
    patches.set(os, "mkdir", _mkdir(os.mkdir, stand_ins))
    return {}


def _watched(original: Callable, stand_ins: StandIns, glob_pattern: bool, lazy: bool = False) -> Callable:
    def listing(top, *args, **kwargs):
        folder = _folder(top, glob_pattern)
        frame = sys._getframe(1)
        if folder and not stand_ins.asked_by_library(frame) and stand_ins.answers(folder):
            if glob_pattern:
                names = _media_names(os.fspath(top))
                if names:   # NOTE [synthetic files of an absent media folder]
                    stand_ins.record("data", os.fspath(top), f"{len(names)} synthetic file names ({names[0]}, ...): "
                                     "the folder is not here; each file is answered by its reader's stand-in")
                    return iter(names) if lazy else names
            else:
                named = _named_kind(folder, frame, stand_ins, "os.walk")
                if named:
                    return iter([(os.fspath(top), [], named)])
            stand_ins.empty_listing(folder)
        return original(top, *args, **kwargs)
    return listing


def _names_of(original: Callable, stand_ins: StandIns, how: str, answer: Callable) -> Callable:
    """`os.listdir` / `os.scandir` of an absent folder whose code names a media kind: its synthetic names."""
    def listing(path=".", *args, **kwargs):
        folder = _folder(path, False)
        frame = sys._getframe(1)
        if folder and not args and not kwargs and not stand_ins.asked_by_library(frame) and stand_ins.answers(folder):
            named = _class_folders(folder, frame, stand_ins, how) or _named_kind(folder, frame, stand_ins, how)
            if named:
                return answer(folder, named)
        return original(path, *args, **kwargs)
    return listing


def _path_listing(original: Callable, method: str, stand_ins: StandIns) -> Callable:
    """`Path.glob` / `rglob` / `iterdir` of an absent folder: the pattern's media kind, or (a pattern `*`,
    or `iterdir`) the kind its code names."""
    def listing(self, *args, **kwargs):
        frame = sys._getframe(1)
        folder = os.fspath(self)
        if not folder or stand_ins.asked_by_library(frame) or not stand_ins.answers(folder):
            return original(self, *args, **kwargs)
        pattern = str(args[0] if args else kwargs.get("pattern", "")) if method != "iterdir" else "*"
        last = pattern.replace("\\", "/").rsplit("/", 1)[-1]
        how = f"pathlib.Path.{method}"
        names = [os.path.basename(n) for n in _media_names(os.path.join(folder, last))] if last != "*" \
            else (_class_folders(folder, frame, stand_ins, how) if method == "iterdir" else []) or \
            _named_kind(folder, frame, stand_ins, how)
        if names and last != "*":
            stand_ins.record("data", folder, f"{len(names)} synthetic file names ({names[0]}, ...) listed by {how}"
                             f"({pattern!r}): the folder is not here; each file is answered by its reader's stand-in")
        if names:
            return iter([self / name for name in names])
        if method != "iterdir":
            stand_ins.empty_listing(folder)
        return original(self, *args, **kwargs)
    return listing


def _named_kind(folder: str, frame, stand_ins: StandIns, how: str) -> list[str]:
    """LISTED synthetic names of the media kind the project's code listing `folder` at `frame` names
    (NOTE [the media kind a listing's code names]), recorded; [] when it names none."""
    filename = frame.f_code.co_filename if frame is not None else ""
    if not filename or not stand_ins.root or not os.path.abspath(filename).startswith(stand_ins.root + os.sep):
        return []
    found = listed_kinds.named_suffix(filename, frame.f_lineno, MEDIA)
    if found is None:
        return []
    suffix, line = found
    names = [f"{i:06d}{suffix}" for i in range(LISTED)]
    stand_ins.record("data", folder, f"{LISTED} synthetic file names ({names[0]}, ...) listed by {how}: the folder "
                     f"is not here, and the code that lists it keeps {suffix} files "
                     f"({stand_ins.finder.name(filename)}:{line}); each file is answered by its reader's stand-in")
    return names


CLASS_FOLDERS = 4   # synthetic class folders of an absent dataset's root (NOTE [class folders of an absent dataset])


def _class_folders(folder: str, frame, stand_ins: StandIns, how: str) -> list[str]:
    """CLASS_FOLDERS synthetic folder names when the project's code listing `folder` at `frame` keeps
    folders (NOTE [class folders of an absent dataset] in listed_kinds.py), recorded; else []."""
    filename = frame.f_code.co_filename if frame is not None else ""
    if not filename or not stand_ins.root or not os.path.abspath(filename).startswith(stand_ins.root + os.sep) \
            or os.path.normpath(os.path.abspath(folder)) in stand_ins.folders \
            or not listed_kinds.lists_folders(filename, frame.f_lineno):
        return []   # a class folder's own listing lists its files, never folders again
    names = [f"class_{i:03d}" for i in range(CLASS_FOLDERS)]
    stand_ins.folders.update(os.path.normpath(os.path.abspath(os.path.join(folder, n))) for n in names)
    stand_ins.record("data", folder, f"{CLASS_FOLDERS} synthetic class folders ({names[0]}, ...) listed by {how}: "
                     f"the folder is not here, and the code that lists it keeps folders "
                     f"({stand_ins.finder.name(filename)}:{frame.f_lineno}); each folder's files are answered "
                     "by their listing's and reader's stand-ins")
    return names


class _Entry:
    """A synthetic file (or class folder) of os.scandir's answer (os.DirEntry cannot be made)."""

    def __init__(self, folder: str, name: str, folders: set[str]) -> None:
        self.name = name
        self.path = os.path.join(folder, name)
        self._folder = os.path.normpath(os.path.abspath(self.path)) in folders   # a synthetic class folder

    def is_file(self, *, follow_symlinks: bool = True) -> bool:
        return not self._folder

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        return self._folder

    def is_symlink(self) -> bool:
        return False

    def __fspath__(self) -> str:
        return self.path


class _Entries:
    """os.scandir's answer: an iterator, usable in a `with`."""

    def __init__(self, entries: list[_Entry]) -> None:
        self._left = iter(entries)

    def __iter__(self):
        return self

    def __next__(self) -> _Entry:
        return next(self._left)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def close(self) -> None:
        return None


def _entries(folder: str, names: list[str], folders: set[str]) -> _Entries:
    return _Entries([_Entry(folder, name, folders) for name in names])


# NOTE [synthetic files of an absent media folder]
# A glob whose last part names files of a kind a stand-in reads (`root + '/*.jpg'`: PIL and cv2;
# `*.wav`: the audio readers; `*.npy`: np.load; `*.csv`: pandas' read_csv and np.loadtxt), in a
# folder that is not here, lists LISTED synthetic names (`000000.jpg`: digits, so a sort by the
# number in the name works), and each read of one is answered by its reader's stand-in
# (media_stand_ins.py, data_stand_ins.py, table_stand_ins.py). A pattern with a
# wildcard in a folder part, or of another suffix, lists nothing: the empty listing is named when the
# run stops on it (above).
def _media_names(pattern: str) -> list[str]:
    folder, last = os.path.split(pattern)
    if any(c in folder for c in "*?[") or not last.lower().endswith(MEDIA) or last.count("*") != 1 \
            or any(c in last for c in "?["):
        return []
    return [os.path.join(folder, last.replace("*", f"{i:06d}")) for i in range(LISTED)]


def _mkdir(original: Callable, stand_ins: StandIns) -> Callable:
    """`os.mkdir` of an output folder inside the project whose parent is absent makes the parents: the
    folders a README's preparation step makes (`mkdir -p data`), said in the report."""
    def mkdir(path, *args, **kwargs):
        try:
            return original(path, *args, **kwargs)
        except FileNotFoundError:
            full = os.path.realpath(os.fspath(path)) if isinstance(path, (str, os.PathLike)) else ""
            if not full or not stand_ins.root or not full.startswith(stand_ins.root + os.sep) \
                    or stand_ins.asked_by_library(sys._getframe(1)):
                raise
            stand_ins.record("data", os.fspath(path), "its absent parent folders made first (a folder the "
                             "project's preparation makes; the run's writes stay in its scratch copy)")
            os.makedirs(os.path.dirname(full), exist_ok=True)
            return original(path, *args, **kwargs)
    return mkdir


def _folder(top, glob_pattern: bool) -> str:
    """The folder a listing reads: the pattern's part before its first wildcard, or `top`."""
    try:
        text = os.fspath(top)
    except TypeError:
        return ""
    if not isinstance(text, str) or not text:
        return ""
    if glob_pattern:
        cut = min((i for i, c in enumerate(text) if c in "*?["), default=len(text))
        text = os.path.dirname(text[:cut]) if cut < len(text) else text
    return text
