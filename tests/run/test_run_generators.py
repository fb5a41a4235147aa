"""`torch.Generator` of the imitated device in a run (NOTE [generators of the imitated device] in
opscan/trace/run/generators.py): a second-order optimizer's Hutchinson probes drawn with a generator
made on the parameters' device."""

from __future__ import annotations

import textwrap

import pytest

torch = pytest.importorskip("torch")

from opscan.trace.run.generators import imitated  # noqa: E402


def test_a_generator_of_the_device_is_a_cpu_one_that_says_its_device_and_others_are_torchs():
    notes: list[str] = []
    with imitated("neuron", notes.append):
        made = torch.Generator("cuda").manual_seed(3)
        plain = torch.Generator()
        assert made.device == torch.device("neuron", 0) and plain.device == torch.device("cpu")
        assert isinstance(made, torch.Generator) and isinstance(torch.default_generator, torch.Generator)
        assert torch.randint(0, 10, (4,), generator=made).tolist() == \
            torch.randint(0, 10, (4,), generator=torch.Generator().manual_seed(3)).tolist()
    assert torch.Generator is torch._C.Generator and len(notes) == 1


@pytest.mark.slow
def test_an_optimizer_drawing_hutchinson_probes_on_the_device_takes_its_step(tmp_path):
    from opscan.trace.run import run_script

    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""\
        import torch

        class Hutchinson(torch.optim.SGD):
            def __init__(self, params, lr, seed=0):
                super().__init__(params, lr=lr)
                self.generator = torch.Generator().manual_seed(seed)

            @torch.no_grad()
            def step(self):
                params = [p for g in self.param_groups for p in g["params"] if p.grad is not None]
                if self.generator.device != params[0].device:
                    self.generator = torch.Generator(params[0].device).manual_seed(0)
                for p in params:
                    z = torch.randint(0, 2, p.shape, generator=self.generator, device=p.device, dtype=p.dtype) * 2 - 1
                    p.add_(p.grad * z, alpha=-self.param_groups[0]["lr"])

        model = torch.nn.Linear(8, 2).cuda()
        optimizer = Hutchinson(model.parameters(), lr=0.1)
        for _ in range(3):
            model(torch.randn(4, 8).cuda()).pow(2).mean().backward()
            optimizer.step()
            optimizer.zero_grad()
        """), encoding="utf-8")
    trace, notes = run_script(str(script), project_root=str(tmp_path), cwd=str(tmp_path), stand_ins=True)
    assert trace.complete and trace.steps == 1, trace.stopped_at
    assert any(u.op.startswith("aten::randint") for u in trace.ops)
    assert any("torch.Generator('neuron')" in n and "train.py:12" in n for n in notes)


@pytest.mark.slow
def test_a_model_wrapped_in_data_parallel_for_several_gpus_takes_its_step(tmp_path):
    """NOTE [DataParallel of one device] in opscan/trace/run/script.py."""
    from opscan.trace.run import run_script

    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""\
        import torch
        model = torch.nn.DataParallel(torch.nn.Linear(8, 2)).cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        loss = model(torch.randn(4, 8).cuda()).pow(2).mean()
        loss.backward()
        optimizer.step()
        torch.save(model.module.state_dict(), "model.pt")
        """), encoding="utf-8")
    trace, notes = run_script(str(script), project_root=str(tmp_path), cwd=str(tmp_path), stand_ins=True)
    assert trace.complete and trace.steps == 1, trace.stopped_at
    assert "aten::addmm" in {u.op for u in trace.ops}
