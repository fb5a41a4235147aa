"""Benchmark what issue 44 added to a trace: the project's line looked up for ops a library dispatches
(NOTE [sites the user can change]) and the second trace that tells coinciding sizes apart (NOTE
[sizes by role]).

Cases, each a whole `python -m opscan trace hf:examples/models/hf/llama-tiny --mode train --format json`
process (CPU seconds, median of --repeat runs):
  - `seq 96`: a length no size of llama-tiny has: one trace;
  - `seq 128`: equal to its intermediate size: a second trace at 112 tells the dims apart;
  - `8b-shape 4 layers, seq 2048`: Llama-3-8B shapes cut to 4 layers (every op from transformers' lines:
    the project's-line lookup walks their stacks); compare with another checkout's interpreter and
    root (`--baseline-python`, `--baseline-root`) to see that lookup's cost.

    python benchmarks/speed/roles_bench.py [--repeat 3] [--baseline-python /path/to/main/.venv/bin/python
                                      --baseline-root /path/to/main]

Run it on a quiet machine: numbers from a loaded 2-core box are noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LLAMA_8B_4 = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "max_position_embeddings": 8192,
              "hidden_size": 4096, "num_hidden_layers": 4, "num_attention_heads": 32, "num_key_value_heads": 8,
              "intermediate_size": 14336, "vocab_size": 128256, "tie_word_embeddings": False}


def cpu_seconds(argv: list[str], cwd: Path) -> tuple[float, float, int]:
    """(CPU seconds, wall seconds, exit code) of one child process."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=cwd)
    _, status, usage = os.wait4(proc.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        sys.stderr.write(proc.stderr.read().decode(errors="replace")[-1500:])
    return usage.ru_utime + usage.ru_stime, time.perf_counter() - started, code


def run(python: str, root: Path, target: str, *extra: str, repeat: int) -> dict:
    cpu, wall = [], []
    for _ in range(repeat):
        c, w, code = cpu_seconds([python, "-m", "opscan", "trace", target, "--mode", "train", "--format", "json",
                                  "--timeout", "0", *extra], root)
        if code not in (0, 1):
            return {"error": code}
        cpu.append(c)
        wall.append(w)
    return {"cpu_s": round(statistics.median(cpu), 2), "wall_s": round(statistics.median(wall), 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline-python", default=None)
    parser.add_argument("--baseline-root", type=Path, default=None)
    args = parser.parse_args()
    tiny = f"hf:{ROOT / 'examples' / 'models' / 'hf' / 'llama-tiny'}"
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "llama8b4"
        big.mkdir()
        (big / "config.json").write_text(json.dumps(LLAMA_8B_4), encoding="utf-8")
        cases = [("seq 96", tiny, ("--seq-len", "96")), ("seq 128 (second trace)", tiny, ("--seq-len", "128")),
                 ("8b-shape 4 layers, seq 2048", f"hf:{big}", ("--batch", "1", "--seq-len", "2048"))]
        for name, target, extra in cases:
            rows[name] = {"this": run(sys.executable, ROOT, target, *extra, repeat=args.repeat)}
            if args.baseline_python:
                rows[name]["baseline"] = run(args.baseline_python, args.baseline_root or ROOT, target, *extra,
                                             repeat=args.repeat)
    print(json.dumps({"load_average": os.getloadavg(), "repeat": args.repeat, "cases": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
