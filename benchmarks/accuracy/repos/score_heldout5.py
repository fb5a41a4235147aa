"""Held-out 5's scorer, as its results were made: score_heldout.py with `--set heldout5`.

    python benchmarks/accuracy/repos/score_heldout5.py [--results DIR] [--run [NAME ...]]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from score_heldout import main  # a sibling script, found through the path above

if __name__ == "__main__":
    sys.exit(main(["--set", "heldout5", *sys.argv[1:]]))
