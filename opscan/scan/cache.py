"""Content-addressed cache of per-file scan results, plus a stat index that lets warm runs skip reading.

# NOTE [scan cache]
Where: `--cache-dir DIR`, else `$OPSCAN_CACHE_DIR`, else `$XDG_CACHE_HOME/opscan` (default
`~/.cache/opscan`): one folder per user, shared by all projects, and never inside the scanned
tree, because what is inside the tree is under the control of whoever wrote the change being
scanned: a pull request could commit a cache folder whose entries (checksums are not secrets) say
"no findings" for its CUDA code. For CI, point `--cache-dir` at a folder the CI system keeps
between runs of trusted builds (e.g. a cache step keyed on the branch), never at one restored from
an untrusted change. The folder holds a `CACHEDIR.TAG` and a `.gitignore` of `*`, so backups skip
it and git never sees it. Deleting it is always safe.

What: one small file per scanned file content, `v1/<salt>/<aa>/<key>.json` with
key = sha256(relative path, sha256 of the file's bytes) — the path is part of the key because a
result names its file (two identical files at two paths have two entries) — and
`salt` = sha256(opscan version, scanner code, rules_salt, project facts): change any of them
and the old entries are never looked up again (the 8 most recently used salts are kept, older
ones pruned). An entry is one header line `opscan-cache 1 <key> <sha256 of body>`
and a JSON body. Entries are written to a temporary file and renamed into place (atomic); a
reader that finds a torn, truncated, edited or foreign entry ignores it and the file is scanned
again; an entry is never trusted without its checksum.

Warm runs: the tree-level index `v1/<salt>/index-<root hash>.json`, one file per (scanned root,
salt), maps each relative path to its stat signature (size, mtime_ns, inode, ctime_ns), content
sha and encoded result, as seen the last time. It is read in one go: a file whose signature
matches is not even read, and its result comes from the index itself, so a warm run opens one
cache file, not one per scanned file. A file whose signature changed goes through the per-file,
content-keyed path above (read, hash, entry file, else scan); the entry files stay the source for
a file whose stat changed but whose bytes did not (a `touch`, a checkout). The index is written
like an entry (temporary file, then rename: a reader sees the old index or the new one, never a
half-written one; of two scans at once, the last rename wins and the other's records are only
lost, each index being whole) and carries the checksum of its body in its header: a torn,
edited, older-format or foreign index is ignored (the run reads every file, as cold), never a
crash.

# NOTE [stat validation]
The stat signature is (size, mtime_ns, inode, ctime_ns), what git's index compares too (less
uid/gid/dev: a restored or re-mounted tree changes those without changing a byte): any write
through the file system changes mtime (and usually size); a replace by rename (editors, git
checkout) changes the inode even when size and mtime are restored; and ctime, which no user call
can set, changes with every write, rename or chmod, so an edit whose mtime was put back (`touch
-d`, `cp -p`, an archive extracted over the tree) is still seen. It is ambiguous only when the
file was written within the clock's granularity of the index write (the "racy git" problem: a
second write in the same tick leaves the same stat). So a file whose mtime lies within RACY_NS
(2 s: coarser than any common file system's granularity, FAT's included) of the moment the index
was written is not trusted: it is re-read and its content hash compared (the content-hash
fallback), still without re-scanning when the bytes are the same, and its entry is rewritten so
that the next index can trust it. As in git, ctime is compared but not checked for raciness.
What it misses, as ruff's cache (keyed on modification time and permissions) and git's index do:
a write that keeps the size and puts back mtime and ctime, which takes changing the system clock
or writing to the block device under the file system (root only, and a tree whose owner does
that can fool any checker); a write of the same size that also puts back an old mtime, both
within one tick of the file system's clock of the moment this run read the file (the ctime then
looks unchanged); and a file system that reports no ctime or a constant one (some network and
FUSE file systems) together with an editor that restores mtime. Neither happens to
a tree edited, checked out or unpacked by ordinary means; `--no-cache` scans everything.
What a result depends on besides the file (opscan version, scanner code, rules, config-selected
rule set, options, project facts, the installed-torch check) is in the salt: any change gives
another index and other entries.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opscan.fsutil import atomic_write

if TYPE_CHECKING:
    from opscan.scan.rules import RuleSet

CACHE_DIR_ENV = "OPSCAN_CACHE_DIR"
FORMAT = "v1"
KEEP_SALTS = 8
RACY_NS = 2_000_000_000
_HEADER = b"opscan-cache 1 "
_TAG = b"Signature: 8a477f597d28d172789f06886806bc55\n# opscan scan cache; see docs/benchmarks.md\n"


def fingerprint(*parts: str | bytes) -> str:
    """sha256 over `parts`, each length-prefixed so that ("ab", "c") != ("a", "bc")."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8", "surrogateescape") if isinstance(part, str) else part  # odd file names
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def files_fingerprint(paths: Iterable[Path]) -> str:
    """Fingerprint of some files' names and bytes (rule files, scanner sources), order-independent."""
    parts: list[str | bytes] = []
    for path in sorted(Path(p) for p in paths):
        parts.append(path.name)
        parts.append(path.read_bytes())
    return fingerprint(*parts)


def facts_fingerprint(facts: object) -> str:
    """Fingerprint of a dataclass of scan-wide facts (e.g. scan.project.Project); sets are sorted,
    so the value does not depend on hash randomisation."""
    parts: list[str] = []
    for f in dataclasses.fields(facts):  # type: ignore[arg-type]
        value = getattr(facts, f.name)
        if isinstance(value, (set, frozenset)):
            value = sorted(value)
        parts += [f.name, repr(value)]
    return fingerprint(*parts)


def code_fingerprint() -> str:
    """Fingerprint of the scanner's own sources (this package), so an edited checkout never reuses
    results of older code even when the version number did not change."""
    here = Path(__file__).resolve().parent
    package = here.parent
    extra = [package / name for name in ("fsutil.py",) if (package / name).is_file()]
    # the scan (families/ included) and what it imports: the index parses and resolves for it, the records
    return files_fingerprint([*here.rglob("*.py"), *(package / "index").glob("*.py"),
                              *(package / "records").glob("*.py"), *extra])


def rules_salt(rules: RuleSet) -> str:
    """All a cached result depends on in a RuleSet: its fingerprint() plus the bytes of every rule
    file (so a change of a rule's name, category or `requires` also invalidates old results)."""
    parts: list[str | bytes] = [rules.fingerprint()]
    for path in sorted({str(r.path) for r in rules if getattr(r, "path", None)}):
        try:
            parts += [path, Path(path).read_bytes()]
        except OSError:
            parts += [path, "-"]
    return fingerprint(*parts)


def scan_salt(rules_fingerprint: str, *extra: str) -> str:
    """The salt of a scan: opscan version, scanner code, rules, and any `extra` inputs of the scan
    (e.g. project facts that results depend on)."""
    from opscan import __version__

    return fingerprint(__version__, code_fingerprint(), rules_fingerprint, *extra)


def default_cache_dir(override: str | os.PathLike[str] | None = None) -> Path:
    """Where the scan cache lives (see NOTE [scan cache]); never inside the scanned tree by default."""
    if override:
        return Path(override)
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "opscan"


def content_hash(data: bytes) -> str:
    """The hash of a file's content."""
    return hashlib.sha256(data).hexdigest()


def entry_key(relpath: str, sha: str) -> str:
    """The cache key of the file at `relpath` whose content hashes to `sha`."""
    return fingerprint(relpath, sha)


Signature = tuple[int, int, int, int]


def stat_key(st: os.stat_result) -> Signature:
    """The part of a stat the index compares: (size, mtime_ns, inode, ctime_ns) (NOTE [stat validation])."""
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)


class ResultCache:
    """Per-file results by content hash under one salt; never raises on I/O, only stops writing."""

    def __init__(self, directory: str | os.PathLike[str], salt: str) -> None:
        self.directory = Path(directory)
        self.salt = salt
        self.base = self.directory / FORMAT / salt[:32]
        self.writable = True
        self.write_errors = 0
        self.corrupt = 0
        self._made: set[Path] = set()

    def salted(self, *extra: str) -> "ResultCache":
        """The same cache folder under a salt that also covers `extra` (e.g. project facts)."""
        return ResultCache(self.directory, fingerprint(self.salt, *extra))

    # -- setup ---------------------------------------------------------------------------------
    def prepare(self) -> None:
        """Create the folder (with CACHEDIR.TAG and .gitignore) and prune old salts; idempotent."""
        try:
            self.base.mkdir(parents=True, exist_ok=True)
            tag = self.directory / "CACHEDIR.TAG"
            if not tag.exists():
                atomic_write(tag, _TAG)
            ignore = self.directory / ".gitignore"
            if not ignore.exists():
                atomic_write(ignore, b"# created by opscan\n*\n")
            os.utime(self.base)
            self._prune()
        except OSError:
            self.writable = False
            self.write_errors += 1

    def _prune(self) -> None:
        salts = [p for p in (self.directory / FORMAT).iterdir() if p.is_dir()]
        salts.sort(key=lambda p: p.stat().st_mtime_ns, reverse=True)
        for old in salts[KEEP_SALTS:]:
            if old != self.base:
                shutil.rmtree(old, ignore_errors=True)

    # -- entries -------------------------------------------------------------------------------
    def entry_path(self, key: str) -> Path:
        return self.base / key[:2] / f"{key}.json"

    def get(self, key: str) -> Any | None:
        """The stored payload under `key` (see entry_key), or None when absent or not intact."""
        try:
            with open(self.entry_path(key), "rb") as handle:
                raw = handle.read()
        except OSError:
            return None
        header, sep, body = raw.partition(b"\n")
        expected = _HEADER + key.encode() + b" " + hashlib.sha256(body).hexdigest().encode()
        if not sep or header != expected:
            self.corrupt += 1
            return None
        try:
            return json.loads(body)
        except ValueError:
            self.corrupt += 1
            return None

    def put(self, key: str, payload: Any) -> None:
        """Store `payload` (JSON-able) under `key`; errors only disable further writes."""
        if not self.writable:
            return
        body = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
        header = _HEADER + key.encode() + b" " + hashlib.sha256(body).hexdigest().encode()
        path = self.entry_path(key)
        try:
            if path.parent not in self._made:
                path.parent.mkdir(exist_ok=True)
                self._made.add(path.parent)
            _fast_atomic_write(path, header + b"\n" + body)
        except OSError:
            self.write_errors += 1
            if self.write_errors >= 3:
                self.writable = False

    # -- stat index ----------------------------------------------------------------------------
    def index_path(self, root: Path) -> Path:
        return self.base / f"index-{fingerprint(str(root.resolve()))[:24]}.json"

    def load_index(self, root: Path) -> "StatIndex":
        """The stat index of `root` from the last run (empty when absent or not intact)."""
        return StatIndex.load(self.index_path(root))

    def save_index(self, root: Path, index: "StatIndex", prune: bool = True) -> None:
        """Write `index` if it changed; `prune` drops paths this run did not see (full walks only)."""
        if self.writable and (index.changed or (prune and set(index.entries) - index.seen)):
            try:
                index.save(self.index_path(root), prune)
            except OSError:
                self.write_errors += 1


class StatIndex:
    """relpath -> [size, mtime_ns, inode, ctime_ns, content sha, encoded result] as last seen (the
    result may be absent); see NOTE [scan cache] and NOTE [stat validation]."""

    FORMAT = b"index2 "   # in the header: an index of another layout is ignored, never misread

    def __init__(self, entries: dict[str, list[Any]] | None = None, written_ns: int = 0) -> None:
        self.entries: dict[str, list[Any]] = entries or {}
        self.written_ns = written_ns
        self.seen: set[str] = set()
        self.changed = False

    @classmethod
    def load(cls, path: Path) -> "StatIndex":
        """The index at `path`; empty when absent, torn, edited, of another format or not an index."""
        try:
            raw = path.read_bytes()
            header, sep, body = raw.partition(b"\n")
            if not sep or header != _HEADER + cls.FORMAT + hashlib.sha256(body).hexdigest().encode():
                return cls()
            data = json.loads(body)
            entries = data["files"]
            written = int(data["written_ns"])
            if not isinstance(entries, dict):
                return cls()
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return cls()
        return cls(entries, written)

    def lookup(self, relpath: str, st: Signature) -> str | None:
        """The content sha of `relpath` if its signature (stat_key) is unchanged and not racy, else None."""
        self.seen.add(relpath)
        entry = self.entries.get(relpath)
        if (
            type(entry) is list and len(entry) in (5, 6)
            and entry[0] == st[0] and entry[1] == st[1] and entry[2] == st[2] and entry[3] == st[3]
            and st[1] + RACY_NS < self.written_ns
            and type(entry[4]) is str
        ):
            return entry[4]
        return None

    def payload(self, relpath: str) -> Any | None:
        """The result stored with `relpath`'s entry (after a lookup that matched), or None."""
        entry = self.entries.get(relpath)
        return entry[5] if type(entry) is list and len(entry) == 6 else None

    def record(self, relpath: str, st: Signature, sha: str, payload: Any = None) -> None:
        """Remember that `relpath`, whose stat_key was `st` before it was read, had content `sha`
        (and gave `payload`, the encoded result, kept in the index for warm runs)."""
        self.seen.add(relpath)
        entry = [st[0], st[1], st[2], st[3], sha] + ([payload] if payload is not None else [])
        if self.entries.get(relpath) != entry or st[1] + RACY_NS >= self.written_ns:
            # a racy entry is rewritten so that a later index, written later, can trust it
            self.entries[relpath] = entry
            self.changed = True

    def forget(self, relpath: str) -> None:
        if self.entries.pop(relpath, None) is not None:
            self.changed = True

    def save(self, path: Path, prune: bool = True) -> None:
        """Write the index (atomically: NOTE [scan cache]); with `prune` (a full walk), paths not
        seen in this run are dropped."""
        files = self.entries
        if prune:
            files = {k: v for k, v in self.entries.items() if k in self.seen}
        body = json.dumps({"written_ns": time.time_ns(), "files": files},
                          sort_keys=True, separators=(",", ":")).encode()
        header = _HEADER + self.FORMAT + hashlib.sha256(body).hexdigest().encode()
        atomic_write(path, header + b"\n" + body)


def _fast_atomic_write(path: Path, data: bytes) -> None:
    """fsutil.atomic_write for the many small entries: a temporary name unique to this process (one
    writer per process at a time) instead of mkstemp's random probing; about half the cost."""
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise

