"""Optional fast paths for the example model: a CUDA extension, a Triton kernel and a custom op."""
