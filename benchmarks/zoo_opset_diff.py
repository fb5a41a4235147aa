"""The op sets of two zoo runs (JSON): how many models are complete in both, how many have the same ops.

Usage: python benchmarks/zoo_opset_diff.py OLD.json NEW.json
Uses the zoo's own diff (opscan/zoo/diff.py: `op_changes` for the ops and their matrix cells, `diff`
for verdicts and blocking ops) and prints both. Op sets do not depend on the coverage release, so
a difference here is a change of what the tracer recorded.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from opscan.zoo import diff


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    args = parser.parse_args()
    old, new = diff.load(args.old), diff.load(args.new)
    compared, changes = diff.op_changes(old, new)
    status = {doc_name: {m["name"]: m.get("status") for m in doc["models"]}
              for doc_name, doc in (("old", old), ("new", new))}
    print(f"models: {len(status['old'])} old, {len(status['new'])} new; complete in both: {compared}; "
          f"same ops and cells: {compared - len(changes)}; different: {len(changes)}")
    for change in changes:
        print(f"  {change.model}:")
        if change.gone:
            print(f"    only old: {', '.join(change.gone)}")
        if change.added:
            print(f"    only new: {', '.join(change.added)}")
        for op, before, after in change.cells:
            print(f"    {op}: {before} -> {after}")
    moved = sorted(name for name in set(status["old"]) & set(status["new"])
                   if status["old"][name] != status["new"][name])
    print(f"status changed ({len(moved)}): " + (", ".join(
        f"{name} {status['old'][name]} -> {status['new'][name]}" for name in moved) or "none"))
    only = sorted(set(status["old"]) ^ set(status["new"]))
    print(f"in one run only ({len(only)}): {', '.join(only) or 'none'}")
    print(diff.render_text(diff.diff(old, new), old, new), end="")


if __name__ == "__main__":
    main()
