"""Pretrained weights a model's constructor asks for, on the model path (NOTE [pretrained weights on
the model path] in opscan/targets/absent_weights.py): the model is built with its own
initialisation and the build says so; nothing is downloaded."""

from __future__ import annotations

import textwrap

import pytest

pytest.importorskip("torch")

MODEL = """\
import torch
from torch import nn


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        return self.fc(self.conv(x).mean((2, 3)))


def backbone(pretrained=False):
    model = Backbone()
    if pretrained:   # as torchvision's builders do
        model.load_state_dict(torch.hub.load_state_dict_from_url("https://example.org/w/backbone-1a2b.pth"))
    return model


class Multimodal(nn.Module):
    def __init__(self):
        super().__init__()
        self.image_model = backbone(pretrained=True)
        self.image_model.fc = nn.Linear(8, 4)
        self.head = nn.Linear(4, 3)

    def forward(self, image):
        return self.head(self.image_model(image))
"""


def test_a_pretrained_backbone_in_the_constructor_keeps_its_own_initialisation(tmp_path):
    from opscan.targets.repository import build_repo

    (tmp_path / "model.py").write_text(textwrap.dedent(MODEL), encoding="utf-8")
    built = build_repo("repo:model.py:Multimodal", batch=None, seq_len=None, project_root=str(tmp_path))
    assert type(built.model).__name__ == "Multimodal" and built.args[0].shape[1] == 3
    assert "backbone-1a2b.pth" in built.note and "own initialisation" in built.note


def test_a_file_download_is_still_refused(tmp_path):
    from opscan.errors import TargetError
    from opscan.targets.repository import build_repo

    (tmp_path / "model.py").write_text(textwrap.dedent("""\
        import torch
        from torch import nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                torch.hub.download_url_to_file("https://example.org/vocab.txt", "vocab.txt")
                self.fc = nn.Linear(4, 2)
            def forward(self, x):
                return self.fc(x)
        """), encoding="utf-8")
    with pytest.raises(TargetError, match="does not download"):
        build_repo("repo:model.py:Net", batch=None, seq_len=None, project_root=str(tmp_path))
