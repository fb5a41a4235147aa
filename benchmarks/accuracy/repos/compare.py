"""Compares two runs of benchmarks/accuracy/repos/run.py (their results.json): which repositories each counts,
which were lost or gained, and what each traced.

    python benchmarks/accuracy/repos/compare.py BEFORE.json AFTER.json

A repository counts as run.py counts it: a model's trace reached the optimizer step complete, within
run.py's LIMIT seconds. Times on a shared machine are noisy (the load column says how busy it was).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import LIMIT, trained


def _rows(path: str) -> dict[str, dict]:
    return {r["repository"]: r for r in json.loads(Path(path).read_text(encoding="utf-8"))}


def _traced(row: dict) -> str:
    return ", ".join(t["target"] + ("" if t["complete"] else " (stopped)") for t in row.get("traced", [])) or "—"


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    before, after = _rows(argv[0]), _rows(argv[1])
    counted = {name: (trained(r) and r["seconds"] <= LIMIT) for name, r in before.items()}
    now = {name: (trained(r) and r["seconds"] <= LIMIT) for name, r in after.items()}
    print("| repository | before | after | traced before | traced after | s before | s after | load after |")
    print("|---|---|---|---|---|---|---|---|")
    for name in sorted(set(before) | set(after), key=lambda n: (n not in before, n)):
        b, a = before.get(name, {}), after.get(name, {})
        print(f"| {name} | {'yes' if counted.get(name) else 'no'} | {'yes' if now.get(name) else 'no'} | "
              f"{_traced(b) if b else ''} | {_traced(a) if a else ''} | {b.get('seconds', '')} | "
              f"{a.get('seconds', '')} | {a.get('load', '')} |")
    lost = sorted(n for n in before if counted.get(n) and not now.get(n))
    gained = sorted(n for n in after if now.get(n) and not counted.get(n))
    print(f"\nbefore: {sum(counted.values())}/{len(before)}; after: {sum(now.values())}/{len(after)}; "
          f"lost: {', '.join(lost) or 'none'}; gained: {', '.join(gained) or 'none'}")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
