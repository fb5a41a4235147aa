"""Copies the second held-out part's manifests (files_heldout2.txt) out of the repository snapshots
listed in heldout2.txt into benchmarks/accuracy/dependencies/corpus/heldout2/ (git-ignored).

The snapshots are brought by the search tool's `fetch` (a git directory per repository, path given
with --mirror, default the environment variable OPSCAN_MIRROR); each file is read at the pinned
commit with `git show COMMIT:PATH`, so what is scored is what was labelled.

    python benchmarks/accuracy/dependencies/fetch_heldout2.py --mirror DIR   # DIR/<owner>+<name>/repo
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "corpus" / "heldout2"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", default=os.environ.get("OPSCAN_MIRROR", ""),
                        help="folder holding <owner>+<name>/repo git directories")
    args = parser.parse_args(argv)
    repos = {}
    for line in (HERE / "heldout2.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, commit = line.split()
            repos[name.split("/", 1)[1]] = (name, commit)
    files = [line.strip() for line in (HERE / "files_heldout2.txt").read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.startswith("#")]
    for rel in files:
        folder, _, path = rel.partition("/")
        name, commit = repos[folder]
        git = Path(args.mirror) / name.replace("/", "+") / "repo"
        data = subprocess.run(["git", "--git-dir", str(git), "show", f"{commit}:{path}"], capture_output=True,
                              check=True).stdout
        target = OUT / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    print(f"copied {len(files)} files into {OUT.relative_to(HERE.parents[2])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
