"""Held-out 11's model-path fixes (issue 42): a model's constructor arguments as the project's
training script writes them (a model whose defaults leave a part unset, built by its training script
with literal arguments), and an image side the model's own layers fix (an Atari policy network).
Asserted: the arguments taken (unit, read statically) and what the report of
`opscan PATH` shows (slow: the contained child builds and traces the model)."""

from __future__ import annotations

import inspect
import json
import textwrap
from pathlib import Path

import pytest

from opscan.targets import script_calls

MODEL = """\
import torch
from torch import nn

class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.conv = nn.Conv2d(width, width, 3, padding=1)
    def forward(self, x):
        return x + self.conv(x)

class Net(nn.Module):
    def __init__(self, width=8, depth=1, backbone=None):
        super().__init__()
        self.intro = nn.Conv2d(3, width, 3, padding=1)
        if backbone == "blocks":
            self.backbone = nn.Sequential(*[Block(width) for _ in range(depth)])
        self.ending = nn.Conv2d(width, 3, 3, padding=1)
    def forward(self, x):
        return self.ending(self.backbone(self.intro(x))) + x
"""

TRAIN = """\
import torch
from models.net import Net as Model

class Trainer:
    def setup(self, width):
        self.model = Model(width=width, depth=3, backbone="blocks").to("cuda")
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-3)
    def step(self, x):
        loss = (self.model(x) - x).abs().mean()
        loss.backward()
        self.optimizer.step()

if __name__ == "__main__":
    trainer = Trainer()
    trainer.setup(16)
    trainer.step(torch.randn(2, 3, 32, 32, device="cuda"))
"""


def _project(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def _net(root: Path, home: str = "models.net"):
    namespace: dict = {"__name__": home}
    exec(compile((root / "models/net.py").read_text(), "net.py", "exec"), namespace)   # noqa: S102 - a test model
    return namespace["Net"]


def _params(fn):
    return [(n, p) for n, p in inspect.signature(fn.__init__).parameters.items() if n != "self"]


def test_the_literal_arguments_of_the_training_scripts_call_are_taken_and_the_rest_left(tmp_path):
    root = _project(tmp_path, {"models/__init__.py": "", "models/net.py": MODEL, "train.py": TRAIN})
    net = _net(root)
    kwargs, words = script_calls.written_arguments(net, _params(net), root)
    assert kwargs == {"depth": 3, "backbone": "blocks"}   # width=width is not a literal: left to opscan
    assert "train.py:6" in words


@pytest.mark.parametrize("files", [
    {"train.py": TRAIN.replace("from models.net import Net as Model", "from other import Net as Model")},
    {"train.py": TRAIN.replace("loss.backward()", "pass")},   # no backward: not a training script
    {"tests/train_net.py": TRAIN},                             # a test trains no team model
])
def test_no_arguments_from_a_call_of_another_class_or_a_file_that_does_not_train(tmp_path, files):
    root = _project(tmp_path, {"models/__init__.py": "", "models/net.py": MODEL, "other.py": "Net = None\n",
                               **files})
    net = _net(root)
    assert script_calls.written_arguments(net, _params(net), root) is None


@pytest.mark.slow
def test_a_model_whose_defaults_leave_a_part_unset_is_built_as_its_training_script_builds_it(
        tmp_path, repo_report, report_phases):
    script = TRAIN.replace('if __name__ == "__main__":', 'if __name__ == "__main__" and False:')
    root = _project(tmp_path, {"models/__init__.py": "", "models/net.py": MODEL, "train.py": script})
    report = repo_report(root)
    traced = [t for t in report["traces"] if t["target"] == "repo:models/net.py:Net"]
    assert traced and traced[0]["complete"] and traced[0]["mode"] == "train"
    assert {"forward", "backward", "optimizer"} <= report_phases(report)
    assert "arguments as the training script builds it (train.py:6)" in json.dumps(traced[0])   # said where



def _atari(pool: bool):
    from torch import nn

    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Sequential(nn.Conv2d(1, 8, 8, stride=4), nn.ReLU(), nn.Conv2d(8, 8, 4, stride=2),
                                      nn.ReLU(), nn.Conv2d(8, 8, 3), nn.ReLU(),
                                      *([nn.AdaptiveAvgPool2d(7)] if pool else []))
            self.fc = nn.Linear(8 * 7 * 7, 4)

        def forward(self, x):
            return self.fc(self.conv(x).flatten(1))

    return Policy()


@pytest.mark.parametrize("pool, side", [(False, 84), (True, 64)])
def test_an_image_side_the_layers_fix_is_found_and_a_model_the_default_fits_keeps_it(pool, side):
    pytest.importorskip("torch")
    from opscan.targets.repo_inputs import example_inputs

    args, _ = example_inputs(_atari(pool), None, None, None)
    assert tuple(args[0].shape[1:]) == (1, side, side)
