"""Runs `opscan REPO --format json` (no configuration, train mode) on the repositories set.

Each repository fetched by benchmarks/accuracy/repos/fetch.py, and examples/nanogpt without its
`[tool.opscan]` models, is checked in turn (one at a time, so the times are those of one run; the
load average is recorded). Writes results/table.md and results/results.json:
repository, version, part, what was traced, how it was found, seconds, ops (distinct), phases.

    python benchmarks/accuracy/repos/run.py [--held-out | --part PART] [NAME ...]

Without names, the development part is run (and examples/nanogpt); `--held-out` runs the current
held-out part (held out 4) alone: once, at the end, as it is never tuned on. `--part PART` runs one
part by name (`development`, `heldout2`, `heldout3`, `heldout4`). Rows already in results/results.json for
other repositories are kept, so the table holds every part, each reported apart.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE))
from fetch import CORPUS, DEV, HELD_OUT, HELD_OUT_2, PARTS, SITE, names

LIMIT = 120.0   # seconds per repository (the goal)


def _nanogpt(tmp: Path) -> Path:
    project = tmp / "nanogpt"
    shutil.copytree(ROOT / "examples" / "nanogpt", project)
    text = (project / "pyproject.toml").read_text(encoding="utf-8")
    (project / "pyproject.toml").write_text(text[: text.index("# opscan settings")], encoding="utf-8")
    return project


def check(path: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(SITE)]))
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "opscan", str(path), "--format", "json", "--exit-zero"],
                          check=False, capture_output=True, text=True, env=env, timeout=LIMIT * 3)
    seconds = time.monotonic() - start
    try:
        report = json.loads(done.stdout)
    except ValueError:
        return {"seconds": seconds, "traced": [], "error": (done.stderr.strip().splitlines() or ["?"])[-1]}
    notes = report.get("notes", [])
    how = {m.group(1): m.group(2) for n in notes for m in [re.match(r"traced with no configuration: (\S+): (.*)",
                                                                    n)] if m}
    failed = [n.removeprefix("not built: ") for n in notes if n.startswith("not built: ")]
    failed += [n for n in notes if n.startswith("trace of ")]
    traced = [{"target": t["target"], "how": how.get(t["target"], ""), "complete": t["complete"],
               "distinct_ops": t["distinct_ops"]} for t in report.get("traces", [])]
    phases = sorted({p for op in report.get("ops", []) for p in op.get("phases", [])})
    return {"seconds": round(seconds, 1), "traced": traced, "failed": failed, "phases": phases,
            "ops": len(report.get("ops", [])), "verdict": report["verdict"]["headline"]}


def _part(argv: list[str]) -> tuple[str, set[str]]:
    """The part to run and the repositories named, from the command line."""
    part, wanted, args = DEV, set(), iter(argv)
    for arg in args:
        if arg == "--held-out":
            part = HELD_OUT
        elif arg == "--part":
            spelled = {p.replace(" ", ""): p for p in PARTS}
            name = next(args, "")
            if name not in spelled:
                raise SystemExit(f"run.py: --part takes one of {', '.join(spelled)}, not {name!r}")
            part = spelled[name]
        else:
            wanted.add(arg)
    return part, wanted


def part_of(row: dict) -> str:
    """A row's part; rows written before parts were named say only whether they were held out."""
    return row.get("part") or (HELD_OUT_2 if row.get("held_out") else DEV)


def main(argv: list[str]) -> int:
    part, wanted = _part(argv)
    out = HERE / "results"
    previous = out / "results.json"
    rows = json.loads(previous.read_text(encoding="utf-8")) if previous.exists() else []
    with tempfile.TemporaryDirectory() as tmp:
        entries = [("examples/nanogpt", "(this repo)", _nanogpt(Path(tmp)), DEV)]
        entries += [(name, version, CORPUS / name, p) for name, version, p in names()]
        for name, version, path, p in entries:
            if wanted and name not in wanted or not wanted and p != part:
                continue
            rows = [r for r in rows if r["repository"] != name]
            if not path.is_dir():
                print(f"{name}: not fetched (python benchmarks/accuracy/repos/fetch.py)", file=sys.stderr)
                continue
            load = os.getloadavg()[0]
            result = check(path)
            result.update(repository=name, version=version, part=p, held_out=p != DEV, load=round(load, 1))
            rows.append(result)
            print(f"{name}: {len(result['traced'])} traced, {result['seconds']} s, load {load:.1f}", file=sys.stderr)
    out.mkdir(exist_ok=True)
    order = {name: i for i, (name, _v, _p) in enumerate([("examples/nanogpt", "", DEV), *names()])}
    rows.sort(key=lambda r: order.get(r["repository"], len(order)))
    (out / "results.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    (out / "table.md").write_text(table(rows), encoding="utf-8")
    print(table(rows))
    return 0


def trained(row: dict) -> bool:
    """A model traced to its end in train mode (its step reached the optimizer)."""
    return any(t["complete"] and t["distinct_ops"] for t in row["traced"]) and "optimizer" in row.get("phases", [])


def table(rows: list[dict]) -> str:
    lines = ["| repository | version | traced (train) | how found | s | ops | phases | load |",
             "|---|---|---|---|---|---|---|---|"]
    for part in PARTS:
        for r in (r for r in rows if part_of(r) == part):
            traced = "<br>".join(t["target"] + ("" if t["complete"] else " (stopped)") for t in r["traced"]) or \
                "— " + (r.get("failed") or [r.get("error", "")])[0][:120]
            how = "<br>".join(t["how"] for t in r["traced"])
            name = r["repository"] + ("" if part == DEV else f" ({part})")
            lines.append(f"| {name} | {r['version']} | {traced} | {how} | {r['seconds']} | {r.get('ops', 0)} | "
                         f"{', '.join(r.get('phases', []))} | {r['load']} |")
    for part in PARTS:
        rows_of = [r for r in rows if part_of(r) == part]
        if rows_of:
            ok = [r for r in rows_of if trained(r) and r["seconds"] <= LIMIT]
            lines.append(f"\n{part}: {len(ok)}/{len(rows_of)} repositories with a model traced in train mode "
                         f"within {LIMIT:.0f} s")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
