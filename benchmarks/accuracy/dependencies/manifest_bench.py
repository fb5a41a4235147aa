"""What a dependency manifest costs the source scan: irrelevant vs relevant manifests vs Python files.

Builds a synthetic tree in a temporary folder: N requirements files naming no torch or CUDA
package (web services' dependencies), N naming torch and CUDA builds, and N small Python files,
and times `scan_paths` (in process, one worker, no cache) on each third alone, median of --runs.
Also times a whole `opscan scan --no-cache` of TREE (e.g. benchmarks/accuracy/dependencies/corpus) for the
code given with --code (a checkout: PYTHONPATH points there), so a run against main's checkout
and this one gives the before/after of docs/dependencies.md.

    python benchmarks/accuracy/dependencies/manifest_bench.py --files 400 --runs 5
    python benchmarks/accuracy/dependencies/manifest_bench.py \
        --tree benchmarks/accuracy/dependencies/corpus --code ../main --runs 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

PLAIN = "requests>=2.31\nflask==3.0.2\ngunicorn\npydantic>=2\nsqlalchemy<3\nredis\ncelery[redis]\n"
CUDA = ("--extra-index-url https://download.pytorch.org/whl/cu121\ntorch==2.1.2+cu121\ntorchvision==0.16.2\n"
        "flash-attn==2.5.8\nnvidia-cudnn-cu12\nrequests\n")
PYTHON = "import os\n\n\ndef main(argv):\n    return len(argv) + int(os.environ.get('N', '0'))\n"


def _tree(base: Path, kind: str, count: int) -> Path:
    root = base / kind
    for i in range(count):
        folder = root / f"svc{i:04d}"
        folder.mkdir(parents=True)
        if kind == "python":
            (folder / "app.py").write_text(PYTHON)
        else:
            (folder / "requirements.txt").write_text(PLAIN if kind == "plain" else CUDA)
    return root


def _time_in_process(root: Path, runs: int) -> float:
    sys.path.insert(0, str(ROOT))
    from opscan.config import Config
    from opscan.pipeline.phases import dependency_context
    from opscan.scan.tree import scan_paths
    from opscan.scan.rules import load_rules

    rules = load_rules()
    deps = dependency_context(Config(root))
    scan_paths(root, rules=rules, check_fixes=False, deps=deps)   # imports and compiled rules warmed
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        scan_paths(root, rules=rules, check_fixes=False, deps=deps)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _time_cli(tree: Path, code: Path, runs: int) -> float:
    env = dict(os.environ, PYTHONPATH=str(code.resolve()))
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "opscan", "scan", str(tree.resolve()), "--no-cache", "--exit-zero",
                        "--format", "json", "--output", os.devnull], env=env, check=True, cwd=code)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=400)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tree", type=Path, help="time `opscan scan --no-cache TREE` with --code's checkout")
    parser.add_argument("--code", type=Path, action="append", default=[], help="a checkout (repeatable)")
    args = parser.parse_args()
    if args.tree:
        for code in args.code or [ROOT]:
            print(f"| {args.tree} | {code} | {_time_cli(args.tree, code, args.runs):.3f} s |")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for kind in ("python", "plain", "cuda"):
            root = _tree(Path(tmp), kind, args.files)
            seconds = _time_in_process(root, args.runs)
            rows.append((kind, seconds, seconds / args.files * 1e6))
        print("| files | kind | median s | µs per file |\n|---|---|---|---|")
        for kind, seconds, per in rows:
            print(f"| {args.files} | {kind} | {seconds:.3f} | {per:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
