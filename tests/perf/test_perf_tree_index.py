"""The cache's tree index (NOTE [scan cache], NOTE [stat validation] in opscan/scan/cache.py): a
warm run answers unchanged files from one index file without reading them, and never answers a
changed, new or deleted file from it; a corrupt or foreign index is ignored; output bytes are the
same cold, warm and with any number of workers."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest

from opscan.scan import tree as tree_mod
from opscan.scan.cache import ResultCache, rules_salt, scan_salt
from opscan.scan.rules import RuleSet, load_rules
from opscan.scan.tree import scan_paths

FILES = {
    "train.py": "import torch\nx = torch.device('cuda')\ntorch.cuda.synchronize()\n",
    "pkg/__init__.py": "",
    "pkg/dist.py": "import torch.distributed as dist\ndist.init_process_group('nccl')\n",
    "pkg/clean.py": "def f(x):\n    return x + 1\n",
}
PAST = time.time() - 3600


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    for n in range(20):  # enough files to read for a worker pool to start (workers.POOL_MIN_FILES)
        (root / "many" / f"m{n:02d}.py").parent.mkdir(exist_ok=True)
        (root / "many" / f"m{n:02d}.py").write_text(f"import torch\nx{n} = torch.device('cuda:{n % 2}')\n")
    _age(root)
    return root


def _age(root: Path) -> None:
    """Out of the racy window: the index may trust these files' stats alone."""
    for path in root.rglob("*"):
        if path.is_file():
            os.utime(path, (PAST, PAST))


class Reads:
    """Counts the files the scan reads (tree._read: every file the scan reads goes through it)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.paths: list[str] = []
        real = tree_mod._read

        def counting(index, relpath, abspath=None):
            self.paths.append(relpath)
            return real(index, relpath, abspath)

        monkeypatch.setattr(tree_mod, "_read", counting)


def _scan(root: Path, folder: Path, rules: RuleSet | None = None, jobs: int = 1) -> list[tuple[str, int, str]]:
    rules = rules if rules is not None else load_rules()
    cache = ResultCache(folder, scan_salt(rules_salt(rules)))   # as `opscan scan` builds it
    found = scan_paths(root, rules=rules, jobs=jobs, check_fixes=False, cache=cache).findings
    return [(f.location.path, f.location.line, f.rule) for f in found]


def _index(folder: Path) -> Path:
    (index,) = folder.rglob("index-*.json")
    return index


def test_warm_run_reads_no_file_and_finds_the_same(tree: Path, tmp_path: Path, monkeypatch) -> None:
    cold = _scan(tree, tmp_path / "cache", jobs=2)
    assert ("train.py", 2, "OPS101") in cold and len({p for p, _, _ in cold}) >= 20
    reads = Reads(monkeypatch)
    assert _scan(tree, tmp_path / "cache") == cold
    assert reads.paths == []


def test_an_edited_file_is_rescanned_even_with_its_mtime_put_back(tree: Path, tmp_path: Path, monkeypatch) -> None:
    folder = tmp_path / "cache"
    before = _scan(tree, folder)
    assert ("train.py", 2, "OPS101") in before
    target = tree / "train.py"
    text = target.read_text()
    edited = text.replace("torch.device('cuda')", "torch.device('cpu') ")   # the same size
    assert len(edited) == len(text)
    target.write_text(edited)
    os.utime(target, (PAST, PAST))   # size and mtime as the index knows them; ctime is not
    reads = Reads(monkeypatch)
    after = _scan(tree, folder)
    assert ("train.py", 2, "OPS101") not in after
    assert [f for f in after if f[0] != "train.py"] == [f for f in before if f[0] != "train.py"]
    assert reads.paths == ["train.py"]   # the others still answered by the index


def test_a_deleted_file_disappears_and_a_new_one_appears(tree: Path, tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    before = _scan(tree, folder)
    assert any(f[0] == "pkg/dist.py" for f in before)
    (tree / "pkg" / "dist.py").unlink()
    (tree / "pkg" / "new.py").write_text("import torch\ny = torch.device('cuda')\n")
    after = _scan(tree, folder)
    assert not any(f[0] == "pkg/dist.py" for f in after)
    assert ("pkg/new.py", 2, "OPS101") in after
    files = json.loads(_index(folder).read_bytes().partition(b"\n")[2])["files"]
    assert "pkg/dist.py" not in files and "pkg/new.py" in files


def _rewrite(index: Path, body: bytes, header: bytes = b"opscan-cache 1 index2 ") -> None:
    index.write_bytes(header + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "old-format", "foreign-json", "bad-entries",
                                    "bad-results"])
def test_a_corrupt_or_foreign_index_is_ignored(tree: Path, tmp_path: Path, damage: str) -> None:
    folder = tmp_path / "cache"
    truth = _scan(tree, folder)
    index = _index(folder)
    raw = index.read_bytes()
    header, _, body = raw.partition(b"\n")
    data = json.loads(body)
    if damage == "garbage":
        index.write_bytes(os.urandom(2048))
    elif damage == "truncated":
        index.write_bytes(raw[: len(raw) // 2])
    elif damage == "old-format":         # the layout of an older opscan, its checksum right
        _rewrite(index, body, b"opscan-cache 1 index ")
    elif damage == "foreign-json":       # valid JSON, right checksum, not an index
        _rewrite(index, json.dumps([1, {"files": 2}]).encode())
    elif damage == "bad-entries":        # an index whose entries are of another shape
        data["files"] = {rel: ["x", *entry[1:]] if n % 2 else {"a": 1} for n, (rel, entry)
                         in enumerate(data["files"].items())}
        _rewrite(index, json.dumps(data).encode())
    else:                                # right stats, results that are not ours
        for n, entry in enumerate(data["files"].values()):
            entry[5] = [{"path": 7}, {"findings": "x"}, {"path": "a", "findings": [[1]]}, "x"][n % 4]
        _rewrite(index, json.dumps(data).encode())
    assert _scan(tree, folder) == truth
    assert _scan(tree, folder) == truth    # and the index written again is sound


def test_another_rule_set_or_rule_file_invalidates(tree: Path, tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    rules = load_rules()
    truth = _scan(tree, folder, rules)
    assert {"OPS101", "OPS201"} <= {r for _, _, r in truth}
    fewer = RuleSet(tuple(r for r in rules if r.id != "OPS101"), rules.known)
    assert _scan(tree, folder, fewer) == [f for f in truth if f[2] != "OPS101"]
    edited = tmp_path / "rules"
    edited.mkdir()
    rule = next(r for r in rules if r.id == "OPS201")
    text = Path(rule.path).read_text()
    (edited / Path(rule.path).name).write_text(text.replace("severity: error", "severity: warning")
                                               if "severity: error" in text else text + "\n")
    mixed = RuleSet(tuple(r for r in rules if r.id != "OPS201") + load_rules(extra_dirs=[edited], builtin=False).rules)
    again = scan_paths(tree, rules=mixed, check_fixes=False,
                       cache=ResultCache(folder, scan_salt(rules_salt(mixed)))).findings
    assert sorted((f.location.path, f.location.line, f.rule) for f in again) == sorted(truth)
    assert len(list(folder.rglob("index-*.json"))) == 3    # one index per (root, cache key)


def test_an_option_change_invalidates(run_cli, tree: Path, tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    base = ("scan", str(tree), "--format", "json", "--no-fix-check", "--cache-dir", cache)
    code, everything, _ = run_cli(*base)
    code2, selected, _ = run_cli(*base, "--select", "OPS201")
    assert code == code2 == 1 and '"OPS101"' in everything and '"OPS101"' not in selected and '"OPS201"' in selected
    assert run_cli(*base)[1] == everything


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_same_bytes_cold_warm_and_any_jobs(run_cli, tree: Path, tmp_path: Path, fmt: str) -> None:
    cache = str(tmp_path / "cache")
    outputs = []
    for args in (["--no-cache", "--jobs", "1"], ["--cache-dir", cache, "--jobs", "2"],   # reference, cold
                 ["--cache-dir", cache, "--jobs", "1"], ["--cache-dir", cache, "--jobs", "2"]):   # warm
        code, out, err = run_cli("scan", str(tree), "--format", fmt, "--no-fix-check", *args)
        assert code == 1, err
        outputs.append(out)
    assert len(list((tmp_path / "cache").rglob("index-*.json"))) == 1
    assert all(out == outputs[0] for out in outputs)
    (tree / "train.py").write_text(FILES["train.py"] + "# touched\n")    # one file changed, the rest warm
    changed = run_cli("scan", str(tree), "--format", fmt, "--no-fix-check", "--cache-dir", cache)[1]
    assert changed == run_cli("scan", str(tree), "--format", fmt, "--no-fix-check", "--no-cache")[1]
