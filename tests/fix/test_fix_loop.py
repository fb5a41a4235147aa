"""The loop a user follows closes (issue 35): after `opscan fix`, no line the fixer wrote is an error
of `opscan PATH --no-trace`, on the shipped example, the fix and run fixtures; a script that
refused to start without CUDA is blocked before the fix and passes the gate after it; and the fixed
example still trains under `opscan run` (the real CPU run: tests/fix/test_fix_nanogpt.py)."""

from __future__ import annotations

import difflib
import re
import json
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TREES = {
    "nanogpt": ROOT / "examples" / "nanogpt",
    "fix-fixtures": ROOT / "tests" / "fix" / "fixtures",
    "run-fixtures": ROOT / "tests" / "run" / "fixtures",
}


def _texts(folder: Path) -> dict[str, list[str]]:
    return {p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8").splitlines()
            for p in sorted(folder.rglob("*.py"))}


def written_lines(before: dict[str, list[str]], after: dict[str, list[str]]) -> set[tuple[str, int]]:
    """(path, line) of every line of the fixed files that the fixer wrote or changed."""
    out = set()
    for path, new in after.items():
        matcher = difflib.SequenceMatcher(a=before.get(path, []), b=new, autojunk=False)
        for tag, _, _, j1, j2 in matcher.get_opcodes():
            if tag in ("replace", "insert"):
                out.update((path, line) for line in range(j1 + 1, j2 + 1))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("tree", sorted(TREES))
def test_no_line_the_fixer_wrote_is_an_error_of_the_gate(tree, tmp_path, run_cli):
    folder = tmp_path / tree
    shutil.copytree(TREES[tree], folder)
    before = _texts(folder)
    code, out, err = run_cli("fix", str(folder))
    assert code == 0, err
    written = written_lines(before, _texts(folder))
    assert written, f"opscan fix changed nothing in {tree}"
    code, out, err = run_cli("check", str(folder), "--no-trace", "--format", "json")
    doc = json.loads(out)
    on_written = [(f["path"], f["line"], f["rule"], f["name"]) for f in doc["findings"]
                  if f["severity"] == "error" and not f["guarded"] and (f["path"], f["line"]) in written]
    assert on_written == []
    # what the gate still blocks on is what the fixer reported as left, never its own lines
    assert doc["verdict"]["blockers"]["count"] == doc["summary"]["blockers"]


def test_a_script_that_requires_cuda_is_blocked_then_fixed(tmp_path, run_cli):
    script = tmp_path / "train.py"
    script.write_text('import torch\n'
                      'assert torch.cuda.is_available(), "Training currently requires at least one GPU."\n')
    code, out, err = run_cli("check", str(tmp_path), "--no-trace", "--format", "json")
    assert code == 1
    doc = json.loads(out)
    assert [(f["rule"], f["line"], f["severity"], f["fixable"]) for f in doc["findings"]] == [("OPS214", 2, "error",
                                                                                               True)]
    assert doc["verdict"]["kind"] == "blocked"
    code, out, err = run_cli("fix", str(tmp_path))
    assert code == 0 and "OPS214" in out
    assert "torch.accelerator.is_available()" in script.read_text()
    code, out, err = run_cli("check", str(tmp_path), "--no-trace")
    assert code == 0, out


@pytest.mark.parametrize("line", [
    "if not torch.cuda.is_available():\n    raise SystemExit('needs a GPU')",
    "if torch.cuda.device_count() == 0:\n    print('no GPU')\n    sys.exit(1)",
    "if torch.cuda.device_count() < 1:\n    exit()",
])
def test_refusing_to_start_without_cuda_blocks(line, tmp_path, run_cli):
    (tmp_path / "train.py").write_text(f"import sys\nimport torch\n{line}\n")
    code, out, err = run_cli("scan", str(tmp_path), "--format", "json")
    assert code == 1
    assert [f["rule"] for f in json.loads(out)["findings"]] == ["OPS214"]


def test_a_check_that_also_depends_on_an_option_is_not_a_refusal(tmp_path, run_cli):
    (tmp_path / "train.py").write_text("import torch\nassert torch.cuda.is_available() or args.cpu\n"
                                       "if torch.cuda.is_available():\n    raise ValueError('CPU only')\n")
    code, out, err = run_cli("scan", str(tmp_path), "--format", "json")
    assert code == 0
    assert {f["rule"] for f in json.loads(out)["findings"]} == {"OPS201"}


@pytest.mark.slow
def test_the_fixed_example_still_trains_under_opscan_run(tmp_path, run_cli, monkeypatch):
    np = pytest.importorskip("numpy")
    pytest.importorskip("torch")
    import re

    folder = tmp_path / "nanogpt"
    shutil.copytree(TREES["nanogpt"], folder)
    assert run_cli("fix", str(folder))[0] == 0
    text = (folder / "train.py").read_text()
    for pattern, repl in [(r"^max_iters = \d+$", "max_iters = 2"), (r"^eval_iters = \d+$", "eval_iters = 1"),
                          (r"^batch_size = \d+$", "batch_size = 2"), (r"^block_size = \d+$", "block_size = 8"),
                          (r"^model_args = dict\(.*\)$", "model_args = dict(n_layer=1, n_head=2, n_embd=16, "
                           "block_size=block_size, bias=False, vocab_size=64, dropout=0.1)")]:
        text, n = re.subn(pattern, repl, text, count=1, flags=re.MULTILINE)
        assert n == 1, pattern
    (folder / "train.py").write_text(text)
    data = folder / "data" / "shakespeare_char"
    data.mkdir(parents=True)
    for split in ("train", "val"):   # fake data of the right shape: uint16 token ids (docs/run.md)
        np.random.default_rng(0).integers(0, 64, 4000, dtype=np.uint16).tofile(data / f"{split}.bin")
    monkeypatch.chdir(folder)
    code, out, err = run_cli("run", "--format", "json", "--exit-zero", "--", "python", "train.py")
    assert code == 0, err
    doc = json.loads(out)
    (trace,) = doc["traces"]
    assert trace["complete"] and trace["device"] == "neuron", trace.get("stopped_at")
    assert {"forward", "backward", "optimizer"} <= {p for op in doc["ops"] for p in op["phases"]}
    assert any("ended after 1 optimizer step" in note for note in doc["notes"])


# --- issue 35: "N fixable with `opscan fix`" is the number of findings `opscan fix` rewrites ------

BF16 = ('import torch\n'
        'dtype = "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float16"\n')


def _fixable_everywhere(folder: Path, run_cli) -> int:
    """The fixable count of every surface that shows one, asserted equal; returned."""
    code, out, err = run_cli("check", str(folder), "--no-trace", "--format", "json")
    doc = json.loads(out)
    count = doc["summary"]["fixable"]
    assert count == sum(f["fixable"] for f in doc["findings"])
    code, out, err = run_cli("check", str(folder), "--no-trace", "--format", "markdown")
    assert (f"{count} fixable with `opscan fix`." in out) == bool(count)
    code, terminal, err = run_cli("check", str(folder), "--no-trace")
    code, concise, err = run_cli("scan", "--concise", str(folder))   # the pre-commit hook's view
    if count:
        assert f"{count} fixable with `opscan fix`" in terminal
        assert f"({count} fixable with `opscan fix`)" in concise.splitlines()[-1] or \
            f"; {count} fixable with `opscan fix`)" in concise.splitlines()[-1]
    else:
        assert "fixable" not in terminal.replace("[fixable]", "") and "fixable with" not in concise
    return count


@pytest.mark.slow
@pytest.mark.parametrize("tree", sorted(TREES) + ["bf16-choice"])
def test_the_fixable_count_is_what_fix_rewrites(tree, tmp_path, run_cli):
    folder = tmp_path / tree
    if tree == "bf16-choice":   # the guarded bfloat16 query the fixer rewrites, and leaves once rewritten
        folder.mkdir()
        (folder / "train.py").write_text(BF16)
    else:
        shutil.copytree(TREES[tree], folder)
    fixable = _fixable_everywhere(folder, run_cli)
    code, out, err = run_cli("fix", "--diff", str(folder))
    planned = int(re.search(r"would fix (\d+) of", out + err)[1])
    code, out, err = run_cli("fix", str(folder))
    done = int(re.search(r"fixed (\d+) of", out + err)[1])
    assert fixable == planned == done > 0
    assert _fixable_everywhere(folder, run_cli) == 0   # after the fix, nothing is left to it
    code, out, err = run_cli("fix", "--diff", str(folder))
    assert code == 0 and "would fix 0 of" in out + err
