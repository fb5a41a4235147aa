"""A variant of the UNet: its own argument, the rest passed on to the base."""

import torch.nn.functional as F
from torch import nn

from unetlib.unet import UNetModel


class SuperResModel(UNetModel):
    """Conditions on a low-resolution image, upsampled and added to the input."""

    def __init__(self, in_channels, *args, **kwargs):
        super().__init__(in_channels, *args, **kwargs)
        self.low_res_proj = nn.Conv2d(in_channels, in_channels, 1)

    def forward(self, x, timesteps, low_res=None):
        if low_res is not None:
            x = x + self.low_res_proj(F.interpolate(low_res, x.shape[-2:], mode="bilinear"))
        return super().forward(x, timesteps)
