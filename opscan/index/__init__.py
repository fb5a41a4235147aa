"""One project index: each file of a run listed by one walk, read once and parsed once.

`ProjectIndex(root)` is made once per run (opscan/pipeline/analyse.py `analyse`) and handed to every stage
that reads the project's Python: the model search (opscan/targets/discovery.py, with the recipes,
registries, tests and call sites it reads) and the source scan (opscan/scan/tree.py). It holds,
per file, what was asked of it: the bytes (read with the scan's guarded read,
opscan/fsutil.py `read_source_bytes`), the text (decoded as the interpreter decodes it), the
`ast` tree (parsed by `parse`, the one parse of a project file) and the module-level import
bindings (opscan/index/resolver.py). Nothing here imports torch or runs project code; nothing
prints. NOTE [one project index] says what is kept and for how long.
"""

from __future__ import annotations

import ast
import io
import tokenize
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

from opscan.fsutil import read_source_bytes
from opscan.index import newer_syntax, walk
from opscan.index.resolver import Imports

MAX_FILES = walk.MAX_FILES

# NOTE [one project index]
# Discovery runs before the scan (it decides which models to trace), and both read the same Python
# files: before the index, a repository's model file was parsed by the model search, again to
# follow its base classes across files, again per class for its call sites, again for its tests,
# and once more by the scan. Now every one of them asks the run's ProjectIndex:
#   - the one walk (`paths`, breadth first, walk.py's skip list) is listed once and kept, so
#     the searches for candidates, base classes and call sites read one listing;
#   - `data(rel)` reads a file once; `tree(rel)` parses it once (`parsed[rel]` counts the parses,
#     which tests/targets/test_targets_index.py pins at one per file for `opscan PATH`);
#   - the scan (`scan_parse`) takes the tree the search parsed when its text is the same, and
#     parses the files nobody asked for without keeping them: the scan's memory does not grow with
#     the tree (NOTE [scan workers]); its forked workers inherit what the search parsed.
# A pickled index (a spawned worker) carries only its root: it reads and parses again on demand.
# Notebooks are parsed per cell by the search and as one text by the scan (two different texts).


def decode(data: bytes) -> str | None:
    """Python source bytes as the interpreter reads them (BOM, PEP 263 cookie, else UTF-8), with
    `\\r\\n` and `\\r` ending lines as `\\n`; None when they cannot be decoded (the scan reports why)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


class ProjectIndex:
    """The files of one project, listed, read and parsed once (NOTE [one project index])."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root).resolve()
        self.parsed: Counter[str] = Counter()          # relative path -> parses (tests count them)
        self._listing: list[Path] = []
        self._walk: Iterator[Path] | None = None
        self._walked = False
        self._data: dict[str, bytes | OSError] = {}
        self._text: dict[str, str | None] = {}
        self._trees: dict[str, ast.Module | BaseException] = {}
        self._imports: dict[str, Imports] = {}

    def __getstate__(self) -> dict:
        return {"root": self.root}          # a spawned worker reads again, on demand

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["root"])

    # -- the one walk ------------------------------------------------------------------------------
    def paths(self, keep: Callable[[Path], bool] = lambda path: True,
              limit: int | None = MAX_FILES) -> Iterator[Path]:
        """The project's files that `keep` accepts, breadth first (opscan/index/walk.py), at most
        `limit`; the walk is made once and its listing kept, however many searches read it."""
        count = 0
        for path in self._all():
            if keep(path):
                count += 1
                if limit is not None and count > limit:
                    return
                yield path

    def _all(self) -> Iterator[Path]:
        index = 0
        if self._walk is None and not self._walked:
            self._walk = walk.files(self.root, limit=None)
        while True:
            if index < len(self._listing):     # listed already (by this search or another one)
                yield self._listing[index]
                index += 1
                continue
            if self._walk is None:
                return
            try:
                path = next(self._walk)
            except StopIteration:
                self._walk, self._walked = None, True
                return
            self._listing.append(path)

    def rel(self, path: Path) -> str:
        """`path` relative to the root, with `/` separators."""
        return Path(path).relative_to(self.root).as_posix()

    # -- one read, one parse -----------------------------------------------------------------------
    def data(self, rel: str, *, keep: bool = True) -> bytes:
        """The file's bytes, read once (opscan/fsutil.py's guarded read). Raises OSError (an
        UnreadableFile saying why) for a file that cannot be read, every time it is asked."""
        found = self._data.get(rel)
        if found is None:
            try:
                found = read_source_bytes(self.root / rel, self.root)
            except OSError as exc:
                found = exc
            if keep:
                self._data[rel] = found
        if isinstance(found, OSError):
            raise found
        return found

    def text(self, rel: str, max_bytes: int | None = None) -> str | None:
        """The file's text (`decode`), or None when it cannot be read or decoded (or is over `max_bytes`)."""
        if rel not in self._text:
            try:
                data = self.data(rel)
            except OSError:
                return None
            if max_bytes is not None and len(data) > max_bytes:
                return None
            self._text[rel] = decode(data)
        return self._text[rel]

    def tree(self, rel: str, max_bytes: int | None = None) -> ast.Module | None:
        """The file's `ast` tree, parsed once; None when it cannot be read, decoded or parsed."""
        text = self.text(rel, max_bytes)
        if text is None:
            return None
        try:
            return self._parse(rel, text, keep=True)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return None

    def scan_parse(self, rel: str, text: str) -> ast.Module:
        """The tree of `text`, the scan's decoded text of `rel`: the one the index holds when the
        text is the same, else parsed now and not kept. Raises what `ast.parse` raises."""
        if rel in self._trees and self._text.get(rel) == text:
            return self._parse(rel, text, keep=True)
        return self._parse(rel, text, keep=False, cached=False)

    def _parse(self, rel: str, text: str, keep: bool, cached: bool = True) -> ast.Module:
        found = self._trees.get(rel) if cached else None
        if found is None:
            try:
                found = parse(text, rel)
            except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
                found = exc
            finally:
                self.parsed[rel] += 1
            if keep:
                self._trees[rel] = found
        if isinstance(found, BaseException):
            raise found
        return found

    def imports(self, rel: str, tree: ast.Module) -> Imports:
        """The module-level import bindings of the file (opscan/index/resolver.py), made once."""
        found = self._imports.get(rel)
        if found is None:
            found = Imports(rel)
            for node in tree.body:
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    found.add(node)
            self._imports[rel] = found
        return found

    def mentions(self, rel: str, word: bytes, max_bytes: int | None = None) -> bool:
        """Whether the file's bytes hold `word` (a cheap test before a parse)."""
        try:
            data = self.data(rel)
        except OSError:
            return False
        return (max_bytes is None or len(data) <= max_bytes) and word in data


def parse(text: str, filename: str) -> ast.Module:
    """The one parse of a project's file (warnings, e.g. invalid escapes, are the scan's to report).
    Syntax newer than the running interpreter's (PEP 695) is read with the same positions (NOTE
    [newer syntax] in index/newer_syntax.py); what neither parser reads raises `ast`'s SyntaxError."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(text, filename=filename)
        except SyntaxError:
            tree = newer_syntax.parse(text, filename)
            if tree is None:
                raise
            return tree


__all__ = ["MAX_FILES", "ProjectIndex", "decode", "parse"]
