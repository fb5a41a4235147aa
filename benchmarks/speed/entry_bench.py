"""The cost of finding the training command by reading (opscan/targets/entry/): CPU seconds of
`find_entries` over each folder given, on a fresh project index (every file read and parsed for it
alone, so an upper bound: in `opscan PATH` the model search and the scan share those reads).

Usage:
    python benchmarks/speed/entry_bench.py FOLDER... [--repeat N]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from opscan.index import ProjectIndex
from opscan.targets.entry import find_entries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("| folder | files listed | files parsed | entries | best CPU s |")
    print("|---|---|---|---|---|")
    for folder in args.folders:
        best, index, found = float("inf"), None, ()
        for _ in range(args.repeat):
            index = ProjectIndex(folder)
            started = time.process_time()
            found = find_entries(index)
            best = min(best, time.process_time() - started)
        listed = sum(1 for _ in index.paths(limit=None))
        print(f"| {folder} | {listed} | {len(index.parsed)} | {len(found)} | {best:.3f} |")


if __name__ == "__main__":
    main()
