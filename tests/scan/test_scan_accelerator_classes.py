"""Accelerator abstractions, launchers, op builders and ctypes libraries (the classes held-out 2 missed)."""

from __future__ import annotations

import textwrap

import pytest

from opscan.scan import load_rules, scan_memory

RULES = load_rules()


def found(files: dict[str, str] | str, precheck: bool = True) -> list[tuple[str, str, int]]:
    files = {"m.py": files} if isinstance(files, str) else files
    result = scan_memory({k: textwrap.dedent(v) for k, v in files.items()}, RULES, precheck=precheck)
    return sorted((f.location.path, f.rule, f.location.line) for f in result.findings)


def rules_at(source: str) -> list[tuple[str, int]]:
    return sorted(((rule, line) for _, rule, line in found(source)), key=lambda hit: (hit[1], hit[0]))


ACCELERATOR = '''
import sys

SUPPORTED_ACCELERATOR_LIST = ["cuda", "cpu", "xpu", "npu"]


class CudaAccelerator:
    def __init__(self):
        self._name = "cuda"
        self._communication_backend_name = "nccl" if sys.platform != "win32" else "gloo"

    def on_accelerator(self, tensor):
        device_str = str(tensor.device)
        return device_str.startswith("cuda:")

    def export_envs(self):
        return ["NCCL"]

    def visible_devices_envs(self):
        return ["CUDA_VISIBLE_DEVICES"]


def set_accelerator(name, accel):
    if name not in SUPPORTED_ACCELERATOR_LIST:
        raise ValueError(name)
    if accel.device_name() == "cuda":
        pass
    if accel.communication_backend_name() == "nccl":
        pass
'''


def test_an_accelerator_class_is_reported_in_every_spelling():
    assert rules_at(ACCELERATOR) == [
        ("OPS107", 4),    # the table of supported types, in a membership test that raises
        ("OPS108", 4),    # the same table dispatches over xpu and npu
        ("OPS101", 9),    # self._name = "cuda"
        ("OPS206", 10),   # self._communication_backend_name = "nccl"
        ("OPS106", 14),   # startswith("cuda:")
        ("OPS210", 17),   # the exported prefix NCCL
        ("OPS210", 20),   # CUDA_VISIBLE_DEVICES returned to be set
        ("OPS106", 26),   # device_name() == "cuda"
        ("OPS206", 28),   # communication_backend_name() == "nccl"
    ]


def test_comparisons_with_cuda_that_are_not_device_types_are_not_reported():
    source = '''
    def restore(rng_state_dict, accelerator, x):
        has_cuda_rng_state = "cuda" in rng_state_dict
        if accelerator == "cuda":
            pass
        if x == "cudagraphs":
            pass
        return "cuda" == "cuda"
    '''
    assert rules_at(source) == []


def test_accelerator_names_assigned_are_pins_only_for_cuda():
    source = '''
    def pick(ok):
        accelerator_name = "cuda" if ok else "cpu"
        return accelerator_name

    class Xpu:
        def __init__(self):
            self._name = "xpu"
            self.name = "model"
    '''
    assert rules_at(source) == [("OPS101", 3)]


def test_environment_copies_and_returned_names():
    source = '''
    import os

    def launch():
        current_env = os.environ.copy()
        current_env["NCCL_ASYNC_ERROR_HANDLING"] = "1"
        other = dict(os.environ)
        other["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"
        config = {}
        config["NCCL_DEBUG"] = "INFO"
        return current_env

    def envs():
        return ["PATH"]
    '''
    assert rules_at(source) == [("OPS210", 6), ("OPS210", 8)]


def test_torch_cuda_arch_list_is_a_build_setting_not_reported():
    source = '''
    import os
    os.environ["TORCH_CUDA_ARCH_LIST"] = "8.0"
    arch = os.environ.get("TORCH_CUDA_ARCH_LIST")
    '''
    assert rules_at(source) == []


def test_nvcc_run_through_a_path_and_cpp_extension_names():
    source = '''
    import subprocess
    import torch
    from torch.utils.cpp_extension import ROCM_HOME, CppExtension

    out = subprocess.check_output([torch.utils.cpp_extension.CUDA_HOME + "/bin/nvcc", "-V"])
    ext = CppExtension(name="cpu_adam", sources=["a.cpp"])
    home = ROCM_HOME
    '''
    # the import names both (one finding); nvcc is a tool; the CPU extension call and the reads are not sites
    assert rules_at(source) == [("OPS301", 4), ("OPS212", 6)]


def test_another_accelerators_own_path_is_not_a_pin():
    source = '''
    import torch

    def autocast_context():
        if torch.cuda.is_available():
            return torch.autocast("cuda")
        elif is_xla_installed():
            return torch.autocast("xla")
        return torch.autocast("xla")

    def gather_hpu():
        return torch.device("hpu")

    def gather(obj):
        if is_hpu_installed():
            return gather_hpu()
        return torch.device("hpu")
    '''
    # the pin after the xla branch stays OPS104; is_hpu_installed() makes `gather` a dispatch over
    # hpu (OPS108, which takes its "hpu" too); "cuda" is never dropped as another accelerator's path
    assert rules_at(source) == [("OPS201", 5), ("OPS101", 6), ("OPS104", 9), ("OPS108", 15)]


def test_torch_through_a_star_import():
    with_star = '''
    from .backend import *

    def all_reduce(tensor):
        if hasattr(torch.ops, "deepspeed"):
            return torch.ops.deepspeed.inference_all_reduce_(tensor)
        return torch.cuda.synchronize()
    '''
    assert rules_at(with_star) == [("OPS304", 5), ("OPS304", 6), ("OPS201", 7)]
    assert rules_at(with_star.replace("from .backend import *", "from .backend import x")) == []


def test_op_builder_made_by_a_factory():
    source = '''
    def build_shm_op(get_accelerator):
        builder = get_accelerator().create_op_builder("ShareMemCommBuilder")
        if builder is None:
            return None
        module = builder.load()
        module.initialize(1, 0)
        return module
    '''
    assert rules_at(source) == [("OPS310", 6), ("OPS310", 7)]


def test_ctypes_signatures_mark_a_native_library():
    source = '''
    import ctypes as ct
    from mypkg.setup import get_library

    lib = get_library()
    lib.cadam32bit_grad_fp32
    lib.get_context.restype = ct.c_void_p
    lib.get_context()
    '''
    assert rules_at(source) == [("OPS310", 6), ("OPS310", 7), ("OPS310", 8)]


def test_windows_system_libraries_are_not_kernels():
    source = '''
    import ctypes

    kernel32 = ctypes.WinDLL("kernel32.dll", use_last_error=True)
    kernel32.AddDllDirectory.restype = ctypes.c_void_p
    kernel32.SetErrorMode(1)
    '''
    assert rules_at(source) == []


LOADER = '''
import ctypes as ct


class CUDASetup:
    def __init__(self):
        self.lib = None

    def run(self, path):
        self.lib = ct.cdll.LoadLibrary(path)

    @classmethod
    def get_instance(cls):
        return cls()
'''
USER = '''
from pkg.cuda_setup import CUDASetup

setup = CUDASetup.get_instance()
lib = setup.lib
lib.cquantize(1, 2)
other = CUDASetup.get_instance().lib
other.cdequantize(3)
name = setup.name
name.upper()
'''


@pytest.mark.parametrize("precheck", [True, False])
def test_a_library_another_file_loads_is_followed(precheck):
    files = {"pkg/__init__.py": "", "pkg/cuda_setup.py": LOADER, "pkg/user.py": USER}
    assert found(files, precheck) == [
        ("pkg/cuda_setup.py", "OPS311", 10),
        ("pkg/user.py", "OPS310", 6),
        ("pkg/user.py", "OPS310", 8),
    ]


def test_without_the_loading_file_nothing_is_assumed():
    assert found({"pkg/__init__.py": "", "pkg/user.py": USER}) == []


@pytest.mark.parametrize("source", [
    ACCELERATOR,
    "import os\ncurrent_env = os.environ.copy()\ncurrent_env['NCCL_DEBUG'] = '1'\n",
    "import subprocess\nsubprocess.run([home + '/bin/nvcc', '-V'])\n",
    "import ctypes as ct\nlib = load()\nlib.f.restype = ct.c_int\n",
    "from .x import *\ntorch.ops.myns.op(1)\n",
    "def f(a):\n    if is_hpu_installed():\n        return 1\n",
])
def test_the_pre_check_keeps_every_new_site(source):
    files = {"m.py": source}
    assert found(files) == found(files, precheck=False) != []
