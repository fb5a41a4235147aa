from setuptools import find_packages, setup

REQUIRED = [
    "torch>=1.12,<2.1",
    "numpy",
    "mamba-ssm>=1.1",
]

setup(
    name="ssm-lab",
    version="0.2.0",
    packages=find_packages(),
    install_requires=REQUIRED,
    extras_require={"kernels": ["causal-conv1d>=1.1.0", "triton"]},
)
