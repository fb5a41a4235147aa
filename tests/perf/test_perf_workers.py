"""scan_files: same output whatever the workers and the cache; warm runs skip reading; errors."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from opscan.scan.cache import ResultCache, fingerprint
from opscan.scan.workers import Codec, RunStats, default_jobs, scan_files


@dataclass(frozen=True)
class FakeResult:
    path: str
    hits: tuple[tuple[int, str], ...]


def fake_scan(relpath: str, data: bytes, rules: dict) -> FakeResult:
    """A stand-in for the real per-file scan: lines holding the rule word, and a call log."""
    with open(rules["log"], "a") as log:
        log.write(relpath + "\n")
    text = data.decode()
    if "RAISE" in text:
        raise RuntimeError("scanner bug")
    hits = tuple((n, line) for n, line in enumerate(text.splitlines(), 1) if rules["word"] in line)
    return FakeResult(relpath, hits)


def on_error(relpath: str, exc: Exception) -> FakeResult:
    return FakeResult(relpath, ((0, f"error: {type(exc).__name__}"),))


CODEC = Codec(
    encode=lambda r: {"path": r.path, "hits": [list(h) for h in r.hits]},
    decode=lambda d: FakeResult(d["path"], tuple((int(n), str(t)) for n, t in d["hits"])),
)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    past = time.time() - 3600
    for n in range(40):
        sub = root / f"pkg{n % 3}"
        sub.mkdir(parents=True, exist_ok=True)
        body = "".join(f"x{i} = torch.device('cuda:{i}')\n" if (i + n) % 4 == 0 else f"y = {i}\n"
                       for i in range(n % 7 + 1))
        path = sub / f"mod{n:02d}.py"
        path.write_text(body)
        os.utime(path, (past, past))
    return root


def _paths(root: Path) -> list[str]:
    return [p.relative_to(root).as_posix() for p in root.rglob("*.py")]


def _rules(tmp_path: Path) -> dict:
    return {"word": "cuda", "log": str(tmp_path / "calls.log")}


def _calls(rules: dict) -> list[str]:
    try:
        lines = Path(rules["log"]).read_text().splitlines()
    except FileNotFoundError:
        lines = []
    Path(rules["log"]).write_text("")
    return lines


def _run(root: Path, rules: dict, **kwargs) -> tuple[list, RunStats]:
    stats = RunStats()
    paths = _paths(root)
    paths.reverse()  # input order must not matter
    out = list(scan_files(root, paths, fake_scan, rules, stats=stats, on_error=on_error,
                          codec=CODEC, **kwargs))
    return out, stats


@pytest.mark.slow
def test_same_sorted_output_for_any_jobs_and_cache(tree: Path, tmp_path: Path) -> None:
    rules = _rules(tmp_path)
    reference, stats = _run(tree, rules, jobs=1)
    assert [rel for rel, _ in reference] == sorted(_paths(tree))
    assert stats.workers == 0 and stats.scanned == 40
    assert sum(len(r.hits) for _, r in reference) > 10
    for jobs in (2, 3):
        out, stats = _run(tree, rules, jobs=jobs)
        assert out == reference
        assert stats.workers == jobs  # the pool really ran
    cache = ResultCache(tmp_path / "cache", fingerprint("rules-v1"))
    cold, stats = _run(tree, rules, jobs=2, cache=cache)
    assert cold == reference and stats.scanned == 40
    warm, stats = _run(tree, rules, jobs=2, cache=cache)
    assert warm == reference


def test_warm_run_reads_nothing_and_touched_file_costs_one(tree: Path, tmp_path: Path) -> None:
    rules = _rules(tmp_path)
    cache = ResultCache(tmp_path / "cache", fingerprint("rules-v1"))
    reference, _ = _run(tree, rules, jobs=2, cache=cache)
    assert len(_calls(rules)) == 40
    warm, stats = _run(tree, rules, jobs=2, cache=cache)
    assert warm == reference
    assert (stats.unread, stats.cache_hits, stats.scanned, stats.workers) == (40, 0, 0, 0)
    assert _calls(rules) == []

    # change one file: only it is scanned, in-process (no pool start-up)
    target = tree / "pkg1" / "mod04.py"
    target.write_text(target.read_text() + "z = x.cuda()\n")
    out, stats = _run(tree, rules, jobs=2, cache=cache)
    assert _calls(rules) == ["pkg1/mod04.py"]
    assert (stats.unread, stats.scanned, stats.workers) == (39, 1, 0)
    changed = dict(out)["pkg1/mod04.py"]
    assert changed.hits[-1][1] == "z = x.cuda()"
    assert [r for r in out if r[0] != "pkg1/mod04.py"] == [
        r for r in reference if r[0] != "pkg1/mod04.py"]

    # touch without changing bytes: read and hashed again, never re-scanned
    os.utime(tree / "pkg0" / "mod00.py")
    out2, stats = _run(tree, rules, jobs=2, cache=cache)
    assert out2 == out
    assert stats.cache_hits >= 1 and stats.scanned == 0 and _calls(rules) == []


def test_new_rules_salt_rescans(tree: Path, tmp_path: Path) -> None:
    rules = _rules(tmp_path)
    _run(tree, rules, jobs=1, cache=ResultCache(tmp_path / "cache", fingerprint("rules-v1")))
    _calls(rules)
    _, stats = _run(tree, rules, jobs=1, cache=ResultCache(tmp_path / "cache", fingerprint("v2")))
    assert stats.scanned == 40 and len(_calls(rules)) == 40


def test_corrupt_entries_are_rescanned_not_trusted(tree: Path, tmp_path: Path) -> None:
    rules = _rules(tmp_path)
    cache = ResultCache(tmp_path / "cache", fingerprint("rules-v1"))
    reference, _ = _run(tree, rules, jobs=1, cache=cache)
    _calls(rules)
    entries = sorted(cache.base.rglob("*/*.json"))
    assert len(entries) == 40
    for entry in entries[:5]:
        raw = entry.read_bytes()
        entry.write_bytes(raw.replace(b"cuda", b"CUDA") if b"cuda" in raw else raw[:-2])
    # a warm run takes results from the stat index (one file), so the entries are not even read ...
    out, stats = _run(tree, rules, jobs=1, cache=cache)
    assert out == reference and stats.unread == 40 and stats.scanned == 0
    # ... a tampered index is ignored as a whole: every file read, and the corrupt entries rescanned
    (index,) = cache.base.glob("index-*.json")
    raw = index.read_bytes()
    index.write_bytes(raw.replace(b"cuda", b"CUDA") if b"cuda" in raw else raw[:-2])
    out, stats = _run(tree, rules, jobs=1, cache=cache)
    assert out == reference
    assert stats.unread == 0 and stats.scanned == 5 and len(_calls(rules)) == 5


def test_errors_become_results_and_are_not_cached(tree: Path, tmp_path: Path) -> None:
    rules = _rules(tmp_path)
    (tree / "bad.py").write_text("RAISE\n")
    (tree / "gone.py").symlink_to(tree / "missing.py")
    (tree / "adir.py").mkdir()
    cache = ResultCache(tmp_path / "cache", fingerprint("rules-v1"))
    out, stats = _run(tree, rules, jobs=2, cache=cache)
    results = dict(out)
    assert results["bad.py"].hits == ((0, "error: RuntimeError"),)
    for name in ("gone.py", "adir.py"):  # an OSError (subclass) from reading, turned into a result
        assert results[name].hits[0][1].startswith("error: ")
    assert stats.errors == 3 and len(out) == 43
    _calls(rules)
    _, stats = _run(tree, rules, jobs=2, cache=cache)
    assert stats.errors == 3 and _calls(rules) == ["bad.py"]
    with pytest.raises(RuntimeError, match="scanner bug"):
        list(scan_files(tree, ["bad.py"], fake_scan, rules, jobs=1))


def test_results_stream(tree: Path, tmp_path: Path) -> None:
    rules = _rules(tmp_path)
    stream = scan_files(tree, _paths(tree), fake_scan, rules, jobs=1)
    first = next(stream)
    assert first[0] == "pkg0/mod00.py"
    assert len(_calls(rules)) < 40  # not everything was scanned before the first result
    stream.close()


def test_cache_without_codec_is_refused(tree: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        list(scan_files(tree, [], fake_scan, {}, cache=ResultCache(tmp_path, "s" * 64)))
    assert default_jobs() >= 1
