"""Runs `opscan REPO --format json` (no configuration, train mode) on the repositories development set.

Each repository fetched by benchmarks/repos/fetch.py, and examples/nanogpt without its
`[tool.opscan]` models, is checked in turn (one at a time, so the times are those of one run; the
load average is recorded). Writes results/table.md and results/results.json:
repository, version, what was traced, how it was found, seconds, ops (distinct), phases.

    python benchmarks/repos/run.py [--held-out] [NAME ...]

Without names, the development part is run (and examples/nanogpt); `--held-out` runs the held-out
part alone (once, at the end: it is never tuned on). Rows already in results/results.json for
other repositories are kept, so the table holds both parts.
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
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
from fetch import CORPUS, SITE, names  # noqa: E402

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
                          capture_output=True, text=True, env=env, timeout=LIMIT * 3)
    seconds = time.monotonic() - start
    try:
        report = json.loads(done.stdout)
    except ValueError:
        return {"seconds": seconds, "traced": [], "error": (done.stderr.strip().splitlines() or ["?"])[-1]}
    notes = report.get("notes", [])
    how = {m.group(1): m.group(2) for n in notes for m in [re.match(r"traced with no configuration: (\S+): (.*)", n)] if m}
    failed = [n.removeprefix("not built: ") for n in notes if n.startswith("not built: ")]
    failed += [n for n in notes if n.startswith("trace of ")]
    traced = [{"target": t["target"], "how": how.get(t["target"], ""), "complete": t["complete"],
               "distinct_ops": t["distinct_ops"]} for t in report.get("traces", [])]
    phases = sorted({p for op in report.get("ops", []) for p in op.get("phases", [])})
    return {"seconds": round(seconds, 1), "traced": traced, "failed": failed, "phases": phases,
            "ops": len(report.get("ops", [])), "verdict": report["verdict"]["headline"]}


def main(argv: list[str]) -> int:
    held_out = "--held-out" in argv
    wanted = set(argv) - {"--held-out"}
    out = HERE / "results"
    previous = out / "results.json"
    rows = json.loads(previous.read_text(encoding="utf-8")) if previous.exists() else []
    with tempfile.TemporaryDirectory() as tmp:
        entries = [("examples/nanogpt", "(this repo)", _nanogpt(Path(tmp)), False)]
        entries += [(name, version, CORPUS / name, held) for name, version, held in names()]
        for name, version, path, held in entries:
            if wanted and name not in wanted or not wanted and held != held_out:
                continue
            rows = [r for r in rows if r["repository"] != name]
            if not path.is_dir():
                print(f"{name}: not fetched (python benchmarks/repos/fetch.py)", file=sys.stderr)
                continue
            load = os.getloadavg()[0]
            result = check(path)
            result.update(repository=name, version=version, held_out=held, load=round(load, 1))
            rows.append(result)
            print(f"{name}: {len(result['traced'])} traced, {result['seconds']} s, load {load:.1f}", file=sys.stderr)
    out.mkdir(exist_ok=True)
    order = {name: i for i, (name, _v, _h) in enumerate([("examples/nanogpt", "", False), *names()])}
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
    for held in (False, True):
        for r in (r for r in rows if r["held_out"] == held):
            traced = "<br>".join(t["target"] + ("" if t["complete"] else " (stopped)") for t in r["traced"]) or \
                "— " + (r.get("failed") or [r.get("error", "")] or [""])[0][:120]
            how = "<br>".join(t["how"] for t in r["traced"])
            name = r["repository"] + (" (held out)" if held else "")
            lines.append(f"| {name} | {r['version']} | {traced} | {how} | {r['seconds']} | {r.get('ops', 0)} | "
                         f"{', '.join(r.get('phases', []))} | {r['load']} |")
    for held, label in ((False, "development"), (True, "held out")):
        part = [r for r in rows if r["held_out"] == held]
        if part:
            ok = [r for r in part if trained(r) and r["seconds"] <= LIMIT]
            lines.append(f"\n{label}: {len(ok)}/{len(part)} repositories with a model traced in train mode "
                         f"within {LIMIT:.0f} s")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
