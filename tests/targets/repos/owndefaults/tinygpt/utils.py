"""A yacs-like config node (as minGPT's CfgNode)."""


class CfgNode:
    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)
