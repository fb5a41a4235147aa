from ..vit import VisionTransformer


def _make(embed_dim, pretrained):
    model = VisionTransformer(embed_dim=embed_dim)
    if pretrained:
        raise RuntimeError("weights are downloaded by torch.hub")
    return model


def tinyvit_vits8(*, pretrained=True, **kwargs):
    return _make(32, pretrained)


def tinyvit_vitb8(*, pretrained=True, **kwargs):
    return _make(48, pretrained)


def tinyvit_vitl8(*, pretrained=True, **kwargs):
    return _make(64, pretrained)
