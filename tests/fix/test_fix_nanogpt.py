"""`opscan fix` on the shipped example: the fixed script runs on the CPU, matches the original run
exactly (`opscan parity`, tolerance 0), and a re-scan shows only the non-mechanical findings."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
np = pytest.importorskip("numpy")

# What no codemod rewrites in examples/nanogpt: kernels, libraries, flags, env vars, compile mode,
# device-type branches (OPS106: a decision per branch),
# the availability guard and what it protects, and `torch.cuda.is_bf16_supported` (kept behind its CUDA
# test in the rewritten bfloat16 choice: tests/fix/test_fix_review.py).
LEFT = {"OPS105", "OPS106", "OPS201", "OPS203", "OPS204", "OPS207", "OPS210", "OPS301", "OPS302", "OPS303", "OPS304",
        "OPS305", "OPS308", "OPS309", "OPS401",
        "OPS506"}   # triton in pyproject.toml's `kernels` extra: a library task, never rewritten

# The same small-run settings for both copies (the script has no command line): a few steps of a
# tiny model, no torch.compile (a C++ toolchain on the CPU), one evaluation batch.
SMALL = [
    (r"^max_iters = \d+$", "max_iters = 3"),
    (r"^eval_iters = \d+$", "eval_iters = 1"),
    (r"^batch_size = \d+$", "batch_size = 2"),
    (r"^block_size = \d+$", "block_size = 8"),
    (r"^gradient_accumulation_steps = \d+$", "gradient_accumulation_steps = 2"),
    (r"^compile = True$", "compile = False"),
    (r"^model_args = dict\(.*\)$", ("model_args = dict(n_layer=1, n_head=2, n_embd=16, block_size=block_size, "
                                   "bias=False, vocab_size=64, dropout=0.1)")),
    (r"^(    optimizer\.zero_grad\(set_to_none=True\))$",
     "\\1\n    _dump.write(_json.dumps({'step': iter_num, 'loss': loss.item()}) + '\\\\n')"),
]
HEADER = "import json as _json, os as _os\n_dump = open(_os.environ['LOSS_DUMP'], 'w')\n"
# The original calls torch.cuda.synchronize / max_memory_allocated to log speed and memory; on a
# CPU-only torch they raise. They do not touch the numbers, so the runner makes them no-ops (for
# both runs; the fixed script no longer calls them).
RUNNER = ("import runpy, torch; "
          "torch.cuda.synchronize = lambda *a, **k: None; torch.cuda.max_memory_allocated = lambda *a, **k: 0; "
          "runpy.run_path('train.py', run_name='__main__')")


def _small(folder: Path, cpu_device: bool) -> None:
    text = (folder / "train.py").read_text()
    for pattern, repl in SMALL:
        text, n = re.subn(pattern, repl, text, count=1, flags=re.MULTILINE)
        assert n == 1, pattern
    if cpu_device:   # how a user runs the original on the CPU: set its device option
        text, n = re.subn(r'^device = "cuda"', 'device = "cpu"', text, count=1, flags=re.MULTILINE)
        assert n == 1
    (folder / "train.py").write_text(HEADER + text)
    data = folder / "data" / "shakespeare_char"
    data.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for split in ("train", "val"):
        rng.integers(0, 64, 4000, dtype=np.uint16).tofile(data / f"{split}.bin")


def _train(folder: Path, dump: Path) -> None:
    env = {**os.environ, "LOSS_DUMP": str(dump), "CUDA_VISIBLE_DEVICES": ""}
    env.pop("RANK", None)
    proc = subprocess.run([sys.executable, "-c", RUNNER], check=False, cwd=folder, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.slow
def test_fixed_nanogpt_runs_on_cpu_with_exact_parity(tmp_path, repo_root, run_cli, monkeypatch):
    original, fixed = tmp_path / "original", tmp_path / "fixed"
    shutil.copytree(repo_root / "examples" / "nanogpt", original)
    shutil.copytree(repo_root / "examples" / "nanogpt", fixed)
    monkeypatch.chdir(tmp_path)

    code, out, err = run_cli("fix", "fixed")
    assert code == 0, err
    assert "fixed train.py" in out
    assert (fixed / "model.py").read_bytes() == (original / "model.py").read_bytes()   # nothing to fix there

    code, out, err = run_cli("scan", "fixed", "--format", "json", "--no-cache")
    left = {f["rule"] for f in json.loads(out)["findings"]}
    assert left == LEFT
    code, out, _ = run_cli("fix", "fixed", "--diff")
    assert code == 0 and out == ""                                              # fixing twice == once

    _small(original, cpu_device=True)
    _small(fixed, cpu_device=False)
    _train(original, tmp_path / "original.jsonl")
    _train(fixed, tmp_path / "fixed.jsonl")
    losses = [json.loads(line) for line in (tmp_path / "fixed.jsonl").read_text().splitlines()]
    assert [r["step"] for r in losses] == [0, 1, 2, 3]
    code, out, err = run_cli("parity", "original.jsonl", "fixed.jsonl", "--tolerance", "0")
    assert code == 0, out + err
