"""Copies the eleventh held-out part's manifests (files_heldout11.txt) out of the repository snapshots
listed in heldout11.txt into benchmarks/accuracy/dependencies/corpus/heldout11/ (git-ignored), each at its
pinned commit (`git show COMMIT:PATH`), as fetch_heldout2.py does for the second part (HELDOUT11.md).

    python benchmarks/accuracy/dependencies/fetch_heldout11.py --mirror DIR   # DIR/<owner>+<name>/repo
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fetch_heldout2  # the copy, shared by the parts

if __name__ == "__main__":
    sys.exit(fetch_heldout2.main(part="heldout11"))
