"""Copies the second held-out part's manifests (files_heldout2.txt) out of the repository snapshots
listed in heldout2.txt into benchmarks/accuracy/dependencies/corpus/heldout2/ (git-ignored).

The snapshots are brought by the search tool's `fetch` (a git directory per repository, path given
with --mirror, default the environment variable OPSCAN_MIRROR); each file is read at the pinned
commit with `git show COMMIT:PATH`, so what is scored is what was labelled.

    python benchmarks/accuracy/dependencies/fetch_heldout2.py --mirror DIR   # DIR/<owner>+<name>/repo

The third to ninth held-out parts (HELDOUT3.md to HELDOUT9.md) are copied the same way by
fetch_heldout3.py (main("heldout3")), fetch_heldout4.py (main("heldout4")), fetch_heldout5.py
(main("heldout5")), fetch_heldout6.py (main("heldout6")), fetch_heldout7.py (main("heldout7")),
fetch_heldout8.py (main("heldout8")) and fetch_heldout9.py (main("heldout9")).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None, part: str = "heldout2") -> int:
    """Copies the files of `part` (heldout2.txt / files_heldout2.txt, or heldout3's, heldout4's) into corpus/<part>/."""
    out = HERE / "corpus" / part
    parser = argparse.ArgumentParser(description=f"Copies the {part} manifests out of the repository snapshots.")
    parser.add_argument("--mirror", default=os.environ.get("OPSCAN_MIRROR", ""),
                        help="folder holding <owner>+<name>/repo git directories")
    args = parser.parse_args(argv)
    repos = {}
    for line in (HERE / f"{part}.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, commit = line.split()
            repos[name.split("/", 1)[1]] = (name, commit)
    files = [line.strip() for line in (HERE / f"files_{part}.txt").read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.startswith("#")]
    for rel in files:
        folder, _, path = rel.partition("/")
        name, commit = repos[folder]
        git = Path(args.mirror) / name.replace("/", "+") / "repo"
        shown = subprocess.run(["git", "--git-dir", str(git), "show", f"{commit}:{path}"], capture_output=True)
        if shown.returncode:
            reason = shown.stderr.decode(errors="replace").strip().splitlines()[:1] or ["git failed"]
            raise SystemExit(f"{rel}: cannot read {commit}:{path} from {git} ({reason[0]}; fetch {name} first?)")
        data = shown.stdout
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    print(f"copied {len(files)} files into {out.relative_to(HERE.parents[2])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
