"""Experiment trackers made inert and tokenizers stood in for in a run of the project's training
command (NOTE [inert trackers] in opscan/trace/run/trackers.py, NOTE [stand-in tokenizers] in
opscan/trace/run/tokenizer_stand_ins.py). The libraries are small packages written here with the
parts of their interface research code calls (the real ones are not installed in the test
environment); each fails the way the real one fails in a contained child: a login with no API key,
a download with no network, an event file written."""

from __future__ import annotations

import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

from opscan.containment.policy import Policy, child_environment  # noqa: E402
from opscan.trace.run.stand_in_hooks import installed  # noqa: E402
from opscan.trace.run.stand_ins import StandIns  # noqa: E402
from opscan.trace.sources import SourceFinder  # noqa: E402

LIBRARIES = {
    "wandb/__init__.py": """\
        import os
        class UsageError(Exception):
            pass
        def login(key=None, **kwargs):
            raise UsageError("No API key configured")
        def init(project=None, mode=None, **kwargs):
            if (mode or os.environ.get("WANDB_MODE")) != "disabled":
                login()
            global run
            run = Run()
            return run
        class Run:
            def log(self, data, step=None):
                pass
            def finish(self):
                pass
        def log(data, step=None):
            if run is None:
                raise UsageError("call wandb.init() first")
        run = None
        """,
    "tensorboardX/__init__.py": """\
        import os
        class SummaryWriter:
            def __init__(self, logdir="runs"):
                os.makedirs(logdir, exist_ok=True)
                self.file = open(os.path.join(logdir, "events.out"), "a")
            def add_scalar(self, tag, value, step=None):
                self.file.write(f"{tag} {float(value)} {step}\\n")
            def close(self):
                self.file.close()
        """,
    "tiktoken/__init__.py": """\
        class ConnectionError(OSError):
            pass
        def get_encoding(name):
            raise ConnectionError("Max retries exceeded with url: /gpt-2/encodings/main/vocab.bpe")
        def encoding_for_model(model):
            return get_encoding("cl100k_base")
        """,
    "tiktoken/model.py": """\
        def encoding_name_for_model(model):
            if model.startswith("gpt-4"):
                return "cl100k_base"
            raise KeyError(model)
        """,
}


@pytest.fixture()
def libraries(tmp_path, monkeypatch):
    """The libraries above importable from a folder outside the project, none imported yet."""
    folder = tmp_path / "site"
    for name, text in LIBRARIES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(textwrap.dedent(text), encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    for name in ("wandb", "tensorboardX", "tiktoken", "tiktoken.model"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    yield folder
    for name in ("wandb", "tensorboardX", "tiktoken", "tiktoken.model"):
        sys.modules.pop(name, None)


@pytest.fixture()
def project(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture()
def stand_ins(project, libraries):
    made = StandIns(str(project), SourceFinder(str(project)))
    with installed(made):
        yield made


def _subjects(stand_ins) -> list[tuple[str, str]]:
    return [(r.kind, r.subject) for r in stand_ins.replaced]


def test_wandb_logs_nothing_and_asks_for_no_key(stand_ins):
    import wandb

    assert wandb.login() is False
    run = wandb.init(project="sassha")
    run.log({"loss": 1.0})
    wandb.log({"loss": 1.0})
    assert _subjects(stand_ins) == [("tracker", "wandb.login"), ("tracker", "wandb.init")]


def test_the_contained_child_runs_wandb_in_its_disabled_mode(tmp_path):
    env = child_environment({"PATH": "/usr/bin", "WANDB_API_KEY": "abc", "WANDB_MODE": "online"}, Policy(),
                            str(tmp_path))
    assert env["WANDB_MODE"] == "disabled" and "WANDB_API_KEY" not in env


def test_a_summary_writer_writes_nothing_and_never_asks_a_value(stand_ins, project, monkeypatch):
    from tensorboardX import SummaryWriter

    monkeypatch.chdir(project)
    writer = SummaryWriter("log/run1")
    writer.add_scalar("loss", torch.tensor(0.5, device="meta"), 3)   # a value never asked for
    writer.close()
    assert not (project / "log").exists()
    assert _subjects(stand_ins) == [("tracker", "tensorboardX.SummaryWriter")]


def test_tiktoken_encodings_are_stood_in_for_with_their_own_size(stand_ins):
    import tiktoken

    gpt2 = tiktoken.get_encoding("gpt2")
    assert gpt2.n_vocab == 50257 and gpt2.decode(gpt2.encode("héllo")) == "héllo"
    assert max(gpt2.encode("any text at all")) < 256
    assert tiktoken.encoding_for_model("gpt-4").n_vocab == 100277
    unknown = tiktoken.get_encoding("my_bpe")
    assert unknown.n_vocab == 50257
    assert [s for _, s in _subjects(stand_ins)] == ["tiktoken.get_encoding('gpt2')",
                                                    "tiktoken.get_encoding('cl100k_base')",
                                                    "tiktoken.get_encoding('my_bpe')"]
    assert "assumed" in stand_ins.replaced[2].detail and "assumed" not in stand_ins.replaced[0].detail


def test_a_hub_tokenizer_with_no_files_here_is_stood_in_for(stand_ins, project, monkeypatch):
    transformers = pytest.importorskip("transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    tokenizer = transformers.AutoTokenizer.from_pretrained("nobody/not-a-tokenizer-here")
    batch = tokenizer(["a b", "longer text"], padding=True, return_tensors="pt")
    assert batch["input_ids"].shape == batch["attention_mask"].shape == (2, 11)
    assert batch.input_ids.dtype == torch.long and int(batch["attention_mask"][0].sum()) == 3
    assert len(tokenizer) == 50257 and stand_ins.replaced[0].kind == "tokenizer"
    assert "assumed" in stand_ins.replaced[0].detail


def test_the_trackers_and_tokenizers_are_put_back_after_the_run(project, libraries):
    import tiktoken
    import wandb

    before = (wandb.init, wandb.login, tiktoken.get_encoding)
    with installed(StandIns(str(project), SourceFinder(str(project)))):
        assert wandb.init is not before[0] and tiktoken.get_encoding is not before[2]
    assert (wandb.init, wandb.login, tiktoken.get_encoding) == before


@pytest.mark.slow
def test_a_script_that_logs_to_wandb_and_tensorboard_and_tokenizes_with_tiktoken_runs_its_step(project, libraries):
    """A small language model's training script as research code writes it: the vocabulary size
    from tiktoken's GPT-2 encoding, wandb and TensorBoard logging around the step."""
    from opscan.trace.run import run_script

    script = project / "train.py"
    script.write_text(textwrap.dedent("""\
        import tiktoken
        import torch
        import torch.nn.functional as F
        import wandb
        from tensorboardX import SummaryWriter
        enc = tiktoken.get_encoding("gpt2")
        wandb.init(project="small-llm", config={"lr": 1e-3})
        writer = SummaryWriter("runs/exp")
        tokens = torch.tensor(enc.encode("the quick brown fox jumps over the lazy dog " * 8))
        model = torch.nn.Sequential(torch.nn.Embedding(enc.n_vocab, 16), torch.nn.Linear(16, enc.n_vocab))
        model = model.to("cuda")
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        for step in range(10):
            x = tokens[:32].unsqueeze(0).to("cuda")
            loss = F.cross_entropy(model(x)[:, :-1].reshape(-1, enc.n_vocab), x[:, 1:].reshape(-1))
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            wandb.log({"loss": loss.item()})
            writer.add_scalar("loss", loss.item(), step)
        """), encoding="utf-8")
    trace, notes = run_script(str(script), project_root=str(project), cwd=str(project), stand_ins=True)
    assert trace.complete and trace.steps == 1, trace.stopped_at
    assert {"aten::embedding", "aten::nll_loss_forward"} <= {u.op for u in trace.ops}
    assert [(r.kind, r.path, r.line) for r in trace.replaced] == [("tokenizer", "train.py", 6),
                                                                  ("tracker", "train.py", 7),
                                                                  ("tracker", "train.py", 8)]
    assert not (project / "runs").exists()


@pytest.mark.slow
def test_a_datasets_random_augmentation_draws_real_values_on_the_stand_in_data(project):
    """NOTE [the data side on real values]: an augmentation in `__getitem__` draws its factor and
    checks it (as torchvision's ColorJitter does); under fakes the draw is a stand-in value that fails
    the check, on the data side it is a real draw, and the step is traced."""
    from opscan.trace.run import run_script

    script = project / "train.py"
    script.write_text(textwrap.dedent("""\
        import numpy as np
        import torch
        from torch.utils.data import DataLoader, Dataset

        class Jittered(Dataset):
            def __init__(self):
                self.images = np.load("data/images.npy")   # absent: stood in for
            def __len__(self):
                return 64
            def __getitem__(self, i):
                image = torch.rand(3, 8, 8)
                hue = float(torch.empty(1).uniform_(-0.25, 0.25))
                if not -0.5 <= hue <= 0.5:
                    raise ValueError(f"hue_factor ({hue}) is not in [-0.5, 0.5]")
                if hue > 0:
                    image = image.flip(-1)
                return image, i % 10

        model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(192, 10)).cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in DataLoader(Jittered(), batch_size=8, shuffle=True, num_workers=2):
            loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        """), encoding="utf-8")
    trace, notes = run_script(str(script), project_root=str(project), cwd=str(project), stand_ins=True)
    assert trace.complete and trace.steps == 1, trace.stopped_at
    assert {"aten::addmm", "aten::nll_loss_forward"} <= {u.op for u in trace.ops}


TRANSFORMS = {
    "torchvision/__init__.py": "",
    "torchvision/transforms/__init__.py": "from .transforms import *\n",
    "torchvision/transforms/transforms.py": """\
        import torch
        __all__ = ["Compose", "ColorJitter"]
        class Compose:
            def __init__(self, transforms):
                self.transforms = transforms
            def __call__(self, image):
                for t in self.transforms:
                    image = t(image)
                return image
        class ColorJitter(torch.nn.Module):
            def forward(self, image):
                hue = float(torch.empty(1).uniform_(-0.25, 0.25))
                if not -0.5 <= hue <= 0.5:
                    raise ValueError(f"hue_factor ({hue}) is not in [-0.5, 0.5]")
                return image.flip(-1) if hue > 0 else image
        """,
}


@pytest.mark.slow
def test_an_augmentation_applied_in_the_training_loop_draws_real_values(project, tmp_path, monkeypatch):
    """SimCLR's way: each image of the batch augmented twice in the loop (torchvision's transforms
    written here as a package with ColorJitter's draw and check)."""
    from opscan.trace.run import run_script

    site = tmp_path / "vision_site"
    for name, text in TRANSFORMS.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(textwrap.dedent(text), encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    for name in [n for n in sys.modules if n == "torchvision" or n.startswith("torchvision.")]:
        monkeypatch.delitem(sys.modules, name)
    script = project / "train.py"
    script.write_text(textwrap.dedent("""\
        import numpy as np
        import torch
        import torchvision.transforms as transforms
        from torch.utils.data import DataLoader, TensorDataset

        augment = transforms.Compose([transforms.ColorJitter()])
        images = torch.from_numpy(np.load("data/images.npy").astype("float32")[:192].reshape(-1, 3, 8, 8))
        loader = DataLoader(TensorDataset(images, torch.zeros(len(images), dtype=torch.long)), batch_size=4)
        model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(192, 16)).cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for b, _ in loader:
            x_1 = torch.zeros_like(b).cuda()
            for i, x in enumerate(b):
                x_1[i] = augment(x)
            loss = model(x_1).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        """), encoding="utf-8")
    try:
        trace, notes = run_script(str(script), project_root=str(project), cwd=str(project), stand_ins=True)
    finally:
        for name in [n for n in sys.modules if n == "torchvision" or n.startswith("torchvision.")]:
            del sys.modules[name]
    assert trace.complete and trace.steps == 1, trace.stopped_at
    assert "aten::addmm" in {u.op for u in trace.ops}


def test_a_tokenizer_class_of_its_own_with_no_files_here_is_stood_in_for(stand_ins, project, monkeypatch):
    # NOTE [a tokenizer class of its own]: BertTokenizer named by the script, not AutoTokenizer
    transformers = pytest.importorskip("transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import os

    class WordPieceTokenizer(transformers.PreTrainedTokenizer):   # BertTokenizer of transformers 4
        vocab_files_names = {"vocab_file": "vocab.txt"}

        def __init__(self, vocab_file=None, **kwargs):
            if not os.path.isfile(vocab_file):   # TypeError with no vocabulary file found
                raise ValueError(f"Can't find a vocabulary file at path '{vocab_file}'")
            super().__init__(**kwargs)

    tokenizer = WordPieceTokenizer.from_pretrained("nobody/bert-not-here")
    ids = tokenizer.convert_tokens_to_ids(tokenizer.tokenize("offenses were made"))
    assert len(ids) == 3 and all(isinstance(i, int) and i < len(tokenizer) for i in ids)
    assert _subjects(stand_ins) == [("tokenizer", "WordPieceTokenizer.from_pretrained('nobody/bert-not-here')")]
