"""Why is each `unknown` model of a zoo run unknown? (issue 25 goal: none only because of unlisted ops)

Usage: python benchmarks/accuracy/zoo_unknown_reasons.py ZOO.json [--backend SPEC]

Prints the models per verdict, then every `unknown` model with its reasons, read from the row (the
verdict's open points, opscan/assess/verdict.py): an incomplete trace (with its stop class), ops of unknown
status, each split by why the release says unknown (an entry that says so, e.g. BatchNorm in eval, or
no entry at all: an unlisted op, which a release documenting its CPU fallback makes device-or-cpu),
and known failures of the backend on the traced dtypes (release caveats). Exits 1 when a model is
unknown only because of unlisted ops (a bug: such ops may fall back, they are not unknown).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter

from opscan.db import load_release


def reasons(row: dict, release) -> list[str]:
    """The reasons one unknown row gives (one line each)."""
    out = []
    if row["status"] != "ok":
        out.append(f"incomplete trace ({row['status']}, stop: {row.get('stop') or '?'})")
    unknown = [op for op in row["blockers"] if release.lookup(op).status == "unknown"]
    listed = [op for op in unknown if release.entry_for(op)[0] is not None]
    unlisted = [op for op in unknown if op not in listed]
    if listed:
        out.append("unknown in the release: " + ", ".join(listed))
    if unlisted:
        out.append("UNLISTED (should be device-or-cpu): " + ", ".join(unlisted))
    failures = [c.split(": ", 1)[1] for c in row.get("caveats", ()) if c.startswith("known-failure: ")]
    if failures:
        out.append("known failure on the traced dtypes: " + "; ".join(failures))
    return out or ["none left: this opscan's lookup answers every op (the run's code judged it unknown)"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", help="a zoo JSON file (opscan zoo --json)")
    parser.add_argument("--backend", help="release spec (default: the run's)")
    args = parser.parse_args()
    with open(args.run, encoding="utf-8") as handle:
        doc = json.load(handle)
    release = load_release(args.backend or doc["meta"]["backend"], None)
    rows = doc["models"]
    print(f"{len(rows)} models against {release.spec}: "
          + ", ".join(f"{n} {v}" for v, n in sorted(Counter(r["verdict"] for r in rows).items())))
    kinds: Counter = Counter()
    only_unlisted = []
    for row in sorted((r for r in rows if r["verdict"] == "unknown"), key=lambda r: r["name"]):
        why = reasons(row, release)
        print(f"  {row['name']}: " + " | ".join(why))
        kinds.update(line.split(" (")[0].split(":")[0] for line in why)   # the reason's kind
        if all(line.startswith("UNLISTED") for line in why):
            only_unlisted.append(row["name"])
    print("reasons (a model may give several): " + ", ".join(f"{n} {k}" for k, n in kinds.most_common()))
    print(f"unknown only because of unlisted ops: {len(only_unlisted)}" + (f" ({', '.join(only_unlisted)})"
                                                                         if only_unlisted else ""))
    return 1 if only_unlisted else 0


if __name__ == "__main__":
    raise SystemExit(main())
