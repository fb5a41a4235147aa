"""Checks issue #43's plan goals on a part's repositories: the torch task first wherever one is needed,
and every plan that needs an upgrade ends with install lines (or says which are unknown).

For each repository folder of a part's corpus (corpus/PART/NAME, as the fetchers export them), it runs
`opscan scan NAME --format json --exit-zero` (the source-only report a team runs) and reads the plan:
- **needs an upgrade**: a task of kind `torch-version` whose title says "upgrade" (a pin that governs
  the installed package is off the release's torch: docs/dependencies.md, "The plan");
- **first**: that task is the first of the plan and every other task depends on it, directly or
  through others (the edge "every other task is done and tested on the torch this upgrade brings");
- **install lines**: its action ends with the release's install (a `pip install` line, or the words
  "the exact install line is unknown" naming what is known).
A repository with no upgrade is listed as such; an export holding only build files with no
finding ("nothing to check", exit 2: a pyproject.toml without a dependency finding is a build file)
has no plan to judge; any other scan that gives no JSON is a failure.

    python benchmarks/accuracy/dependencies/plan_check.py heldout7      # corpus/heldout7/*
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def check(report: dict) -> tuple[str, str]:
    """("no-upgrade" | "ok" | "not-first" | "no-install", detail) for one JSON report."""
    tasks = report.get("tasks") or []
    upgrade = next((t for t in tasks if t.get("kind") == "torch-version"
                    and str(t.get("title", "")).startswith("upgrade")), None)
    if upgrade is None:
        return "no-upgrade", ""
    ids = {t["id"]: t for t in tasks}
    after: dict[str, bool] = {}

    def reaches(task_id: str, seen: frozenset[str] = frozenset()) -> bool:
        if task_id in after:
            return after[task_id]
        if task_id in seen or task_id not in ids:
            return False
        deps = ids[task_id].get("depends_on") or []
        after[task_id] = upgrade["id"] in deps or any(reaches(d, seen | {task_id}) for d in deps)
        return after[task_id]

    missing = [t["id"] for t in tasks if t is not upgrade and not reaches(t["id"])]
    if tasks[0] is not upgrade or missing:
        return "not-first", f"first task {tasks[0]['id']}; not after the upgrade: {', '.join(missing) or '-'}"
    action = str(upgrade.get("action", ""))
    tail = action[action.rfind("then install the release"):] if "then install the release" in action else ""
    if not tail or not ("pip install" in tail or "install line is unknown" in tail):
        return "no-install", action[-160:]
    return "ok", ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", help="a corpus folder under benchmarks/accuracy/dependencies/corpus/")
    parser.add_argument("--opscan", default=str(Path(sys.executable).with_name("opscan")),
                        help="the opscan command (default: the one beside this interpreter)")
    args = parser.parse_args()
    corpus = HERE / "corpus" / args.part
    if not corpus.is_dir():
        print(f"plan_check: no corpus at {corpus}: run the part's fetcher first", file=sys.stderr)
        return 2
    counts: dict[str, int] = {}
    for repo in sorted(p for p in corpus.iterdir() if p.is_dir()):
        done = subprocess.run([args.opscan, "scan", str(repo), "--format", "json", "--exit-zero", "--no-cache"],
                              capture_output=True, text=True, check=False)
        try:
            outcome, detail = check(json.loads(done.stdout))
        except (json.JSONDecodeError, KeyError, TypeError):
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            # an export of build files only (a pyproject with no dependency finding is a build file,
            # not a scanned manifest): the repository's own tree holds its Python; no plan to judge
            nothing = done.returncode == 2 and "nothing to check" in last
            outcome, detail = ("nothing", "only build files without findings") if nothing else \
                ("failed", f"exit {done.returncode}: {last}")
        counts[outcome] = counts.get(outcome, 0) + 1
        print(f"{outcome:10} {repo.name}" + (f"  ({detail})" if detail else ""))
    upgrades = sum(counts.get(k, 0) for k in ("ok", "not-first", "no-install"))
    print(f"{args.part}: {len(list(corpus.iterdir()))} repositories; {upgrades} need a torch upgrade: "
          f"{counts.get('ok', 0)} with it first and ending with install lines, {counts.get('not-first', 0)} not "
          f"first, {counts.get('no-install', 0)} without install lines; {counts.get('nothing', 0)} exports of "
          f"build files only; {counts.get('failed', 0)} scans failed")
    return 0 if counts.get("not-first", 0) + counts.get("no-install", 0) + counts.get("failed", 0) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
