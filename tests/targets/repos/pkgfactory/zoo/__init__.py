from .nets import TinyNet
