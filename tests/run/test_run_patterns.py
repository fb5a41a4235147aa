"""Patterns of real training scripts (docs/run.md, "Real scripts") that `opscan run` must follow:
each script is run for real by the benchmark recorder and by `opscan run --device cpu`, and the
report (ops, host ops, notes, how the run ended) is checked against the real run."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]


def _real_recorder():
    spec = importlib.util.spec_from_file_location("run_real_record",
                                                  ROOT / "benchmarks" / "accuracy" / "run_real_record.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _both(tmp_path, monkeypatch, text: str, argv=(), steps=1):
    """(the real run's ops, opscan's trace, opscan's notes) of the script `text` on the CPU."""
    from opscan.trace.run import run_script

    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(text))
    monkeypatch.chdir(tmp_path)
    real = _real_recorder().record(str(script), list(argv), steps=steps)
    trace, notes = run_script(str(script), list(argv), device="cpu", steps=steps, project_root=str(tmp_path))
    return real, trace, notes


def _ops(trace) -> set[str]:
    return {u.op for u in trace.ops} | {u.op for u in trace.host_ops}


SCALER = """
    import torch
    from torch import nn
    device = 'cuda' if torch.cuda.is_available() else 'cpu'
    model = nn.Linear(8, 4).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.cuda.amp.GradScaler(enabled=True)   # nanoGPT: float16 -> a GradScaler
    for _ in range(3):
        with torch.autocast('cuda', dtype=torch.float16):
            loss = model(torch.randn(2, 8, device=device)).sum()
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
"""


def test_a_cuda_grad_scaler_and_autocast_are_disabled_on_a_cpu_run_as_torch_disables_them(tmp_path, monkeypatch):
    real, trace, notes = _both(tmp_path, monkeypatch, SCALER)
    assert trace.complete and "ended after 1 optimizer step" in notes[0]
    assert "aten::_amp_update_scale_" not in real   # a CPU-only machine disables the CUDA scaler
    assert _ops(trace) == real


@pytest.mark.slow
def test_the_same_grad_scaler_runs_on_the_imitated_device(tmp_path, monkeypatch):
    from opscan.trace.run import run_script

    (tmp_path / "train.py").write_text(textwrap.dedent(SCALER))
    monkeypatch.chdir(tmp_path)
    trace, notes = run_script(str(tmp_path / "train.py"), device="neuron", project_root=str(tmp_path))
    assert "aten::_amp_update_scale_" in {u.op for u in trace.ops}
    assert any("GradScaler('cuda') runs on the imitated device" in n for n in notes)


def test_an_lstm_step_dispatches_no_gradient_clone_a_real_run_does_not(tmp_path, monkeypatch):
    real, trace, notes = _both(tmp_path, monkeypatch, """
        import torch
        from torch import nn
        model = nn.LSTM(4, 4, 1)
        out, _ = model(torch.randn(3, 2, 4))
        out.sum().backward()
    """)
    assert trace.complete and "ran to its end" in notes[0]
    assert "aten::new_empty_strided" not in _ops(trace)   # the b_ih/b_hh gradients are not cloned
    assert _ops(trace) == real


LOADER = """
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, Dataset

    class Digits(Dataset):          # a dataset that reads its tensors' values, as torchvision's do
        def __init__(self):
            self.data = torch.frombuffer(bytearray(range(200)) * 40, dtype=torch.uint8).view(-1, 8, 8)
        def __len__(self):
            return len(self.data)
        def __getitem__(self, i):
            img = self.data[i].numpy()                       # PIL.Image.fromarray(img.numpy()) in MNIST
            x = torch.from_numpy(img.astype('float32') / 255.0).unsqueeze(0)
            return (x - 0.5) / 0.5, int(img[0, 0]) % 10

    if __name__ == '__main__':
        loader = DataLoader(Digits(), batch_size=4, shuffle=True, num_workers=2, persistent_workers=True)
        device = 'cuda' if torch.cuda.is_available() else 'cpu'
        model = nn.Sequential(nn.Flatten(), nn.Linear(64, 10)).to(device)
        opt = torch.optim.Adam(model.parameters())
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
"""


@pytest.mark.slow
def test_a_loader_with_workers_loads_in_the_run_and_says_so(tmp_path, monkeypatch):
    real, trace, notes = _both(tmp_path, monkeypatch, LOADER)
    assert trace.complete, trace.stopped_at
    assert any("DataLoader(num_workers=2) loaded in the main process at train.py:17" in n for n in notes)
    ops = _ops(trace)
    assert {"aten::convolution", "aten::_adam"} & ops == set() and "aten::addmm" in ops
    # a worker's batch: collated into shared memory, rebuilt by the main process, as for real
    assert {"aten::stack.out", "aten::resize_", "aten::set_.source_Storage_storage_offset"} <= ops
    assert ops == real
    assert {"aten::sub.Tensor", "aten::div.Tensor"} <= real & ops   # the dataset's normalisation


def test_host_data_keeps_its_values_so_the_dataset_code_runs(tmp_path, monkeypatch):
    from opscan.trace.run import run_script

    (tmp_path / "train.py").write_text(textwrap.dedent(LOADER))
    monkeypatch.chdir(tmp_path)
    trace, notes = run_script(str(tmp_path / "train.py"), device="neuron", project_root=str(tmp_path))
    assert trace.complete, trace.stopped_at   # `.numpy()` of the dataset's tensor has its values
    assert any("DataLoader(num_workers=2) loaded in the main process" in n for n in notes)
    host = {u.op for u in trace.host_ops}
    assert {"aten::div.Tensor", "aten::stack.out"} <= host   # loading and collate on the host
    assert "aten::addmm" in {u.op for u in trace.ops} and "aten::addmm" not in host
    assert not any(s.source is not None and s.source.line in (12, 13) for s in trace.stand_ins)


def test_a_workers_batch_read_with_numpy_has_its_values(tmp_path, monkeypatch):
    """A loader worker's batch is handed over as a real tensor (NOTE [loader workers]); a metric that
    reads it with `.numpy()` (Lightning's validation hooks) gets its values, not a fake's empty array."""
    import json

    from opscan.trace.run import run_script

    (tmp_path / "train.py").write_text(textwrap.dedent("""
        import json
        import numpy as np
        import torch
        from torch.utils.data import DataLoader, Dataset
        factors = np.arange(32 * 3, dtype=np.float64).reshape(32, 3) % 5
        class Factors(Dataset):
            def __len__(self):
                return 32
            def __getitem__(self, i):
                return torch.tensor(factors[i], dtype=torch.float32)
        for workers in (0, 2):
            batch = next(iter(DataLoader(Factors(), batch_size=8, num_workers=workers)))
            read = batch.cpu().numpy()
            with open(f"read{workers}.json", "w") as f:
                json.dump({"bins": np.bincount(read[:, 0].astype(int)).tolist(), "first": read[1].tolist()}, f)
        model = torch.nn.Linear(3, 1).cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        model(batch.cuda()).sum().backward()
        optimizer.step()
    """))
    monkeypatch.chdir(tmp_path)
    trace, _ = run_script(str(tmp_path / "train.py"), device="neuron", project_root=str(tmp_path))
    assert trace.complete, trace.stopped_at
    expected = {"bins": [2, 2, 1, 2, 1], "first": [3.0, 4.0, 0.0]}   # rows 0-7 of `factors`
    assert json.loads((tmp_path / "read0.json").read_text()) == expected
    assert json.loads((tmp_path / "read2.json").read_text()) == expected


def test_a_synthetic_dataset_draws_real_random_images(tmp_path, monkeypatch):
    # torchvision's FakeData: torch.randn per item, then ToPILImage's `.mul(255).byte()...numpy()`
    real, trace, notes = _both(tmp_path, monkeypatch, """
        import numpy as np
        import torch
        g = torch.Generator().manual_seed(0)
        images = []
        for i in range(4):
            img = torch.randn(3, 8, 8, generator=g)
            arr = img.mul(255).byte().permute(1, 2, 0).numpy()
            images.append(torch.from_numpy(np.ascontiguousarray(arr)).float().mean())
        assert torch.stack(images).shape == (4,)
    """)
    assert trace.complete, trace.stopped_at
    assert "ran to its end" in notes[0]
    assert {"aten::randn.generator", "aten::mul.Tensor", "aten::_to_copy"} <= _ops(trace)
    assert _ops(trace) == real


def test_numpy_of_a_model_output_is_a_counted_stand_in(tmp_path, monkeypatch):
    # torchvision's save_image(fake.detach()) in a GAN loop: the output has no values
    real, trace, notes = _both(tmp_path, monkeypatch, """
        import torch
        from torch import nn
        net = nn.Linear(4, 6)
        out = net(torch.randn(2, 4)).detach()
        image = out.mul(255).clamp_(0, 255).to(torch.uint8).numpy()
        assert image.shape == (2, 6)
    """)
    assert trace.complete and "ran to its end" in notes[0]
    (numpy,) = [s for s in trace.stand_ins if s.kind == "numpy"]
    assert numpy.source.line == 6 and numpy.value == "zeros"
    assert _ops(trace) == real


SAVE_AND_LOAD = """
    import torch
    from torch import nn
    device = 'cuda' if torch.cuda.is_available() else 'cpu'
    model = nn.Sequential(nn.Embedding(10, 4), nn.Linear(4, 10)).to(device)
    model[1].weight = model[0].weight                   # tied weights
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randint(0, 10, (2, 3))
    loss = model(x.to(device)).sum()
    loss.backward()
    with open('model.pt', 'wb') as f:
        torch.save(model, f)                            # word_language_model: the best model so far
    torch.save({'step': torch.arange(3), 'opt': opt.state_dict()}, 'extra.pt')
    with open('model.pt', 'rb') as f:
        model = torch.load(f, weights_only=False)
    extra = torch.load('extra.pt')
    assert extra['step'].tolist() == [0, 1, 2]          # host data is saved with its values
    assert model[1].weight is model[0].weight and isinstance(model[0].weight, nn.Parameter)
    assert model[0].weight.device.type == torch.device(device).type
    with torch.no_grad():
        test_loss = model(x.to(device)).sum()           # the test pass after loading the best model
"""


def test_torch_save_of_fake_weights_writes_zeros_that_load_back_and_the_run_goes_on(tmp_path, monkeypatch):
    real, trace, notes = _both(tmp_path, monkeypatch, SAVE_AND_LOAD)
    assert trace.complete, trace.stopped_at
    assert "ran to its end" in notes[0]
    (save,) = [s for s in trace.stand_ins if s.kind == "save"]   # only the model had no values
    assert (save.op, save.value, save.source.line, save.count) == ("torch.save", "zeros", 12, 1)
    assert "aten::set_.source_Storage_storage_offset" in _ops(trace)   # torch.load's rebuild, as for real
    assert _ops(trace) == real


def test_weights_saved_from_the_imitated_device_load_back_onto_it(tmp_path, monkeypatch):
    from opscan.trace.run import run_script

    (tmp_path / "train.py").write_text(textwrap.dedent(SAVE_AND_LOAD))
    monkeypatch.chdir(tmp_path)
    trace, _ = run_script(str(tmp_path / "train.py"), device="neuron", project_root=str(tmp_path))
    assert trace.complete, trace.stopped_at   # the script's own asserts: tied, a parameter, on the device
    assert [s.source.line for s in trace.stand_ins if s.kind == "save"] == [12]


def test_worker_init_fn_runs_in_each_imitated_worker_with_its_worker_info(tmp_path, monkeypatch):
    # the script asserts it itself: worker_init_fn(i) sees WorkerInfo(id=i), each item is loaded in a
    # worker (get_worker_info() inside __getitem__), batch k by worker k % 3, the main random state kept
    real, trace, notes = _both(tmp_path, monkeypatch, """
        import random
        import numpy as np
        import torch
        from torch.utils.data import DataLoader, Dataset, get_worker_info

        started = []
        class Items(Dataset):
            def __len__(self):
                return 12
            def __getitem__(self, i):
                return torch.tensor([get_worker_info().id, np.random.randint(1000)])

        def init(worker_id):
            assert get_worker_info().id == worker_id and get_worker_info().num_workers == 3
            started.append(worker_id)
            np.random.seed(worker_id)

        random.seed(0)
        loader = DataLoader(Items(), batch_size=2, num_workers=3, worker_init_fn=init)
        ids = [batch[:, 0].tolist() for batch in loader]
        assert ids == [[0, 0], [1, 1], [2, 2], [0, 0], [1, 1], [2, 2]], ids
        assert random.random() == 0.8444218515250481   # the script's own random state is its own
        print(sorted(started))
    """)
    assert trace.complete, trace.stopped_at
    assert "ran to its end" in notes[0]
    assert any("DataLoader(num_workers=3) loaded in the main process" in n for n in notes)
    assert _ops(trace) == real


HF_SAVE_PRETRAINED = """
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
    config = GPT2Config(vocab_size=50, n_positions=16, n_embd=16, n_layer=1, n_head=2)
    model = GPT2LMHeadModel(config)                    # tied input and output embeddings
    n_params = sum({p.data_ptr(): p.numel() for p in model.parameters()}.values())
    assert n_params == sum(p.numel() for p in model.parameters()), n_params
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, 50, (2, 8))
    loss = model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=ids).loss
    loss.backward()
    opt.step()
    model.save_pretrained('tiny')                      # safetensors, tied weights told apart by address
    again = GPT2LMHeadModel.from_pretrained('tiny')
    assert again.lm_head.weight.shape == (50, 16)
"""


@pytest.mark.slow
def test_a_transformers_model_trains_with_the_real_runs_mask_and_saves_its_fake_weights(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    pytest.importorskip("safetensors")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    real, trace, _ = _both(tmp_path, monkeypatch, HF_SAVE_PRETRAINED)
    assert trace.complete, trace.stopped_at
    # no padding in the mask: SDPA's is_causal as in a real run, not the traced path's explicit mask
    assert {"aten::new_ones", "aten::bitwise_and.Tensor"} & _ops(trace) == set()
    (save,) = [s for s in trace.stand_ins if s.kind == "save"]
    assert save.op == "safetensors.save" and save.count == 1
    assert _ops(trace) == real


def test_cuda_rng_states_are_answered_also_through_torch_cuda_random(tmp_path, monkeypatch):
    from opscan.trace.run import run_script

    (tmp_path / "train.py").write_text(textwrap.dedent("""
        import torch
        model = torch.nn.Linear(4, 2).cuda()
        state = torch.cuda.random.get_rng_state()       # Trainer's checkpoint saves the device RNG state
        assert state.dtype == torch.uint8
        torch.cuda.set_rng_state(state)
        torch.neuron.set_device(torch.device('neuron:0'))   # transformers' TrainingArguments on Trainium
    """))
    monkeypatch.chdir(tmp_path)
    trace, notes = run_script(str(tmp_path / "train.py"), device="neuron", project_root=str(tmp_path))
    assert trace.complete, trace.stopped_at
    assert any("torch.cuda.get_rng_state() answered as on the imitated device at train.py:4" in n for n in notes)
    assert any("torch.cuda.set_rng_state() answered as on the imitated device at train.py:6" in n for n in notes)
