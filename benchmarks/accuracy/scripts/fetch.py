"""Copy the development set's scripts (cases.py) at their pinned commits into a work folder.

Usage:
    python benchmarks/accuracy/scripts/fetch.py --dest DIR [--mirror OWNER/NAME=GIT_DIR ...]

For each repository, the files the cases need are taken from a local git directory that holds the
pinned commit (`--mirror`, e.g. a bare clone), else from a shallow clone of the public repository at
that commit. Nothing fetched is committed: DIR is a scratch folder (run.py uses
benchmarks/accuracy/scripts/.work/, gitignored).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import CASES, COMMITS


def _paths(repo: str) -> list[str]:
    return sorted({p for case in CASES if case.repo == repo for p in case.paths})


def _extract(git_dir: str, commit: str, paths: list[str], dest: Path) -> list[str]:
    """Write each file under `paths` at `commit` into dest; returns the files whose content the git
    directory lacks (a partial mirror may leave out large data files: the fake data replaces them)."""
    listing = subprocess.run(["git", f"--git-dir={git_dir}", "ls-tree", "-r", "-z", commit, "--", *paths],
                             check=True, capture_output=True).stdout.decode()
    missing = []
    for entry in filter(None, listing.split("\0")):
        meta, path = entry.split("\t", 1)
        _, kind, blob = meta.split()
        if kind != "blob":
            continue
        out = subprocess.run(["git", f"--git-dir={git_dir}", "cat-file", "blob", blob], capture_output=True,
                             check=False)
        if out.returncode != 0:
            missing.append(path)
            continue
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(out.stdout)
    return missing


def fetch(repo: str, dest: Path, mirror: str | None = None) -> Path:
    """The repository's needed files at its pinned commit, in dest/OWNER+NAME; returns that folder."""
    commit = COMMITS[repo]
    target = dest / repo.replace("/", "+")
    stamp = target / ".commit"
    wanted = "\n".join([commit, *_paths(repo)]) + "\n"
    if stamp.is_file() and stamp.read_text() == wanted:
        return target
    target.mkdir(parents=True, exist_ok=True)
    if mirror:
        missing = _extract(mirror, commit, _paths(repo), target)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(["git", "init", "-q", tmp], check=True)
            subprocess.run(["git", "-C", tmp, "fetch", "-q", "--depth", "1", f"https://github.com/{repo}.git",
                            commit], check=True)
            missing = _extract(f"{tmp}/.git", commit, _paths(repo), target)
    for path in missing:
        print(f"{repo}: {path} not in the mirror (left out)", file=sys.stderr)
    stamp.write_text(wanted)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", required=True, help="work folder for the copies")
    parser.add_argument("--mirror", action="append", default=[], metavar="OWNER/NAME=GIT_DIR",
                        help="a local git directory holding the repository's pinned commit")
    args = parser.parse_args(argv)
    mirrors = dict(m.split("=", 1) for m in args.mirror)
    for repo in COMMITS:
        print(fetch(repo, Path(args.dest), mirrors.get(repo)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
