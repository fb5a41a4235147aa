"""Listings of an absent data folder (NOTE [an empty listing of absent data]): `glob.glob`,
`glob.iglob` and `os.walk` called by the project's code on a folder that is not here: a glob of
media files lists synthetic names (NOTE [synthetic files of an absent media folder]); any other
listing is empty, and remembered so that a run stopping on the empty dataset says why. Also
`os.mkdir` of an output folder whose parent is absent (`_mkdir`).

NOTE [an empty listing of absent data]
Research datasets often find their files by listing a folder (`os.walk('../BSD68/cropped/clean')`
keeping `.png` names, `glob.glob(root + '/*/T1/T1_brain.nii.gz')`), and a listing of an absent
folder is not an error: it is empty. The run then stops far from the cause, on the empty dataset
(`random.randint(0, len(dataset) - 1)`: "empty range for randrange()", a sampler's "num_samples
should be a positive integer value, but got num_samples=0"). Synthetic names are listed only where
the pattern says the files' kind and a stand-in reads that kind (below); otherwise (which names and
formats a loader keeps is the project's, and a listing of the wrong kind would only move the
failure) the stop reason names the absent folder and the line that listed it.
Only reads made by the project's own code count (StandIns.asked_by_library), of paths the
stand-ins would answer (absent, or outside the project); an empty listing of a folder that exists
says nothing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from opscan.trace.run.stand_ins import Patches, StandIns


LISTED = 64   # synthetic files a glob of an absent media folder lists
# suffixes whose absent files a stand-in answers: PIL / cv2 images, audio clips, np.load arrays
MEDIA = (".jpg", ".jpeg", ".png", ".bmp", ".wav", ".flac", ".npy")


def install(stand_ins: StandIns, patches: Patches) -> dict[str, Callable]:
    """glob, os.walk and os.mkdir patched now (all are imported by then)."""
    import glob

    for name in ("glob", "iglob"):
        patches.set(glob, name, _watched(getattr(glob, name), stand_ins, glob_pattern=True, lazy=name == "iglob"))
    patches.set(os, "walk", _watched(os.walk, stand_ins, glob_pattern=False))
    patches.set(os, "mkdir", _mkdir(os.mkdir, stand_ins))
    return {}


def _watched(original: Callable, stand_ins: StandIns, glob_pattern: bool, lazy: bool = False) -> Callable:
    def listing(top, *args, **kwargs):
        folder = _folder(top, glob_pattern)
        if folder and not stand_ins.asked_by_library(sys._getframe(1)) and stand_ins.answers(folder):
            names = _media_names(os.fspath(top)) if glob_pattern else []
            if names:   # NOTE [synthetic files of an absent media folder]
                stand_ins.record("data", os.fspath(top), f"{len(names)} synthetic file names ({names[0]}, ...): the "
                                 "folder is not here; each file is answered by its reader's stand-in")
                return iter(names) if lazy else names
            stand_ins.empty_listing(folder)
        return original(top, *args, **kwargs)
    return listing


# NOTE [synthetic files of an absent media folder]
# A glob whose last part names files of a kind a stand-in reads (`root + '/*.jpg'`: PIL and cv2;
# `*.wav`: the audio readers; `*.npy`: np.load), in a folder that is not here, lists LISTED synthetic
# names (`000000.jpg`: digits, so a sort by the number in the name works), and each read of one is
# answered by its reader's stand-in (media_stand_ins.py, data_stand_ins.py). A pattern with a
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
