"""Rebuilds the held-out 6 to 13 corpus (issue 42): twelve research repositories at their pinned commits,
and the one environment they run in.

`--set heldout7` (or `heldout8` to `heldout13`) reads heldout7.toml (heldout8.toml to
heldout13.toml; the rules in HELDOUT7.md to HELDOUT13.md) and writes corpus/heldout7/ and heldout7_venv.lock instead;
every path below reads `heldout7` (`heldout8` to `heldout13`) for `heldout6` then.

The recipe is heldout6.toml (chosen by the rule in HELDOUT6.md). Each repository is exported with
`git archive` from a local mirror (`--mirror DIR`, holding DIR/<owner>+<name>/repo, a bare git
directory or a checkout's .git) or else cloned, into benchmarks/accuracy/repos/corpus/heldout6/<name>/
(git-ignored: third-party code is never committed); a blob the mirror lacks is left out and named.
`--venv` builds corpus/heldout6/_venv: `python3 -m venv`, then ONE pip call with the [environment]
base (torch 2.13.0, torchvision 0.28.0, setuptools < 81), the union of every repository's
`requirements` and opscan (editable) from `--opscan DIR` (default: the checkout this script lives
in): one resolver, so that the versions fit together, and so that `score_heldout.py --set heldout6
--run` runs opscan where the repositories' dependencies are. `heldout6_venv.lock` is its pip freeze.
`--check-imports` imports, in that environment, the modules each repository's training command
imports from its dependencies (the recipe's `imports`): never the repository's own code, never opscan.
`--lines NAME` prints criterion 6's count for one repository (every line of every *.py file).

    python benchmarks/accuracy/repos/fetch_heldout6.py --mirror DIR   # export what is missing
    python benchmarks/accuracy/repos/fetch_heldout6.py --venv [--opscan DIR]
    python benchmarks/accuracy/repos/fetch_heldout6.py --check-imports
    python benchmarks/accuracy/repos/fetch_heldout6.py --check        # exit 1 unless all twelve are exported
    python benchmarks/accuracy/repos/fetch_heldout6.py --set heldout7 --mirror DIR --venv
    python benchmarks/accuracy/repos/fetch_heldout6.py --set heldout8 --mirror DIR --venv --opscan DIR
    python benchmarks/accuracy/repos/fetch_heldout6.py --set heldout9 --mirror DIR --venv --opscan DIR
    python benchmarks/accuracy/repos/fetch_heldout6.py --set heldout10 --mirror DIR --venv --opscan DIR
    python benchmarks/accuracy/repos/fetch_heldout6.py --set heldout11 --mirror DIR --venv --opscan DIR
    python benchmarks/accuracy/repos/fetch_heldout6.py --set heldout12 --mirror DIR --venv --opscan DIR
    python benchmarks/accuracy/repos/fetch_heldout6.py --set heldout13 --mirror DIR --venv --opscan DIR
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
RECIPE = HERE / "heldout6.toml"
CORPUS = HERE / "corpus" / "heldout6"
VENV = CORPUS / "_venv"
LOCK = HERE / "heldout6_venv.lock"
SETS = ("heldout6", "heldout7", "heldout8", "heldout9", "heldout10", "heldout11", "heldout12",
        "heldout13")   # held-out 6 to 13


def use_set(name: str) -> None:
    """Points RECIPE, CORPUS, VENV and LOCK at one set's files (held-out 6 unless told)."""
    global RECIPE, CORPUS, VENV, LOCK
    RECIPE, CORPUS = HERE / f"{name}.toml", HERE / "corpus" / name
    VENV, LOCK = CORPUS / "_venv", HERE / f"{name}_venv.lock"
sys.path.insert(0, str(HERE))
from fetch_heldout5 import _git_dir, check_exported, export_missing, python_lines  # noqa: E402


def recipe(path: Path | None = None) -> dict:
    """The recipe, checked for what the rest reads: unique names, 40-digit commits, imports listed."""
    data = tomllib.loads((path or RECIPE).read_text(encoding="utf-8"))
    names = [r["name"] for r in data["repository"]]
    if len(set(names)) != len(names):
        raise SystemExit(f"{(path or RECIPE).name}: a name is given twice")
    for row in data["repository"]:
        if len(row["commit"]) != 40:
            raise SystemExit(f"{(path or RECIPE).name}: {row['name']}: commit must be 40 hex digits")
        if not row.get("imports"):
            raise SystemExit(f"{(path or RECIPE).name}: {row['name']}: `imports` must list the modules to check")
    return data


def requirements(data: dict) -> list[str]:
    """The base, then every repository's requirements, each once, in recipe order."""
    seen: dict[str, None] = {}
    for req in [*data["environment"]["base"], *(r for row in data["repository"] for r in row["requirements"])]:
        seen.setdefault(req, None)
    return list(seen)


def build_venv(data: dict, opscan: Path) -> None:
    """corpus/heldout6/_venv: one pip call (the base, the union, opscan editable), then the lock."""
    if not (VENV / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    pip = [str(VENV / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    env = dict(os.environ, PIP_FIND_LINKS="")   # a local +cpu wheel would win over the index's 2.13.0
    with tempfile.TemporaryDirectory() as scratch:
        # [environment] build_constraints (held-out 11): pins for the isolated builds of sdists too
        # (visdom's setup.py imports pkg_resources, which setuptools >= 81 no longer ships); pip's
        # build subprocesses read PIP_CONSTRAINT from the environment.
        if data["environment"].get("build_constraints"):
            constraints = Path(scratch) / "constraints.txt"
            constraints.write_text("\n".join(data["environment"]["build_constraints"]) + "\n", encoding="utf-8")
            env["PIP_CONSTRAINT"] = str(constraints)
        subprocess.run([*pip, *requirements(data), "-e", str(opscan)], check=True, env=env)
    frozen = subprocess.run([str(VENV / "bin" / "python"), "-m", "pip", "freeze", "--all", "--exclude-editable"],
                            check=True, capture_output=True, text=True).stdout
    header = f"# pip freeze of corpus/{CORPUS.name}/_venv (fetch_heldout6.py --set {CORPUS.name} --venv)\n"
    LOCK.write_text(header + frozen, encoding="utf-8")


def check_imports(data: dict) -> list[str]:
    """One line per repository: its dependency modules import in the corpus environment, or the error."""
    python = VENV / "bin" / "python"
    if not python.exists():
        raise SystemExit("fetch_heldout6.py: no corpus environment (fetch_heldout6.py --venv)")
    lines = []
    # NOTE [an empty working folder]: `python -c` puts its working folder first on sys.path, so the
    # check runs in a new empty folder: never the repository's (its own modules are not dependencies),
    # and not the shared temporary folder either, where a stray folder (held-out 12's check met an
    # `awq` one) passes for a namespace package and breaks an import that works elsewhere (peft's).
    with tempfile.TemporaryDirectory() as empty:
        for row in data["repository"]:
            code = "; ".join(f"import {module}" for module in row["imports"])
            done = subprocess.run([str(python), "-W", "ignore", "-c", code], capture_output=True, text=True,
                                  check=False, cwd=empty)
            error = (done.stderr.strip().splitlines() or [""])[-1]
            lines.append(f"{row['name']}: " + ("ok (" + ", ".join(row["imports"]) + ")" if done.returncode == 0
                                               else "FAILED: " + error))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=SETS, default="heldout6", help="the held-out set (default heldout6)")
    parser.add_argument("--mirror", type=Path, help="a folder of git mirrors (DIR/<owner>+<name>/repo)")
    parser.add_argument("--check", action="store_true", help="exit 1 unless every repository is exported")
    parser.add_argument("--venv", action="store_true", help="build corpus/heldout6/_venv")
    parser.add_argument("--opscan", type=Path, default=ROOT, help="the opscan checkout to install (editable)")
    parser.add_argument("--check-imports", action="store_true", help="import each repository's dependencies")
    parser.add_argument("--lines", metavar="NAME", help="criterion 6's count for one repository (needs --mirror)")
    args = parser.parse_args(argv)
    use_set(args.set)
    data = recipe()
    if args.lines:
        row = next((r for r in data["repository"] if r["name"] == args.lines), None)
        if row is None or args.mirror is None:
            raise SystemExit("fetch_heldout6.py: --lines takes a name of heldout6.toml, with --mirror")
        print(python_lines(_git_dir(args.mirror, row["repo"]), row["commit"]))
        return 0
    if args.check_imports:
        lines = check_imports(data)
        print("\n".join(lines))
        return 1 if any("FAILED" in line for line in lines) else 0
    if args.check:
        return check_exported(data, CORPUS)
    export_missing(data, CORPUS, args.mirror)
    if args.venv:
        if not (args.opscan / "pyproject.toml").is_file():
            raise SystemExit(f"fetch_heldout6.py: {args.opscan}: not an opscan checkout (no pyproject.toml)")
        build_venv(data, args.opscan.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
