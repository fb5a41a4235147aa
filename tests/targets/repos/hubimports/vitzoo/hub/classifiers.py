import torch.nn as nn

from .backbones import tinyvit_vits8


def tinyvit_vits8_lc(*, pretrained=True, **kwargs):
    return nn.Sequential(tinyvit_vits8(pretrained=pretrained), nn.Linear(32, 10))
