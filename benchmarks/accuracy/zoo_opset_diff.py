"""The op sets of two zoo runs (JSON): how many models are complete in both, how many have the same ops.

Usage: python benchmarks/accuracy/zoo_opset_diff.py OLD.json NEW.json
       python benchmarks/accuracy/zoo_opset_diff.py OLD.json CACHE_DIR    (the traces a run has cached so far)
Uses the zoo's own diff (opscan/zoo/diff.py: `op_changes` for the ops and their matrix cells, `diff`
for verdicts and blocking ops) and prints both. Op sets do not depend on the coverage release, so
a difference here is a change of what the tracer recorded.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from opscan.zoo import diff


def from_cache(folder: Path) -> dict:
    """A zoo document of the models whose traces a (possibly unfinished) run cached under `folder`:
    their status and matrix cells, as the run's rows will have them (verdicts left out)."""
    from opscan.zoo.cache import Cache
    from opscan.zoo.results import _cell

    cache = Cache(folder)
    models = []
    for path in sorted((folder / "traces").glob("*.json")):
        outcome = cache.get_outcome(path.stem)
        if outcome is None:
            continue
        cells = {u.op: _cell(u, outcome.trace) for u in outcome.trace.ops} if outcome.trace else {}
        models.append({"name": outcome.name, "status": outcome.status, "verdict": "", "op_cells": cells})
    return {"models": models, "meta": {}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    args = parser.parse_args()
    old = diff.load(args.old)
    new = from_cache(args.new) if args.new.is_dir() else diff.load(args.new)
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
    label = "not traced (or not cached) yet" if args.new.is_dir() else "in one run only"
    print(f"{label} ({len(only)}): {', '.join(only) or 'none'}")
    if not args.new.is_dir():
        print(diff.render_text(diff.diff(old, new), old, new), end="")


if __name__ == "__main__":
    main()
