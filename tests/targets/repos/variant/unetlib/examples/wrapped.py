"""A model that passes its `**kwargs` on to the body it builds (the PerceiverLM pattern)."""

from torch import nn

from unetlib.unet import UNetModel


class UNetHolder(nn.Module):
    def __init__(self, *, in_channels, **kwargs):
        super().__init__()
        self.unet = UNetModel(in_channels, out_channels=in_channels, **kwargs)

    def forward(self, x, timesteps):
        return self.unet(x, timesteps)
