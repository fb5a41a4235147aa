"""opscan: what will not just run when a PyTorch project moves from CUDA to AWS Trainium."""

__version__ = "0.1.0"
