"""A memo of parsed rule files in the scan cache's folder: NOTE [rules memo]."""

from __future__ import annotations

import datetime
import hashlib
import importlib.util
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import opscan

# NOTE [rules memo]
# Every run loads the ~50 shipped rule files; parsing their YAML with the strict loader (line
# numbers for each key, in Python) was most of the ~14 ms it took (issue 40's warm scan), and a
# scan also parsed the catalog of CUDA-only libraries, the torch companion table and the table of
# packages that constrain torch (~72 KB) after importing PyYAML (~10 ms). A run that has a cache
# folder keeps, in `rules-memo.json` there, the parsed document of each rule file that loaded
# without a problem and of those shipped tables (strict_yaml.shipped_data, load_checked with
# `memo`), keyed by the SHA-256 of the text: an edited file has other bytes, so it is parsed again
# (a key, not a stat, so a copy or a checkout with new times still hits). The validation that
# builds the Rule objects (the catalog's entries) runs every time, on the memo's document as on a
# fresh parse; only documents that JSON gives back equal, with the same types, are kept (a number
# as a key, a set: never memoised; dates are kept as one-key objects). The memo is stamped with
# opscan's version, a format number and the size and mtime of PyYAML's own `__init__.py` (an
# upgrade of PyYAML rewrites it; its version would cost importing it): another stamp is ignored.
# A memo that does not read
# (truncated, not JSON, another shape) is ignored as if absent and rewritten. It is written only
# when the run added to it, atomically (a temporary file in the same folder, then os.replace),
# with the entries this run used plus those it read (up to MAX_ENTRIES; beyond, this run's only),
# so it does not grow without bound. Documents carry no line numbers: an error found in a
# memoised document is raised again from a fresh parse, so it names its line (rules.py
# load_rule_file, strict_yaml.load_checked). The memo of a run is the one `load_rules` opened on
# the scan's cache folder (`active()`); a run without a cache (`--no-cache`) parses everything.

MEMO_NAME = "rules-memo.json"
FORMAT = 1
MAX_ENTRIES = 400
_ACTIVE: list[RulesMemo] = []


def _stamp() -> str:
    spec = importlib.util.find_spec("yaml")
    try:
        st = os.stat(spec.origin) if spec is not None and spec.origin else None
    except OSError:
        st = None
    pyyaml = f"{st.st_size}-{st.st_mtime_ns}" if st is not None else "-"
    return f"{FORMAT}/{opscan.__version__}/{pyyaml}"


def open_memo(folder: Path) -> RulesMemo:
    """The memo of `folder`, which the shipped tables read later in this run consult too (`active`)."""
    if _ACTIVE and _ACTIVE[0].folder == folder:
        return _ACTIVE[0]
    _ACTIVE[:] = [RulesMemo(folder)]
    return _ACTIVE[0]


def close_memo() -> None:
    """No memo for the rest of this run (a run without a cache folder)."""
    _ACTIVE.clear()


def active() -> RulesMemo | None:
    """The memo `open_memo` last opened in this process, or None."""
    return _ACTIVE[0] if _ACTIVE else None


def _key(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class RulesMemo:
    """Parsed rule documents by the hash of their files' bytes; `folder` None keeps nothing."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self._old: dict[str, Any] = self._read() if folder is not None else {}
        self._used: dict[str, Any] = {}
        self._gained = False

    def _read(self) -> dict[str, Any]:
        assert self.folder is not None
        try:
            doc = json.loads((self.folder / MEMO_NAME).read_bytes(), object_hook=_decode)
        except (OSError, ValueError, TypeError):
            return {}
        if not isinstance(doc, dict) or doc.get("stamp") != _stamp() or not isinstance(doc.get("files"), dict):
            return {}
        return {k: v for k, v in doc["files"].items() if isinstance(v, dict)}

    def get(self, data: bytes) -> dict[str, Any] | None:
        """The document memoised for these bytes, or None."""
        key = _key(data)
        doc = self._used.get(key)
        if doc is None:
            doc = self._old.get(key)
            if doc is not None:
                self._used[key] = doc
        return doc

    def put(self, data: bytes, doc: Any, save: bool = False) -> None:
        """Remember `doc`, the parse of `data` that loaded without a problem (when JSON keeps it as is);
        `save`: write the memo now (a table read after the rules were loaded)."""
        if self.folder is None or not isinstance(doc, dict):
            return
        try:
            plain = json.loads(json.dumps(doc, default=_encode), object_hook=_decode)
        except (TypeError, ValueError):
            return
        if plain != doc or not _same_types(plain, doc):
            return
        self._used[_key(data)] = plain
        self._gained = True
        if save:
            self.save()

    def save(self) -> None:
        """Write the memo when this run added to it; a folder that cannot be written is no error."""
        if self.folder is None or not self._gained:
            return
        files = {**self._old, **self._used} if len(self._old) + len(self._used) <= MAX_ENTRIES else self._used
        text = json.dumps({"stamp": _stamp(), "files": files}, sort_keys=True, separators=(",", ":"), default=_encode)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".rules-memo-", suffix=".tmp", dir=self.folder)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    out.write(text)
                os.replace(tmp, self.folder / MEMO_NAME)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError:
            return
        self._gained = False


_DATE, _DATETIME = "\x00date", "\x00datetime"   # YAML's timestamps (`date: 2026-12-07`), as one-key objects


def _encode(value: Any) -> Any:
    if isinstance(value, datetime.datetime):
        return {_DATETIME: value.isoformat()}
    if isinstance(value, datetime.date):
        return {_DATE: value.isoformat()}
    raise TypeError(f"not memoised: {type(value).__name__}")


def _decode(obj: dict[str, Any]) -> Any:
    if len(obj) == 1:
        if _DATE in obj:
            return datetime.date.fromisoformat(obj[_DATE])
        if _DATETIME in obj:
            return datetime.datetime.fromisoformat(obj[_DATETIME])
    return obj


def _same_types(a: Any, b: Any) -> bool:
    """Equal values of the same types all the way down (JSON gives 1.0 == 1 and True == 1 back equal)."""
    if type(a) is not type(b) and not (isinstance(a, dict) and isinstance(b, dict)) \
            and not (isinstance(a, list) and isinstance(b, list)):
        return False
    if isinstance(a, dict):
        return all(_same_types(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return all(_same_types(x, y) for x, y in zip(a, b))
    return True
