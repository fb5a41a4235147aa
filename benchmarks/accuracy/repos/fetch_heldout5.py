"""Rebuilds the held-out 5 corpus (issue 42): twelve research repositories at their pinned commits,
and the one environment they run in.

The recipe is heldout5.toml (chosen by the rule in HELDOUT5.md). Each repository is exported with
`git archive` from a local mirror (`--mirror DIR`, holding DIR/<owner>+<name>/repo, a bare git
directory or a checkout's .git) or else cloned, into benchmarks/accuracy/repos/corpus/heldout5/<name>/
(git-ignored: third-party code is never committed); a blob the mirror lacks is left out and named.
`--venv` builds corpus/heldout5/_venv: `python3 -m venv`, the [environment] base (torch 2.13.0
and torchvision 0.28.0), each repository's `requirements`, and this checkout of opscan (editable),
so that `score_heldout5.py --run` runs opscan where the repositories' dependencies are.
`--lines NAME` prints criterion 6's count for one repository (every line of every *.py file).

    python benchmarks/accuracy/repos/fetch_heldout5.py [--mirror DIR]   # export what is missing
    python benchmarks/accuracy/repos/fetch_heldout5.py --venv            # build the corpus environment
    python benchmarks/accuracy/repos/fetch_heldout5.py --check           # exit 1 unless all twelve are exported
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
RECIPE = HERE / "heldout5.toml"
CORPUS = HERE / "corpus" / "heldout5"
VENV = CORPUS / "_venv"
sys.path.insert(0, str(HERE))
from fetch import _export_present  # noqa: E402  (a sibling script, as run.py imports it)


def recipe(path: Path = RECIPE) -> dict:
    """The recipe: `environment` and `repository` (a list of tables), checked for what the rest reads."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    names = [r["name"] for r in data["repository"]]
    if len(set(names)) != len(names):
        raise SystemExit(f"{path.name}: a name is given twice")
    for row in data["repository"]:
        if len(row["commit"]) != 40:
            raise SystemExit(f"{path.name}: {row['name']}: commit must be 40 hex digits")
    return data


def _git_dir(mirror: Path, slug: str) -> Path:
    base = mirror / slug.replace("/", "+") / "repo"
    return base / ".git" if (base / ".git").is_dir() else base


def export_into(corpus: Path, name: str, slug: str, commit: str, mirror: Path | None) -> None:
    """corpus/<name>/ as the tree of `commit` (from the mirror's git directory, else a bare clone)."""
    with tempfile.TemporaryDirectory() as tmp:
        git_dir = _git_dir(mirror, slug) if mirror is not None else Path(tmp) / "repo.git"
        if mirror is None:
            subprocess.run(["git", "clone", "--bare", "--quiet", f"https://github.com/{slug}", str(git_dir)],
                           check=True)
        partial = corpus / (name + ".partial")
        done = subprocess.run(["git", "--git-dir", str(git_dir), "archive", "--format=tar", commit],
                              check=False, capture_output=True)
        if done.returncode == 0:
            with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tf:
                tf.extractall(partial, filter="data")
        else:
            _export_present(git_dir, commit, partial)
    partial.rename(corpus / name)


def check_exported(data: dict, corpus: Path) -> int:
    """`--check`: prints what is missing from `corpus`; 1 when something is."""
    missing = [r["name"] for r in data["repository"] if not (corpus / r["name"]).is_dir()]
    print("missing: " + ", ".join(missing) if missing else "all exported")
    return 1 if missing else 0


def export_missing(data: dict, corpus: Path, mirror: Path | None) -> None:
    """Exports every repository of the recipe `data` not yet in `corpus`."""
    corpus.mkdir(parents=True, exist_ok=True)
    for row in data["repository"]:
        if not (corpus / row["name"]).is_dir():
            export_into(corpus, row["name"], row["repo"], row["commit"], mirror)
            print(f"exported {row['name']} at {row['commit'][:12]}")


def python_lines(git_dir: Path, commit: str) -> int:
    """Criterion 6: every line of every *.py file of the tree of `commit` (a blob absent is 0)."""
    git = ["git", "--git-dir", str(git_dir)]
    names = subprocess.run([*git, "ls-tree", "-r", "-z", "--name-only", commit], check=True,
                           capture_output=True).stdout.split(b"\0")
    total = 0
    for name in (n for n in names if n.endswith(b".py")):
        blob = subprocess.run([*git, "cat-file", "blob", f"{commit}:{name.decode()}"], check=False,
                              capture_output=True)
        total += blob.stdout.count(b"\n") if blob.returncode == 0 else 0
    return total


def build_venv(data: dict) -> None:
    """corpus/heldout5/_venv with the base, every repository's requirements and opscan (editable)."""
    if not (VENV / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    pip = [str(VENV / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    env = dict(os.environ, PIP_FIND_LINKS="")   # a local +cpu wheel would win over the index's 2.13.0
    subprocess.run([*pip, *data["environment"]["base"]], check=True, env=env)
    for row in data["repository"]:
        if row["requirements"]:
            subprocess.run([*pip, *row["requirements"]], check=True, env=env)
    subprocess.run([*pip, "-e", str(ROOT)], check=True, env=env)
    frozen = subprocess.run([str(VENV / "bin" / "python"), "-m", "pip", "freeze", "--exclude-editable"],
                            check=True, capture_output=True, text=True).stdout
    (HERE / "heldout5_venv.lock").write_text("# pip freeze of corpus/heldout5/_venv (fetch_heldout5.py --venv)\n"
                                             + frozen, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, help="a folder of git mirrors (DIR/<owner>+<name>/repo)")
    parser.add_argument("--check", action="store_true", help="exit 1 unless every repository is exported")
    parser.add_argument("--venv", action="store_true", help="build corpus/heldout5/_venv")
    parser.add_argument("--lines", metavar="NAME", help="criterion 6's count for one repository (needs --mirror)")
    args = parser.parse_args(argv)
    data = recipe()
    if args.lines:
        row = next((r for r in data["repository"] if r["name"] == args.lines), None)
        if row is None or args.mirror is None:
            raise SystemExit("fetch_heldout5.py: --lines takes a name of heldout5.toml, with --mirror")
        print(python_lines(_git_dir(args.mirror, row["repo"]), row["commit"]))
        return 0
    if args.check:
        return check_exported(data, CORPUS)
    export_missing(data, CORPUS, args.mirror)
    if args.venv:
        build_venv(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
