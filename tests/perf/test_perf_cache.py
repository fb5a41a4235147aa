"""The scan cache: entries round-trip, corrupt entries are never trusted, the stat index, locations."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from opscan.scan import cache as cache_mod
from opscan.scan.cache import (
    ResultCache,
    StatIndex,
    default_cache_dir,
    entry_key,
    files_fingerprint,
    fingerprint,
    stat_key,
)

SALT = fingerprint("test-salt")


@pytest.fixture
def cache(tmp_path: Path) -> ResultCache:
    result = ResultCache(tmp_path / "c", SALT)
    result.prepare()
    return result


def test_round_trip_and_layout(cache: ResultCache, tmp_path: Path) -> None:
    key = entry_key("a/b.py", "0" * 64)
    payload = {"findings": [{"rule": "OPS101", "line": 3}], "lines": 10}
    assert cache.get(key) is None
    cache.put(key, payload)
    assert cache.get(key) == payload
    assert (tmp_path / "c" / "CACHEDIR.TAG").read_bytes().startswith(
        b"Signature: 8a477f597d28d172789f06886806bc55")
    assert (tmp_path / "c" / ".gitignore").read_text().splitlines()[-1] == "*"
    # no temporary files are left behind by the atomic writes
    assert not [p for p in (tmp_path / "c").rglob(".tmp-*")]


def test_key_depends_on_path_and_content() -> None:
    sha = "a" * 64
    assert entry_key("x.py", sha) != entry_key("y.py", sha)
    assert entry_key("x.py", sha) != entry_key("x.py", "b" * 64)
    assert fingerprint("ab", "c") != fingerprint("a", "bc")


@pytest.mark.parametrize("damage", ["truncate", "edit-body", "edit-header", "garbage", "empty",
                                    "swap"])
def test_corrupt_entry_is_ignored(cache: ResultCache, damage: str) -> None:
    key = entry_key("m.py", "1" * 64)
    other = entry_key("n.py", "2" * 64)
    cache.put(key, {"value": 1234})
    cache.put(other, {"value": 9})
    path = cache.entry_path(key)
    raw = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(raw[:-3])
    elif damage == "edit-body":
        path.write_bytes(raw.replace(b"1234", b"1235"))
    elif damage == "edit-header":
        path.write_bytes(raw.replace(b"opscan-cache 1", b"opscan-cache 2"))
    elif damage == "garbage":
        path.write_bytes(os.urandom(200))
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "swap":  # a valid entry of another key, copied over this one
        path.write_bytes(cache.entry_path(other).read_bytes())
    assert cache.get(key) is None
    assert cache.corrupt == 1
    assert cache.get(other) == {"value": 9}


def test_salts_are_separate_and_old_ones_pruned(tmp_path: Path) -> None:
    key = entry_key("a.py", "3" * 64)
    first = ResultCache(tmp_path, fingerprint("rules-1"))
    first.prepare()
    first.put(key, [1])
    second = ResultCache(tmp_path, fingerprint("rules-2"))
    second.prepare()
    assert second.get(key) is None
    assert first.get(key) == [1]
    for n in range(3, 3 + cache_mod.KEEP_SALTS + 1):
        time.sleep(0.01)
        ResultCache(tmp_path, fingerprint(f"rules-{n}")).prepare()
    salts = [p for p in (tmp_path / cache_mod.FORMAT).iterdir() if p.is_dir()]
    assert len(salts) == cache_mod.KEEP_SALTS
    assert not first.base.exists()


def test_unwritable_cache_never_raises(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    broken = ResultCache(blocker / "cache", SALT)
    broken.prepare()
    assert broken.writable is False
    broken.put(entry_key("a.py", "4" * 64), {"x": 1})
    assert broken.get(entry_key("a.py", "4" * 64)) is None
    broken.save_index(tmp_path, StatIndex())


def test_default_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(cache_mod.CACHE_DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "opscan"
    assert default_cache_dir(tmp_path / "explicit") == tmp_path / "explicit"
    monkeypatch.setenv(cache_mod.CACHE_DIR_ENV, str(tmp_path / "env"))
    assert default_cache_dir() == tmp_path / "env"
    assert default_cache_dir(tmp_path / "explicit") == tmp_path / "explicit"
    monkeypatch.delenv(cache_mod.CACHE_DIR_ENV)
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "opscan"


def test_files_fingerprint_changes_with_any_byte(tmp_path: Path) -> None:
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text("id: OPS101\n")
    b.write_text("id: OPS102\n")
    before = files_fingerprint([b, a])
    assert files_fingerprint([a, b]) == before
    b.write_text("id: OPS103\n")
    assert files_fingerprint([a, b]) != before


def _old_file(path: Path, text: str) -> tuple[int, int, int, int]:
    """A file written an hour ago: its signature, with the ctime it would have then (the real one,
    which os.utime sets to now, is racy for 2 s: NOTE [stat validation])."""
    path.write_text(text)
    past = time.time() - 3600
    os.utime(path, (past, past))
    size, mtime, inode, _ = stat_key(path.stat())
    return (size, mtime, inode, mtime)


def test_stat_index_round_trip_and_racy_entries(tmp_path: Path, cache: ResultCache) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    old = _old_file(root / "old.py", "x = 1\n")
    (root / "new.py").write_text("y = 2\n")
    new = stat_key((root / "new.py").stat())
    index = cache.load_index(root)
    assert index.lookup("old.py", old) is None
    index.record("old.py", old, "a" * 64)
    index.record("new.py", new, "b" * 64)
    cache.save_index(root, index)
    again = cache.load_index(root)
    assert again.lookup("old.py", old) == "a" * 64
    # a file modified within RACY_NS of the index write is not trusted
    assert again.lookup("new.py", new) is None
    # any change of size, mtime, inode or ctime is a miss
    assert again.lookup("old.py", (old[0] + 1, old[1], old[2], old[3])) is None
    assert again.lookup("old.py", (old[0], old[1] + 1, old[2], old[3])) is None
    assert again.lookup("old.py", (old[0], old[1], old[2] + 1, old[3])) is None
    assert again.lookup("old.py", (old[0], old[1], old[2], old[3] + 1)) is None
    # a file whose mtime was put back after an edit (`touch -d`): its real, recent ctime is racy
    assert again.lookup("old.py", stat_key((root / "old.py").stat())) is None


def test_stat_index_prunes_only_full_walks(tmp_path: Path, cache: ResultCache) -> None:
    root = tmp_path
    st = _old_file(tmp_path / "f.py", "")
    index = cache.load_index(root)
    index.record("a.py", st, "a" * 64)
    index.record("b.py", st, "b" * 64)
    cache.save_index(root, index)
    partial = cache.load_index(root)
    assert partial.lookup("a.py", st) == "a" * 64
    cache.save_index(root, partial, prune=False)
    assert cache.load_index(root).lookup("b.py", st) == "b" * 64
    full = cache.load_index(root)
    full.lookup("a.py", st)
    cache.save_index(root, full, prune=True)
    final = cache.load_index(root)
    assert final.lookup("a.py", st) == "a" * 64
    assert final.lookup("b.py", st) is None


def test_corrupt_index_is_ignored(tmp_path: Path, cache: ResultCache) -> None:
    st = _old_file(tmp_path / "f.py", "")
    index = cache.load_index(tmp_path)
    index.record("f.py", st, "c" * 64)
    cache.save_index(tmp_path, index)
    path = cache.index_path(tmp_path)
    path.write_bytes(path.read_bytes().replace(b"c" * 64, b"d" * 64))
    assert cache.load_index(tmp_path).lookup("f.py", st) is None
    path.write_bytes(b"{not json")
    assert cache.load_index(tmp_path).entries == {}


def test_salt_covers_version_code_rules_and_extras(tmp_path: Path, monkeypatch) -> None:
    import opscan

    base = cache_mod.scan_salt("rules-a")
    assert cache_mod.scan_salt("rules-a") == base
    assert cache_mod.scan_salt("rules-b") != base
    assert cache_mod.scan_salt("rules-a", "ext:foo") != base
    monkeypatch.setattr(opscan, "__version__", "99.0")
    assert cache_mod.scan_salt("rules-a") != base
    monkeypatch.undo()
    monkeypatch.setattr(cache_mod, "code_fingerprint", lambda: "edited")
    assert cache_mod.scan_salt("rules-a") != base
    first = ResultCache(tmp_path, base)
    assert first.salted("p1").salt != first.salted("p2").salt
    assert first.salted("p1").directory == first.directory


def test_rules_salt_sees_any_change_of_a_rule_file(tmp_path: Path) -> None:
    import shutil

    from opscan.resources import rules_dir
    from opscan.scan.rules import load_rules

    local = tmp_path / "rules"
    shutil.copytree(rules_dir(), local)
    before = cache_mod.rules_salt(load_rules(extra_dirs=[local], builtin=False))
    assert cache_mod.rules_salt(load_rules(extra_dirs=[local], builtin=False)) == before
    target = sorted(local.glob("*.yaml"))[0]
    text = target.read_text()
    target.write_text(text.replace("category: ", "category:  ", 1))  # same data, other bytes
    assert cache_mod.rules_salt(load_rules(extra_dirs=[local], builtin=False)) != before


def _cli_cache(folder: Path, rules) -> ResultCache:
    """The cache as `opscan scan` builds it (opscan/pipeline/phases.py): salt = version, code, rules."""
    return ResultCache(folder, cache_mod.scan_salt(cache_mod.rules_salt(rules)))


def test_warm_runs_read_no_file_and_invalidate_on_version_rules_and_selection(tmp_path: Path,
                                                                              monkeypatch) -> None:
    """A warm run takes every result from the stat index (proved by tampering with the index, checksum
    fixed up: the tampered result comes back), and a new opscan version, edited rules or another rule
    selection (config `select`/`ignore`) never reuse it."""
    import json

    import opscan
    from opscan.scan import scan_paths
    from opscan.scan.rules import RuleSet, load_rules

    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.py").write_text("import torch\nx = torch.zeros(1).to('cuda')\ntorch.cuda.synchronize()\n")
    (tree / "b.py").write_text("def f(inputs):\n    return inputs\n")
    rules = load_rules()
    folder = tmp_path / "cache"

    def run(rules=rules):
        found = scan_paths(tree, rules=rules, check_fixes=False, cache=_cli_cache(folder, rules)).findings
        return [(f.location.path, f.location.line, f.rule) for f in found]

    truth = [("a.py", 2, "OPS101"), ("a.py", 3, "OPS201")]
    assert run() == truth
    old = time.time() - 60   # out of the racy window, so the next run trusts the stat alone
    for name in ("a.py", "b.py"):
        os.utime(tree / name, (old, old))
    assert run() == truth    # the index now holds both files' stats and results
    (index,) = folder.rglob("index-*.json")
    header, _, body = index.read_bytes().partition(b"\n")
    data = json.loads(body)
    assert all(len(entry) == 6 for entry in data["files"].values())
    data["files"]["a.py"][5]["findings"] = data["files"]["a.py"][5]["findings"][:1]   # drop OPS201
    body = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    index.write_bytes(b"opscan-cache 1 index2 " + cache_mod.hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
    assert run() == truth[:1]   # no file was read: the (tampered) index answered

    monkeypatch.setattr(opscan, "__version__", "99.0")
    assert run() == truth       # another version: another salt, the file is scanned again
    monkeypatch.undo()
    fewer = RuleSet(tuple(r for r in rules if r.id != "OPS101"))
    assert run(fewer) == truth[1:]   # another rule selection (config) : another salt
    edited = tmp_path / "rules"
    edited.mkdir()
    rule = next(r for r in rules if r.id == "OPS201")
    (edited / Path(rule.path).name).write_text(Path(rule.path).read_text().replace("is a CUDA-only API",
                                                                                      "is CUDA-only"))
    others = RuleSet(tuple(r for r in rules if r.id != "OPS201"))
    mixed = RuleSet(others.rules + load_rules(extra_dirs=[edited], builtin=False).rules)
    assert sorted(run(mixed)) == truth   # edited rule file: rescanned, not the tampered result
