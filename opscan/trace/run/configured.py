"""The call that configures a library, as a task's site: the `collate_fn=` a script gives a DataLoader
(NOTE [sites the user can change] in opscan/trace/sources.py).

While a script's loop fetches a batch, the ops its collate function dispatches (a tokenizer's pad, a
transformers collator) come from library lines the user cannot change; what the user can change is
the collator the loader was given. So each DataLoader a script builds remembers where: the project's
line of the call, refined from the script's source to the line of its `collate_fn=` argument (or, when
that is a name, the line that assigned the name before the call). While one of its iterators fetches
a batch, that line is the site of the ops a library dispatches.
"""

from __future__ import annotations

import ast
import contextlib
import sys
from functools import lru_cache


@lru_cache(maxsize=64)
def _tree(filename: str) -> ast.Module | None:
    try:
        with open(filename, encoding="utf-8") as handle:
            return ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None


def collate_line(filename: str, line: int) -> int:
    """The line of the `collate_fn=` argument of the call at `line` of `filename` (or of the
    assignment of the name it passes, the last one above the call); `line` when there is none."""
    tree = _tree(filename)
    if tree is None:
        return line
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and n.lineno <= line <= (n.end_lineno or n.lineno)]
    for call in sorted(calls, key=lambda n: (n.end_lineno or n.lineno) - n.lineno):
        keyword = next((k for k in call.keywords if k.arg == "collate_fn"), None)
        if keyword is None:
            continue
        if isinstance(keyword.value, ast.Name):
            assigned = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Assign) and n.lineno < call.lineno
                        and any(isinstance(t, ast.Name) and t.id == keyword.value.id for t in n.targets)]
            if assigned:
                return max(assigned)
        return keyword.value.lineno
    return line


@contextlib.contextmanager
def loader_sites(finder):
    """Inside: each DataLoader remembers the project's line that configures its collate function, and
    its iterators make that line the site of the library ops they dispatch (`finder.configured`)."""
    from torch.utils.data import dataloader

    init, fetch = dataloader.DataLoader.__init__, dataloader._BaseDataLoaderIter.__next__
    sites: dict[int, tuple[object, tuple[str, int]]] = {}   # id(collate_fn) -> (it, (name, line))

    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        frame = sys._getframe(1)
        while frame is not None and not finder.is_project(frame.f_code.co_filename):
            frame = frame.f_back
        collate = kwargs.get("collate_fn")
        if frame is None or collate is None:
            return
        filename = frame.f_code.co_filename
        sites[id(collate)] = (collate, (finder.name(filename), collate_line(filename, frame.f_lineno)))

    def __next__(self):
        held = sites.get(id(getattr(self, "_collate_fn", None)))
        if held is None or held[0] is not self._collate_fn:
            return fetch(self)
        before, finder.configured = finder.configured, held[1]
        try:
            return fetch(self)
        finally:
            finder.configured = before

    dataloader.DataLoader.__init__, dataloader._BaseDataLoaderIter.__next__ = __init__, __next__
    try:
        yield
    finally:
        dataloader.DataLoader.__init__, dataloader._BaseDataLoaderIter.__next__ = init, fetch
