"""The model a training command built before it stopped (NOTE [the model the command built] in
opscan/trace/run/built_models.py): noted with its arguments as data, tried first by the model path."""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

from opscan.targets.built_arguments import AttrDict, decode  # noqa: E402
from opscan.trace.run.built_models import BuiltModels  # noqa: E402
from tests.support.corpus import write_sources  # noqa: E402

MODEL = """\
    import torch
    from torch import nn


    class Encoder(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.proj = nn.Linear(dim, dim)

        def forward(self, x):
            return torch.relu(self.proj(x))


    class Base(nn.Module):
        def __init__(self, opts, **kwargs):
            super().__init__()


    class Net(Base):
        def __init__(self, opts, vocab, act=None, **extra):
            super().__init__(opts, width=opts.dim)
            self.embed = nn.Embedding(len(vocab), opts.dim)
            self.encoder = Encoder(opts.dim)
            self.head = nn.Linear(opts.dim, opts.classes)

        def forward(self, tokens):
            return self.head(self.encoder(self.embed(tokens)).mean(1))
    """


def _module(tmp_path):
    (tmp_path / "netmodel.py").write_text(textwrap.dedent(MODEL), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("netmodel_built", tmp_path / "netmodel.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_outermost_model_is_noted_with_its_arguments_as_data(tmp_path):
    module = _module(tmp_path)
    notes = BuiltModels(str(tmp_path))
    opts = argparse.Namespace(dim=8, classes=3, log=print, device=torch.device("cpu"))
    with notes.watching():
        module.Net(opts, {"a": 0, "b": 1}, act=torch.nn.ReLU(), depth=(2, 2), cfg=AttrDict(lr=0.1))
        torch.nn.Linear(4, 4)   # a library's module: never noted
    rel, name, text = notes.model()
    assert (rel, name) == ("netmodel.py", "Net")   # not Encoder (a submodule of it), not Base (its own class)
    given = decode(text)
    assert set(given) == {"opts", "vocab", "depth", "cfg"}   # `act` (a module) is not data: left out
    assert vars(given["opts"]) == {"dim": 8, "classes": 3, "device": torch.device("cpu")}   # print left out
    assert given["vocab"] == {"a": 0, "b": 1} and given["depth"] == (2, 2) and given["cfg"].lr == 0.1
    assert json.loads(text)   # data only: plain JSON text crosses back
    assert "__init__" in vars(torch.nn.Module) and torch.nn.Linear(2, 2)   # put back as it was


def test_a_wrapper_given_the_model_yields_the_model_inside_it(tmp_path):
    """NOTE [a wrapper given the model]: Lightning's `Experiment(model, params)` holds the model."""
    module = _module(tmp_path)
    (tmp_path / "wrapper.py").write_text(
        "from torch import nn\n\nclass Experiment(nn.Module):\n    def __init__(self, model, params):\n"
        "        super().__init__()\n        self.model = model\n        self.params = params\n", encoding="utf-8")
    spec = importlib.util.spec_from_file_location("wrapper_built", tmp_path / "wrapper.py")
    wrapper = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(wrapper)
    notes = BuiltModels(str(tmp_path))
    with notes.watching():
        net = module.Net(argparse.Namespace(dim=8, classes=3), {"a": 0})
        wrapper.Experiment(net, {"lr": 0.1})
    rel, name, text = notes.model()
    assert (rel, name) == ("netmodel.py", "Net") and set(decode(text)) == {"opts", "vocab", "act"}


def test_nothing_is_noted_outside_the_project_or_when_nothing_was_built(tmp_path):
    module = _module(tmp_path)
    assert BuiltModels(str(tmp_path / "elsewhere")).model() == ()
    notes = BuiltModels(str(tmp_path / "elsewhere"))
    with notes.watching():
        module.Net(argparse.Namespace(dim=4, classes=2), {"a": 0})
    assert notes.model() == ()


@pytest.mark.slow
def test_the_model_path_builds_what_the_stopped_command_built_with_its_arguments(tmp_path):
    root = write_sources(tmp_path / "repo", {
        "README.md": "# toy\n\n```\npython train.py --dim 16 --classes 5\n```\n",
        "model.py": MODEL,
        "train.py": """\
            import argparse
            import torch
            from model import Net

            parser = argparse.ArgumentParser()
            parser.add_argument("--dim", type=int, default=8)
            parser.add_argument("--classes", type=int, default=3)
            opts = parser.parse_args()
            vocab = {w: i for i, w in enumerate("abcdefghij")}
            model = Net(opts, vocab).cuda()
            optimizer = torch.optim.Adam(model.parameters())
            raise SystemExit("the data is not here")
            """})
    done = subprocess.run([sys.executable, "-m", "opscan", ".", "--format", "json"], capture_output=True,
                          text=True, timeout=900, cwd=root)
    report = json.loads(done.stdout)
    traced = [t for t in report["traces"] if t["complete"]]
    assert [t["target"] for t in traced] == ["repo:model.py:Net"], done.stderr
    assert "read from the run of its training command" in traced[0]["retried"]
    assert any("the model `python train.py --dim 16 --classes 5` built before it stopped" in n
               for n in report["notes"])
    assert traced[0]["shrink"]["hidden"] == 16   # the width the command gave (--dim 16), not a guess
    assert report["verdict"]["step"]["kind"] == "stand-in"   # the model's, under opscan's stand-in step
