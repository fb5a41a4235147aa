"""torch.hub entry points, imported from the package (the torch.hub convention)."""
from vitzoo.hub.backbones import tinyvit_vitb8, tinyvit_vitl8, tinyvit_vits8
from vitzoo.hub.classifiers import tinyvit_vits8_lc
from vitzoo.hub import backbones
from vitzoo.text import tokenize

dependencies = ["torch"]
