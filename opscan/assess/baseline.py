"""Baselines: record today's findings, then report only new ones; fingerprints survive moved lines.

# NOTE [fingerprints]
A finding's fingerprint is sha256 over: rule code, path, the code of its source line, and its
occurrence index among findings with the same (rule, path, code) in file order. Line numbers are
left out, so inserting or deleting other lines does not change it. The code of a Python line is
the line without its comment (Python's own tokenizer finds the comment, so a `#` inside a string
is part of the string) and with all whitespace removed: reindenting the line, changing the
spacing or adding a trailing comment (`# TODO: port`) keeps the fingerprint, while any other
change to the line makes it a new finding. Lines of other files (C++/CUDA sources, where `#` is
not a comment) are compared with all whitespace removed.
Findings without a source line use their message instead.

The file is JSON with an `opscan_baseline` format version. Format 1 (opscan before the
tokenizer-based fingerprints) compared whole lines with whitespace removed; it is still read and
matched with its own fingerprints, and `opscan baseline` rewrites it as format 2. A newer format
is refused with a clear error.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import tempfile
import tokenize
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from opscan.errors import InputError
from opscan.records import Finding, Report

BASELINE_VERSION = 2
FINGERPRINT_TEXT = {
    1: "sha256(rule, path, source line without whitespace, occurrence index)",
    2: "sha256(rule, path, source line without comment and whitespace, occurrence index)",
}


@dataclass(frozen=True)
class Entry:
    """One recorded finding."""

    fingerprint: str
    rule: str
    path: str
    line: int
    message: str
    version: int = BASELINE_VERSION   # the format whose fingerprint this is


@dataclass(frozen=True)
class Applied:
    """The result of matching findings against a baseline."""

    new: tuple[Finding, ...]         # findings not in the baseline
    known: int                       # findings the baseline hides
    stale: tuple[Entry, ...]         # entries that no longer match anything


_PYTHON = (".py", ".pyi", ".ipynb")


def _squeeze(text: str) -> str:
    return "".join(text.split())


@functools.lru_cache(maxsize=65536)
def code_of(line: str) -> str:
    """The code of one Python source line: the line without its comment, all whitespace removed.

    Only a real comment is removed: Python's tokenizer finds it, so a `#` inside a string stays
    code. A line that opens a bracket or a string it does not close (the first line of a
    multi-line call or docstring) is read as far as the tokenizer gets; a line the tokenizer
    rejects is taken whole. Lines without `#` have no comment and skip the tokenizer.
    """
    text = line.strip()
    if "#" not in text:
        return _squeeze(text)
    cut = len(text)
    try:
        for token in tokenize.generate_tokens(io.StringIO(text + "\n").readline):
            if token.type == tokenize.COMMENT:
                cut = token.start[1]
                break
    except (tokenize.TokenError, SyntaxError, ValueError):
        pass   # EOF inside a bracket or string: a comment would already have been seen
    return _squeeze(text[:cut])


def _line_key(finding: Finding, version: int) -> str:
    if not finding.snippet.strip():
        return "message:" + finding.message
    if version >= 2 and finding.location.path.endswith(_PYTHON):
        return code_of(finding.snippet)
    return _squeeze(finding.snippet)


def fingerprints(findings: tuple[Finding, ...] | list[Finding],
                 version: int = BASELINE_VERSION) -> list[tuple[Finding, str]]:
    """Each finding with its fingerprint (see NOTE [fingerprints]) of format `version`, in file order."""
    seen: Counter[tuple[str, str, str]] = Counter()
    out = []
    for finding in sorted(findings, key=Finding.sort_key):
        text = _line_key(finding, version)
        key = (finding.rule, finding.location.path, text)
        index = seen[key]
        seen[key] += 1
        digest = hashlib.sha256("\0".join((*key, str(index))).encode("utf-8")).hexdigest()[:32]
        out.append((finding, digest))
    return out


def entries(findings: tuple[Finding, ...] | list[Finding]) -> tuple[Entry, ...]:
    """The baseline entries for `findings`."""
    return tuple(Entry(fp, f.rule, f.location.path, f.location.line, f.message)
                 for f, fp in fingerprints(findings))


def write(path: Path, findings: tuple[Finding, ...] | list[Finding], tool_version: str) -> int:
    """Write a baseline of `findings` to `path` atomically; returns the number of entries."""
    rows = entries(findings)
    document = {
        "opscan_baseline": BASELINE_VERSION,
        "tool_version": tool_version,
        "fingerprint": FINGERPRINT_TEXT[BASELINE_VERSION],
        "entries": [
            {"fingerprint": e.fingerprint, "rule": e.rule, "path": e.path, "line": e.line,
             "message": e.message}
            for e in sorted(rows, key=lambda e: (e.path, e.line, e.rule, e.fingerprint))
        ],
    }
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise InputError(f"cannot write the baseline: {exc.strerror or exc}", path=str(path)) from None
        raise
    return len(rows)


def load(path: Path) -> tuple[Entry, ...]:
    """Read a baseline file. Raises InputError (naming the file) when it is missing or invalid."""
    path = Path(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("baseline file not found (create it with `opscan baseline PATH --output FILE`)",
                         path=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot read baseline: {exc.strerror}", path=str(path)) from exc
    except UnicodeDecodeError:
        raise InputError("baseline is not UTF-8 text (not an opscan baseline)", path=str(path)) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"baseline is not valid JSON ({exc.msg})", path=str(path), line=exc.lineno) from exc
    if not isinstance(document, dict) or "opscan_baseline" not in document:
        raise InputError("not an opscan baseline (no `opscan_baseline` version field)", path=str(path))
    version = document["opscan_baseline"]
    if not isinstance(version, int) or version < 1:
        raise InputError(f"invalid baseline version {version!r}", path=str(path))
    if version > BASELINE_VERSION:
        raise InputError(f"baseline format {version} was written by a newer opscan "
                         f"({document.get('tool_version', '?')}); this opscan reads format "
                         f"{BASELINE_VERSION}: upgrade opscan or re-create the baseline", path=str(path))
    rows = document.get("entries")
    if not isinstance(rows, list):
        raise InputError("baseline has no `entries` list", path=str(path))
    out = []
    for index, row in enumerate(rows):
        try:
            out.append(Entry(str(row["fingerprint"]), str(row["rule"]), str(row["path"]),
                             int(row.get("line", 0)), str(row.get("message", "")), version))
        except (KeyError, TypeError, ValueError):
            raise InputError(f"baseline entry {index} lacks fingerprint/rule/path", path=str(path)) from None
    return tuple(out)


def apply(findings: tuple[Finding, ...], baseline: tuple[Entry, ...]) -> Applied:
    """Split `findings` into new ones and ones the baseline knows; list the stale entries."""
    remaining = Counter(e.fingerprint for e in baseline)
    new = []
    known = 0
    version = baseline[0].version if baseline else BASELINE_VERSION   # one file, one format
    for finding, fp in fingerprints(findings, version):
        if remaining[fp] > 0:
            remaining[fp] -= 1
            known += 1
        else:
            new.append(finding)
    stale = []
    for entry in baseline:
        if remaining[entry.fingerprint] > 0:
            remaining[entry.fingerprint] -= 1
            stale.append(entry)
    return Applied(tuple(new), known, tuple(sorted(stale, key=lambda e: (e.path, e.line, e.rule))))


def filter_report(report: Report, path: Path, shown_path: str | None = None,
                  unchecked: tuple[str, ...] = ("OPS003",)) -> Report:
    """`report` with only the findings not in the baseline at `path`, and its BaselineStatus set.

    For `opscan scan`, which does not run the `unchecked` checks (unused suppressions, OPS003):
    baseline entries of those rules are left out, so they are never reported as stale.
    """
    from dataclasses import replace

    from opscan.records import BaselineStatus

    applied = apply(report.findings, tuple(e for e in load(path) if e.rule not in unchecked))
    status = BaselineStatus(path=shown_path or str(path), known=applied.known,
                            stale=tuple(f"{e.path}:{e.line}: {e.rule} {e.message}" for e in applied.stale))
    fired = {f.rule for f in applied.new}
    return replace(report, findings=applied.new, baseline=status,
                   rules=tuple(r for r in report.rules if r.id in fired))
