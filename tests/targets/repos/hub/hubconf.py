"""torch.hub entry points (the torch.hub convention)."""
dependencies = ["torch"]

from convnet import ConvNet


def convnet_small(pretrained=True, **kwargs):
    model = ConvNet(channels=8, **kwargs)
    if pretrained:
        import torch.hub
        model.load_state_dict(torch.hub.load_state_dict_from_url("https://example.invalid/convnet.pth"))
    return model
