"""Model functions registered by a decorator (timm-style): each builds the class through a helper."""
import torch.nn as nn

_registry = {}


def register_model(fn):
    _registry[fn.__name__] = fn
    return fn


class MixerNet(nn.Module):
    def __init__(self, dim=32, depth=8, num_classes=10, in_features=16):
        super().__init__()
        self.stem = nn.Linear(in_features, dim)
        self.blocks = nn.ModuleList([nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim), nn.GELU())
                                     for _ in range(depth)])
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        x = self.stem(x)
        for block in self.blocks:
            x = x + block(x)
        return self.head(x)


def build_with_cfg(cls, pretrained, **kwargs):
    if pretrained:
        raise RuntimeError("this fixture ships no weights")
    return cls(**kwargs)


def _create_mixer(variant, pretrained=False, **kwargs):
    return build_with_cfg(MixerNet, pretrained, **kwargs)


@register_model
def mixer_large_16(pretrained=False, **kwargs):
    return _create_mixer("mixer_large_16", pretrained=pretrained, dim=64, depth=24, **kwargs)


@register_model
def mixer_base_16(pretrained=False, **kwargs):
    return _create_mixer("mixer_base_16", pretrained=pretrained, dim=48, depth=12, **kwargs)


@register_model
def mixer_tiny_16(pretrained=False, **kwargs):
    return _create_mixer("mixer_tiny_16", pretrained=pretrained, dim=16, depth=12, **kwargs)
