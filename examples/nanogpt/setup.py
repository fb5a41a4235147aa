"""Builds the fused GELU CUDA extension used by ops/fused_gelu.py: `pip install -e .` on a CUDA machine."""

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="nanogpt-example",
    version="0.1.0",
    py_modules=["model", "train"],
    ext_modules=[
        CUDAExtension(
            name="fused_gelu_cuda",
            sources=["csrc/fused_gelu.cpp", "csrc/fused_gelu_kernel.cu"],
            extra_compile_args={"cxx": ["-O3"], "nvcc": ["-O3", "--use_fast_math"]},
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
