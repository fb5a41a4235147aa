from tabnet.net import Net

__all__ = ["Net"]
