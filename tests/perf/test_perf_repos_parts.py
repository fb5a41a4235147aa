"""benchmarks/accuracy/repos: the set's parts (development, held out 2, 3 and 4), run.py's choice of part
and its table, the lock's pins and left-out names, and a mirror lacking a blob."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REPOS = ROOT / "benchmarks" / "accuracy" / "repos"


def _load(name: str):
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(REPOS))   # run.py imports fetch as a sibling, as when it runs as a script
        spec = importlib.util.spec_from_file_location(name, REPOS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module


@pytest.fixture(scope="module")
def fetch():
    return _load("fetch")


@pytest.fixture(scope="module")
def run():
    return _load("run")


def test_every_repository_has_one_known_part_and_held_out_4_is_new(fetch) -> None:
    rows = fetch.names()
    assert len({name for name, _v, _p in rows}) == len(rows)
    assert {p for _n, _v, p in rows} <= set(fetch.PARTS)   # held out 2 is development since
    assert [p for _n, _v, p in rows] == sorted((p for _n, _v, p in rows), key=fetch.PARTS.index)
    held4 = {name for name, _v, p in rows if p == fetch.HELD_OUT_4}
    assert fetch.HELD_OUT == fetch.HELD_OUT_4 and len(held4) >= 6
    # a held-out part is new: no repository of it comes from a source an earlier part holds
    sources = {}
    for _n, requirement, _f, _s, part in fetch.REPOSITORIES:
        sources.setdefault(requirement.split("==")[0].lower(), set()).add(part)
    for _n, slug, _c, part in fetch.GIT_REPOSITORIES:
        sources.setdefault(slug.lower(), set()).add(part)
    assert all(len(parts) == 1 for parts in sources.values())
    for _name, _slug, commit, _part in fetch.GIT_REPOSITORIES:
        assert len(commit) == 40 and int(commit, 16) >= 0
    for _name, requirement, filename, sha256, _part in fetch.REPOSITORIES:
        assert "==" in requirement and filename.endswith(".whl") and len(sha256) == 64


def test_run_picks_the_part_from_the_command_line(run) -> None:
    assert run._part([]) == (run.DEV, set())
    assert run._part(["--held-out"]) == (run.HELD_OUT, set())
    assert run._part(["--part", "heldout2", "DiT"]) == (run.HELD_OUT_2, {"DiT"})
    assert run._part(["--part", "heldout3"]) == (run.PARTS[2], set())
    assert run._part(["--part", "heldout4", "edm"]) == (run.HELD_OUT, {"edm"})
    with pytest.raises(SystemExit, match="--part takes one of development, heldout2, heldout3, heldout4"):
        run._part(["--part", "heldout9"])


def test_table_reports_each_part_apart_and_reads_rows_written_before_parts(run) -> None:
    traced = [{"target": "repo:m.py:M", "how": "by name", "complete": True, "distinct_ops": 5}]
    common = {"seconds": 9.0, "ops": 5, "phases": ["forward", "backward", "loss", "optimizer"], "load": 2.0}
    rows = [
        {"repository": "a", "version": "1", "held_out": False, "traced": traced, **common},
        {"repository": "b", "version": "2", "held_out": True, "traced": traced, **common},   # before parts
        {"repository": "c", "version": "3", "held_out": True, "part": run.HELD_OUT, "traced": [],
         "failed": ["repo:c.py:C: cannot choose a value"], **common},
    ]
    text = run.table(rows)
    assert "| b (held out 2) | 2 |" in text and "| c (held out 4) | 3 | — repo:c.py:C: cannot choose" in text
    assert "development: 1/1 repositories" in text
    assert "held out 2: 1/1 repositories" in text
    assert "held out 4: 0/1 repositories" in text


def test_lock_pins_and_left_out_names_are_read(fetch, tmp_path, monkeypatch) -> None:
    lock = tmp_path / "dependencies.lock"
    lock.write_text("# requirement file sha256\n"
                    "More_Itertools==11.2.1 more_itertools-11.2.1-py3-none-any.whl " + "a" * 64 + "\n"
                    "# left out: torchvision (no wheel fits this environment)\n", encoding="utf-8")
    monkeypatch.setattr(fetch, "LOCK", lock)
    pins, left_out = fetch._locked()
    assert pins == {"more-itertools": ("More_Itertools==11.2.1", "more_itertools-11.2.1-py3-none-any.whl", "a" * 64)}
    assert left_out == {"torchvision"}


def test_a_mirror_lacking_a_blob_is_exported_without_it(fetch, tmp_path, monkeypatch, capsys) -> None:
    work = tmp_path / "work"
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    (work / "pkg").mkdir()
    (work / "pkg" / "model.py").write_text("import torch\n", encoding="utf-8")
    (work / "big.ipynb").write_text("{}\n" * 1000, encoding="utf-8")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "c"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    blob = subprocess.run([*git, "rev-parse", "HEAD:big.ipynb"], check=True, capture_output=True,
                          text=True).stdout.strip()
    (work / ".git" / "objects" / blob[:2] / blob[2:]).unlink()   # the snapshot lists it but lacks it
    mirror = tmp_path / "mirror"
    (mirror / "o+r").mkdir(parents=True)
    (work / ".git").rename(mirror / "o+r" / "repo")
    monkeypatch.setattr(fetch, "CORPUS", tmp_path / "corpus")
    (tmp_path / "corpus").mkdir()

    fetch._git("r", "o/r", commit, mirror)

    assert (tmp_path / "corpus" / "r" / "pkg" / "model.py").read_text(encoding="utf-8") == "import torch\n"
    assert not (tmp_path / "corpus" / "r" / "big.ipynb").exists()
    assert "fetch.py: big.ipynb is not in the mirror (left out)" in capsys.readouterr().err
