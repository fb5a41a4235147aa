"""The run mode imitates what TorchNeuron registers for its device (NOTE [imitated registrations] in
opscan/trace/run/neuron_package.py): each imitated registration is checked against its fact in the
facts file (../shared/neuron-facts, relative to the repository root), and a script that asks
PyTorch for the `neuron` device's process-group backend runs under `opscan run`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[2]
FACTS = ROOT.parent / "shared" / "neuron-facts" / "torchneuron-devsnapshot-2026-04-21.yaml"


@pytest.fixture(scope="module")
def facts() -> dict:
    if not FACTS.is_file():
        pytest.skip(f"the facts file is not beside this checkout ({FACTS.name})")
    doc = yaml.safe_load(FACTS.read_text(encoding="utf-8"))
    found = {}
    stack = [doc]
    while stack:   # the two facts sit in a section of the snapshot file; find them by key
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("device_registration", "distributed") and isinstance(value, dict) and "value" in value:
                    found[key] = value["value"]
                stack.append(value)
    return found


def test_every_imitated_registration_names_a_fact(facts):
    from opscan.trace.run.neuron_package import REGISTRATIONS

    assert set(REGISTRATIONS) <= set(facts)


def test_the_neuron_process_group_backend_is_registered_for_the_neuron_device(facts):
    import torch.distributed as dist

    from opscan.trace.device import ensure_neuron
    from opscan.trace.run.neuron_package import register_distributed

    fact = facts["distributed"]
    assert "register_backend('neuron'" in fact and "devices=['neuron']" in fact
    ensure_neuron()
    assert register_distributed()
    assert dist.get_default_backend_for_device("neuron") == "neuron"
    assert dist.get_default_backend_for_device(torch.device("neuron")) == "neuron"
    assert "neuron" in dist.Backend.backend_list and dist.Backend.NEURON == "neuron"
    assert dist.get_default_backend_for_device("cpu") == "gloo"   # other devices keep theirs


def test_the_device_registration(facts):
    from torch import nn

    from opscan.trace.device import ensure_neuron

    fact = facts["device_registration"]
    assert "rename_privateuse1_backend('neuron')" in fact and "_register_device_module('neuron'" in fact
    assert "tensor.neuron()" in fact and "module.neuron()" in fact
    ensure_neuron()
    assert torch._C._get_privateuse1_backend_name() == "neuron"
    assert torch.get_device_module("neuron") is torch.neuron
    assert callable(getattr(torch.Tensor, "neuron", None)) and callable(getattr(nn.Module, "neuron", None))


SCRIPT = '''\
import torch
import torch.distributed as dist
from torch import nn

DEVICE = torch.accelerator.current_accelerator(check_available=True) or torch.device("cpu")
backend = torch.distributed.get_default_backend_for_device(DEVICE)
assert backend == "neuron", f"backend {backend}"   # as on a Trainium machine (nothing written outside the scratch)
dist.init_process_group(backend=backend)
model = nn.Linear(4, 2).to(DEVICE)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    model(torch.randn(2, 4, device=DEVICE)).sum().backward()
    opt.step()
    opt.zero_grad()
'''


@pytest.mark.slow
def test_a_script_asking_for_the_backend_of_its_device_runs(tmp_path, monkeypatch):
    from opscan.cli import main

    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n')
    (tmp_path / "train.py").write_text(SCRIPT)
    monkeypatch.chdir(tmp_path)
    code = main(["run", "--format", "json", "-o", "out.json", "--exit-zero", "--", "python", "train.py"])
    assert code == 0
    doc = json.loads((tmp_path / "out.json").read_text())
    (trace,) = doc["traces"]
    assert trace["complete"] and trace["device"] == "neuron", trace.get("stopped_at")
    assert {"forward", "backward", "optimizer"} <= {p for op in doc["ops"] for p in op["phases"]}
