"""Honesty for timm models: a fake CPU trace equals a real one-step CPU training run, op for op.

timm needs torchvision, which does not import beside the CPU torch 2.13.0 build; CI runs these
tests in a second environment (torch 2.14.1 + torchvision 0.29.1 + timm): see .ci/run.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
timm = pytest.importorskip("timm", exc_type=ImportError)

from tests.support.trace_recorder import Recorder  # noqa: E402

from opscan.targets import trace_target  # noqa: E402

pytestmark = pytest.mark.timm
MODELS = ("resnet18", "vit_tiny_patch16_224")


def _real_step_ops(name: str) -> set[str]:
    torch.manual_seed(0)
    model = timm.create_model(name, pretrained=False)
    model.train()
    channels, height, width = model.pretrained_cfg.get("input_size", (3, 224, 224))
    pixels = torch.randn(2, channels, height, width)
    labels = torch.zeros(2, dtype=torch.long)
    optimizer = torch.optim.AdamW(model.parameters(), foreach=True)
    recorder = Recorder()
    with recorder:
        torch.nn.functional.cross_entropy(model(pixels), labels).backward()
        optimizer.step()
    return recorder.ops


@pytest.mark.parametrize("name", MODELS)
def test_timm_fake_trace_on_cpu_matches_a_real_cpu_step(name):
    trace = trace_target(f"timm:{name}", mode="train", device="cpu", batch=2)
    assert trace.complete, trace.stopped_at
    fake = {u.op for u in trace.ops}
    real = _real_step_ops(name)
    assert fake == real, (sorted(fake - real), sorted(real - fake))


@pytest.mark.parametrize("name", MODELS)
def test_timm_neuron_trace_completes_with_backward_and_optimizer(name):
    trace = trace_target(f"timm:{name}", mode="train", batch=2)
    assert trace.complete, trace.stopped_at
    phases = {p for u in trace.ops for p in u.phases}
    assert {"forward", "backward", "optimizer"} <= phases
