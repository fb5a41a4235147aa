"""Known transformers bugs (opscan/targets/hf/upstream.py): each reproduction raises without opscan."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from opscan.targets.hf import upstream

# Runs every reproduction in one fresh interpreter (imports once), each from the CPU default device.
RUN_ALL = '''
import json, sys, torch
out = {}
for key, code in json.loads(sys.argv[1]).items():
    torch.set_default_device(None)
    try:
        exec(compile(code, key, "exec"), {})
        out[key] = ""
    except Exception as exc:
        out[key] = type(exc).__name__
print(json.dumps(out))
'''


def test_entries_are_unique_one_line_and_name_their_stage():
    keys = [(b.model_type, b.stage) for b in upstream.BUGS]
    assert len(keys) == len(set(keys))
    for bug in upstream.BUGS:
        assert bug.stage in ("config", "build", "step"), bug
        assert "\n" not in bug.repro and '"' not in bug.repro, bug.model_type  # fits python -c "..."
        assert "opscan" not in bug.repro, bug.model_type                        # reproduces without opscan


@pytest.mark.slow
@pytest.mark.skipif(upstream.installed() != upstream.CHECKED,
                    reason=f"the entries were checked against transformers {upstream.CHECKED}")
def test_every_reproduction_still_raises_its_error(tmp_path):
    # fails once transformers fixes a bug: then its entry goes (and the zoo row should trace)
    repros = {f"{b.model_type}/{b.stage}": b.repro for b in upstream.BUGS}
    proc = subprocess.run([sys.executable, "-c", RUN_ALL, json.dumps(repros)], capture_output=True,
                          text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    raised = json.loads(proc.stdout.strip().splitlines()[-1])
    assert raised == {f"{b.model_type}/{b.stage}": b.error for b in upstream.BUGS}
