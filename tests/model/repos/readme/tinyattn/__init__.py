from .net import AttnNet
