"""Benchmark `opscan trace --fsdp N`: wall time and peak RSS of one Llama-3-8B-shaped FSDP train trace.

    python benchmarks/speed/trace_fsdp_bench.py [--world-size 8] [--seq-len 2048]

One child process (as benchmarks/speed/trace_bench.py measures it): the model is built with empty
weights, sharded with fully_shard on a fake process group, and traced for one AdamW train step.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from trace_bench import LLAMA_8B, config, measure


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world-size", type=int, default=8)
    parser.add_argument("--seq-len", type=int, default=2048)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_text:
        folder = Path(tmp_text) / "llama3-8b"
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(config(LLAMA_8B)))
        out = folder / "trace.json"
        wall, rss, code, cpu = measure([sys.executable, "-m", "opscan", "trace", f"hf:{folder}",
                                        "--mode", "train", "--batch", "1", "--seq-len", str(args.seq_len),
                                        "--fsdp", str(args.world_size), "--format", "json",
                                        "--output", str(out)])
        doc = json.loads(out.read_text()) if out.exists() else {"ops": [], "traces": [{}]}
    collectives = {op["op"]: op["count"] for op in doc["ops"] if op["op"].startswith(("c10d::", "fsdp::"))}
    print(json.dumps({"case": f"llama3-8b fsdp={args.world_size}", "wall_s": round(wall, 2),
                      "cpu_s": round(cpu, 2), "peak_rss_gb": round(rss, 2), "exit": code,
                      "complete": doc["traces"][0].get("complete"), "distinct_ops": len(doc["ops"]),
                      "dispatches": sum(op["count"] for op in doc["ops"]), "fsdp_ops": collectives},
                     indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
