"""Does `--layers N` keep each model's op set? Compares two zoo JSON runs (full vs shrunken configs).

Usage: python benchmarks/accuracy/zoo_layers_check.py FULL.json SHRUNK.json
Prints, for the models traced completely in both runs, how many have the same op set, and the
differences for the others; and the wall time of both runs.
"""

from __future__ import annotations

import json
import sys


def main(full_path: str, shrunk_path: str) -> None:
    with open(full_path, encoding="utf-8") as handle:
        full = {m["name"]: m for m in json.load(handle)["models"]}
    with open(shrunk_path, encoding="utf-8") as handle:
        shrunk_doc = json.load(handle)
    shrunk = {m["name"]: m for m in shrunk_doc["models"]}
    both = sorted(n for n in full if n in shrunk and full[n]["status"] == "ok" and shrunk[n]["status"] == "ok")
    same, differ = [], []
    for name in both:
        a, b = set(full[name]["op_cells"]), set(shrunk[name]["op_cells"])
        (same if a == b else differ).append((name, sorted(a - b), sorted(b - a)))
    print(f"{len(both)} models traced completely with both configs; {len(same)} identical op sets")
    for name, only_full, only_shrunk in differ:
        print(f"  {name}: only full: {only_full}; only shrunk: {only_shrunk}")
    status_changes = sorted((n, full[n]["status"], shrunk[n]["status"]) for n in full
                            if n in shrunk and full[n]["status"] != shrunk[n]["status"])
    print(f"{len(status_changes)} models changed status (full -> shrunk):")
    for name, a, b in status_changes:
        print(f"  {name}: {a} -> {b}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
