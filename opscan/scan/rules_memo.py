"""A memo of parsed rule files in the scan cache's folder: NOTE [rules memo]."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import yaml

import opscan

# NOTE [rules memo]
# Every run loads the ~50 shipped rule files; parsing their YAML with the strict loader (line
# numbers for each key, in Python) was most of the ~14 ms it took (issue 40's warm scan). A run
# that has a cache folder keeps, in `rules-memo.json` there, the parsed document of each rule file
# that loaded without a problem, keyed by the SHA-256 of the file's bytes: an edited file has
# other bytes, so it is parsed again (a key, not a stat, so a copy or a checkout with new times
# still hits). The validation that builds the Rule objects runs every time, on the memo's
# document as on a fresh parse; only documents that JSON gives back equal are kept (a date, a
# number as a key, a tag: never memoised). The memo is named by opscan's and PyYAML's versions
# and a format number: another version ignores it. A memo that does not read (truncated, not
# JSON, another shape) is ignored as if absent and rewritten. It is written once per run, only
# when it gained an entry, atomically (a temporary file in the same folder, then os.replace), and
# holds the entries of that run's files only, so it does not grow with edits. Documents carry no
# line numbers: an error found in a memoised document is raised again from a fresh parse, so it
# names its line (rules.py load_rule_file).

MEMO_NAME = "rules-memo.json"
FORMAT = 1


def _stamp() -> str:
    return f"{FORMAT}/{opscan.__version__}/{yaml.__version__}"


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
            doc = json.loads((self.folder / MEMO_NAME).read_bytes())
        except (OSError, ValueError):
            return {}
        if not isinstance(doc, dict) or doc.get("stamp") != _stamp() or not isinstance(doc.get("files"), dict):
            return {}
        return {k: v for k, v in doc["files"].items() if isinstance(v, dict)}

    def get(self, data: bytes) -> dict | None:
        """The document memoised for these bytes, or None."""
        key = _key(data)
        doc = self._old.get(key)
        if doc is not None:
            self._used[key] = doc
        return doc

    def put(self, data: bytes, doc: Any) -> None:
        """Remember `doc`, the parse of `data` that loaded without a problem (when JSON keeps it as is)."""
        if self.folder is None or not isinstance(doc, dict):
            return
        try:
            plain = json.loads(json.dumps(doc))
        except (TypeError, ValueError):
            return
        if plain != doc or not _same_types(plain, doc):
            return
        self._used[_key(data)] = plain
        self._gained = True

    def save(self) -> None:
        """Write the memo when this run added to it; a folder that cannot be written is no error."""
        if self.folder is None or not self._gained:
            return
        text = json.dumps({"stamp": _stamp(), "files": self._used}, sort_keys=True, separators=(",", ":"))
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
