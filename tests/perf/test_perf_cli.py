"""`opscan scan --jobs/--no-cache/--cache-dir`: same bytes out either way; the cache is where documented."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

FILES = {
    "train.py": "import torch\nmodel = model.to('cuda')\ntorch.cuda.synchronize()\n",
    "pkg/dist.py": "import torch.distributed as dist\ndist.init_process_group('nccl')\n",
    "pkg/clean.py": "def f(x):\n    return x + 1\n",
    "pkg/ops.py": "from torch.utils.cpp_extension import load\next = load('k', ['k.cu'])\n",
}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    for n in range(30):  # enough files for a worker pool to start
        (root / "many" / f"m{n:02d}.py").parent.mkdir(exist_ok=True)
        (root / "many" / f"m{n:02d}.py").write_text(f"x{n} = torch.device('cuda:{n % 2}')\n")
    return root


def _files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


def test_same_output_for_jobs_and_cache(run_cli, tree: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    outputs = []
    for args in (["--no-cache", "--jobs", "1"], ["--no-cache", "--jobs", "2"],
                 ["--cache-dir", str(cache)], ["--cache-dir", str(cache), "--jobs", "2"],
                 ["--cache-dir", str(cache), "--jobs", "1"]):
        code, out, err = run_cli("scan", str(tree), "--format", "json", "--no-fix-check", *args)
        assert code == 1, err
        outputs.append(out)
    assert all(out == outputs[0] for out in outputs)
    assert '"OPS' in outputs[0]
    entries = [p for p in _files(cache) if p.parent.parent.parent.name == "v1"]
    # pkg/clean.py spells no token: never parsed, its result kept in the stat index only
    assert len(entries) == len(FILES) - 1 + 30
    assert sum(1 for p in _files(cache) if p.name.startswith("index-")) == 1
    assert (cache / "CACHEDIR.TAG").is_file()
    assert not (tree / ".opscan_cache").exists()  # never inside the scanned tree


def test_default_location_and_no_cache(run_cli, tree: Path) -> None:
    default = Path(os.environ["OPSCAN_CACHE_DIR"])  # set per test by conftest
    code, _, _ = run_cli("scan", str(tree), "--format", "json", "--no-fix-check", "--no-cache")
    assert code == 1 and _files(default) == []
    code, _, _ = run_cli("scan", str(tree), "--format", "json", "--no-fix-check")
    assert code == 1 and len(_files(default)) > len(FILES)


def test_edit_between_runs_is_seen(run_cli, tree: Path, tmp_path: Path) -> None:
    args = ("scan", str(tree), "--format", "json", "--no-fix-check", "--cache-dir", str(tmp_path / "c"))
    _, before, _ = run_cli(*args)
    (tree / "pkg" / "clean.py").write_text("def f(x):\n    return x.cuda()\n")
    _, after, _ = run_cli(*args)
    assert '"path": "pkg/clean.py"' not in before and '"path": "pkg/clean.py"' in after


def test_bad_jobs(run_cli, tree: Path) -> None:
    code, _, err = run_cli("scan", str(tree), "--jobs", "0")
    assert code == 2 and "--jobs" in err


def test_check_uses_the_same_cache(run_cli, tree: Path, monkeypatch) -> None:
    default = Path(os.environ["OPSCAN_CACHE_DIR"])
    monkeypatch.setenv("OPSCAN_NO_CACHE", "1")
    code, off, err = run_cli("check", str(tree), "--no-trace", "--format", "json")
    assert code in (0, 1), err
    assert _files(default) == []
    monkeypatch.delenv("OPSCAN_NO_CACHE")
    outs = [run_cli("check", str(tree), "--no-trace", "--format", "json")[1] for _ in range(2)]
    assert len(_files(default)) > len(FILES)
    assert outs[0] == outs[1] == off
