"""Benchmark `opscan trace`: whole-process wall time and peak RSS for Llama shapes (train, AdamW).

Each case runs `python -m opscan trace hf:CONFIG --mode train --batch 1 --seq-len 2048 --format json`
in its own subprocess; wall time and peak RSS (ru_maxrss of that child) cover the whole process:
interpreter start, imports, model build with empty weights, the fake train step, JSON output.
The baseline is `python -c "import torch, transformers.models.llama.modeling_llama"`.

    python benchmarks/speed/trace_bench.py [--quick] [--markdown]

Run it on a quiet machine: numbers from a loaded 2-core box are noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LLAMA_8B = {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
            "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256}
LLAMA_70B = {"hidden_size": 8192, "num_hidden_layers": 80, "num_attention_heads": 64,
             "num_key_value_heads": 8, "intermediate_size": 28672, "vocab_size": 128256}
TINY = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 256}


def config(shape: dict, layers: int | None = None) -> dict:
    out = {"model_type": "llama", "architectures": ["LlamaForCausalLM"],
           "max_position_embeddings": 8192, "rope_theta": 500000.0, "tie_word_embeddings": False}
    out.update(shape)
    if layers is not None:
        out["num_hidden_layers"] = layers
    return out


def measure(argv: list[str]) -> tuple[float, float, int, float]:
    """(wall seconds, peak RSS in GB, exit code, CPU seconds) of one child process."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        sys.stderr.write(proc.stderr.read().decode(errors="replace")[-2000:])
    return wall, usage.ru_maxrss / 1024 / 1024, proc.returncode, usage.ru_utime + usage.ru_stime


def trace_case(name: str, cfg: dict, tmp: Path, seq_len: int) -> dict:
    folder = tmp / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(cfg))
    out = folder / "trace.json"
    wall, rss, code, cpu = measure([sys.executable, "-m", "opscan", "trace", f"hf:{folder}", "--mode", "train",
                               "--batch", "1", "--seq-len", str(seq_len), "--format", "json",
                               "--output", str(out)])
    doc = json.loads(out.read_text()) if out.exists() else {"ops": [], "traces": [{}]}
    return {"case": name, "layers": cfg["num_hidden_layers"], "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "peak_rss_gb": round(rss, 2), "exit": code, "distinct_ops": len(doc["ops"]),
            "dispatches": sum(op["count"] for op in doc["ops"]),
            "complete": doc["traces"][0].get("complete")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny + 8B only, no depth sweep")
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    parser.add_argument("--seq-len", type=int, default=2048)
    args = parser.parse_args()
    base_wall, base_rss, _, base_cpu = measure([sys.executable, "-c",
                                      "import torch, transformers.models.llama.modeling_llama"])
    rows = []
    with tempfile.TemporaryDirectory() as tmp_text:
        tmp = Path(tmp_text)
        cases = [("tiny", config(TINY)), ("llama3-8b", config(LLAMA_8B))]
        if not args.quick:
            cases.append(("llama3-70b", config(LLAMA_70B)))
            cases += [(f"8b-shape-{n}-layers", config(LLAMA_8B, n)) for n in (1, 8, 16)]
        for name, cfg in cases:
            row = trace_case(name, cfg, tmp, args.seq_len)
            row["x_import_baseline"] = round(row["wall_s"] / base_wall, 2)
            row["cpu_x_import_baseline"] = round(row["cpu_s"] / base_cpu, 2)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    print(json.dumps({"baseline_import_s": round(base_wall, 2), "baseline_rss_gb": round(base_rss, 2),
                      "baseline_cpu_s": round(base_cpu, 2), "load_average": os.getloadavg()[0],
                      "cpus": os.cpu_count(), "cases": rows}, indent=2))
    if args.markdown:
        print(f"\nimport baseline: {base_wall:.2f} s wall, {base_cpu:.2f} s CPU, {base_rss:.2f} GB "
              f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)\n")
        print("| case | layers | wall s | x import (wall) | CPU s | x import (CPU) | peak RSS GB | ops | "
              "dispatches | complete |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['case']} | {r['layers']} | {r['wall_s']} | {r['x_import_baseline']} | {r['cpu_s']} | "
                  f"{r['cpu_x_import_baseline']} | {r['peak_rss_gb']} | {r['distinct_ops']} | "
                  f"{r['dispatches']} | {r['complete']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
