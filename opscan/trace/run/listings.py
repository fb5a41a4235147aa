"""Listings of an absent data folder (NOTE [an empty listing of absent data]): `glob.glob`,
`glob.iglob` and `os.walk` called by the project's code on a folder that is not here. Nothing is
stood in for; each one is remembered so that a run stopping on the empty dataset says why.

NOTE [an empty listing of absent data]
Research datasets often find their files by listing a folder (`os.walk('../BSD68/cropped/clean')`
keeping `.png` names, `glob.glob(root + '/*/T1/T1_brain.nii.gz')`), and a listing of an absent
folder is not an error: it is empty. The run then stops far from the cause, on the empty dataset
(`random.randint(0, len(dataset) - 1)`: "empty range for randrange()", a sampler's "num_samples
should be a positive integer value, but got num_samples=0"). No synthetic file names are listed
(which names and formats a loader keeps is the project's, and a listing of the wrong kind would
only move the failure), but the stop reason names the absent folder and the line that listed it.
Only reads made by the project's own code count (StandIns.asked_by_library), of paths the
stand-ins would answer (absent, or outside the project); an empty listing of a folder that exists
says nothing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from opscan.trace.run.stand_ins import Patches, StandIns


def install(stand_ins: StandIns, patches: Patches) -> dict[str, Callable]:
    """glob and os.walk patched now (both are imported by then)."""
    import glob

    for name in ("glob", "iglob"):
        patches.set(glob, name, _watched(getattr(glob, name), stand_ins, glob_pattern=True))
    patches.set(os, "walk", _watched(os.walk, stand_ins, glob_pattern=False))
    return {}


def _watched(original: Callable, stand_ins: StandIns, glob_pattern: bool) -> Callable:
    def listing(top, *args, **kwargs):
        folder = _folder(top, glob_pattern)
        if folder and not stand_ins.asked_by_library(sys._getframe(1)) and stand_ins.answers(folder):
            stand_ins.empty_listing(folder)
        return original(top, *args, **kwargs)
    return listing


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
