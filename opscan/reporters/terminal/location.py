"""Source locations for the terminal: `path:line` shortened to fit, never broken across lines.

NOTE [whole locations]: rich breaks a word only when it is longer than its column, so a
`path:line` that fits the column is never split (`modeling_llama.py:16` above `4` reads as line
16). `fit` shortens a path that would not fit: the file name and the line stay whole, the middle
of the folder part becomes `…` (`src/…/llama/modeling_llama.py:164`), as editors shorten tabs.
"""

from __future__ import annotations

from rich.console import Console

ELLIPSIS = "…"
MIN_WIDTH = 24   # below this a column is too narrow to be worth fitting to: keep the file name whole


def fit(path: str, suffix: str, width: int) -> str:
    """`path + suffix` (suffix e.g. ":164" or ":3,7,9…") in at most `width` characters.

    The suffix and the file name are kept whole whenever they fit; folders go from the middle
    first, keeping the first folder and as many of the last ones as fit.
    """
    whole = path + suffix
    width = max(width, MIN_WIDTH)
    if len(whole) <= width:
        return whole
    folders, _, name = path.rpartition("/")
    tail = name + suffix
    if len(tail) + 2 > width:   # no room for a folder: the file name alone, else its end
        return tail if len(tail) <= width else ELLIPSIS + tail[-(width - 1):]
    parts = folders.split("/") if folders else []
    head = parts[:1]
    kept: list[str] = []
    for part in reversed(parts[1:]):
        candidate = "/".join([*head, ELLIPSIS, part, *kept, tail])
        if len(candidate) > width:
            break
        kept.insert(0, part)
    shown = "/".join([*head, ELLIPSIS, *kept, tail])
    return shown if len(shown) <= width else f"{ELLIPSIS}/{tail}"


def budget(console: Console, used: int) -> int:
    """Characters left for a location in a column when `used` columns go to the rest of the row."""
    return max(MIN_WIDTH, console.width - used)
