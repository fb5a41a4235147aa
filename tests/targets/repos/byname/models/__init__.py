from .resnet import *  # noqa: F401,F403
from .mlp import *  # noqa: F401,F403
