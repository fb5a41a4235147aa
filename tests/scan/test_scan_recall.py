"""The construct classes of issue 13: device-type tests, device strings in more positions, CUDA APIs
outside torch.cuda calls, call sites into native modules, kernel-registration wrappers, and the
severities and fixes that follow from what happens on a Neuron device."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from opscan.scan import load_rules, scan_memory, scan_paths
from opscan.scan.cache import ResultCache

RULES = load_rules()


def findings(files: dict[str, str] | str):
    if isinstance(files, str):
        files = {"m.py": files}
    return scan_memory({k: textwrap.dedent(v) for k, v in files.items()}, RULES).findings


def found(files) -> list[tuple[str, int]]:
    return [(f.rule, f.location.line) for f in findings(files)]


# -- device-type tests -------------------------------------------------------------------------
def test_a_device_type_branch_is_a_warning_naming_what_it_guards():
    (f,) = findings('''
    def attention(q):
        if q.device.type == "cuda":
            return fused(q)
        return q
    ''')
    assert (f.rule, f.severity, f.location.line, f.subject) == ("OPS106", "warning", 3, "cuda")
    assert "guards line 4" in f.message


@pytest.mark.parametrize("test,raises", [
    ('if dev.type != "cuda":\n        raise ValueError("needs CUDA")', True),
    ('if dev.type == "cuda":\n        raise ValueError("not on CUDA")', False),   # raises on CUDA only
    ('if not x.is_cuda:\n        raise ValueError("needs CUDA")', True),
    ('assert x.is_cuda', True),
    ('assert dev.type != "cuda"', False),
    ('torch._check(x.is_cuda, lambda: "x is not on GPU")', True),
])
def test_a_device_test_is_an_error_only_where_a_neuron_device_makes_it_raise(test, raises):
    source = f"import torch\ndef f(dev, x):\n    {test}\n"
    rules = [f.rule for f in findings(source)]
    assert rules == (["OPS107"] if raises else ["OPS106"])


@pytest.mark.parametrize("expr", [
    'dev in ("cuda", "meta")',
    'str(device).startswith("cuda")',
    '"cuda" in str(x.device)',
    '"cuda:" + str(k) != self.last_device',
    'device_type == "cuda:0"',
    't.is_cuda',
])
def test_device_type_tests_in_every_form(expr):
    assert found(f"def f(dev, device, x, k, t, device_type):\n    ok = {expr}\n") == [("OPS106", 2)]


@pytest.mark.parametrize("expr", [
    'accelerator == "cuda"',        # a framework's own vocabulary, not a device
    'dev.type == "cpu"',
    'name == "cuda kernels"',
])
def test_tests_that_are_not_cuda_device_tests_are_not_reported(expr):
    assert found(f"def f(dev, accelerator, name):\n    ok = {expr}\n") == []


# -- device dispatch over other accelerators (issue 26, OPS108) ---------------------------------
def test_a_dispatch_is_reported_once_per_function_naming_what_it_handles():
    source = '''
    import torch
    def clear(dev):
        if dev.type in ("cuda", "xpu"):
            torch.accelerator.empty_cache()
        elif dev.type == "npu":
            torch.npu.empty_cache()
    def pick():
        if is_torch_mlu_available():
            return "mlu"
        return "mps" if torch.backends.mps.is_available() else "cpu"
    '''
    got = findings(source)
    dispatch = [(f.location.line, f.subject, f.severity, f.task) for f in got if f.rule == "OPS108"]
    assert dispatch == [(4, "cuda, xpu, npu", "warning", "device-dispatch"),
                        (9, "mlu, mps", "warning", "device-dispatch")]
    assert not [f for f in got if f.rule == "OPS104"]   # the strings are the dispatch's, not pins


def test_a_dispatch_that_names_neuron_or_only_probes_an_api_is_not_reported():
    source = '''
    import torch
    def pick(dev):
        if dev.type == "neuron":
            return "neuron"
        elif dev.type == "npu":
            return "npu"
    def probe():
        return hasattr(torch, "xpu"), json.dumps({"gpus": 1})
    x = torch.zeros(2).to("mps")
    '''
    assert found(source) == [("OPS104", 10)]   # a pin, not a dispatch: nothing is chosen


# -- device strings in more positions ----------------------------------------------------------
def test_device_strings_returned_by_device_functions_templates_and_device_lists():
    source = '''
    import torch
    def infer_device():
        if torch.cuda.is_available():
            return "cuda"
        return "cpu"
    def choose_accelerator():
        return "cuda"              # a framework's accelerator name, not a device
    class Op:
        SUPPORTED_DEVICES = {"cuda"}
    x = torch.zeros(1).to("cuda:{}".format(rank))
    cap = torch.cuda.get_device_capability("cuda")
    '''
    got = found(source)
    assert ("OPS101", 5) in got and ("OPS101", 10) in got and ("OPS101", 11) in got and ("OPS101", 12) in got
    assert not any(line == 8 for _, line in got)


# -- CUDA APIs outside torch.cuda calls ---------------------------------------------------------
def test_imports_of_torch_cuda_are_warnings_and_uses_keep_their_own_severity():
    source = '''
    import torch
    import torch.cuda.nvtx
    try:
        from torch.amp import custom_fwd
    except ImportError:
        from torch.cuda.amp import custom_fwd
    torch.cuda.manual_seed_all(0)
    torch.cuda.synchronize()
    '''
    got = {(f.rule, f.location.line): f.severity for f in findings(source)}
    assert got == {("OPS201", 3): "warning", ("OPS202", 7): "warning", ("OPS201", 8): "warning",
                   ("OPS201", 9): "error"}
    seed = [f for f in findings(source) if f.location.line == 8][0]
    assert "unseeded" in seed.fix and "torch.manual_seed" in seed.fix


def test_a_cuda_check_that_protects_cuda_only_work_is_not_told_to_become_an_accelerator_check():
    protects = findings('''
    import torch
    def restore(state):
        if torch.cuda.is_available():
            torch.cuda.set_rng_state(state)
    ''')
    check = [f for f in protects if f.subject == "torch.cuda.is_available"][0]
    assert "torch.accelerator.is_available()" in check.fix and "leave it a CUDA check" in check.fix
    assert "`torch.cuda.set_rng_state` (line 5)" in check.fix
    agnostic = findings('''
    import torch
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    ''')
    check = [f for f in agnostic if f.subject == "torch.cuda.is_available"][0]
    assert check.fix.startswith("Use `torch.accelerator.is_available()`")


def test_cuda_specific_torch_apis_nccl_forms_env_families_and_nvidia_tools():
    source = '''
    import os, shutil, subprocess
    import torch
    import torch.distributed as dist
    major = int(torch.version.cuda.split(".")[0])
    if torch.is_autocast_enabled():
        dtype = torch.get_autocast_gpu_dtype()
    on = torch.is_autocast_enabled("cuda")
    dist.init_process_group(backend="cuda:nccl,cpu:gloo")
    if dist.is_nccl_available():
        opts = dist.ProcessGroupNCCL.Options()
    os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"
    os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":16:8"
    smi = shutil.which("nvidia-smi")
    subprocess.run(["nvidia-smi", "-L"])
    '''
    # line 8 asks about CUDA autocast by name: a device string (OPS101), not the device-less CUDA form
    assert found(source) == [("OPS211", 5), ("OPS211", 6), ("OPS211", 7), ("OPS101", 8), ("OPS206", 9), ("OPS206", 10),
                             ("OPS206", 11), ("OPS210", 12), ("OPS210", 13), ("OPS212", 14), ("OPS212", 15)]


def test_a_module_kept_on_an_object_resolves():
    source = '''
    import torch
    class Tracker:
        def __init__(self):
            self.torch = torch
        def peak(self):
            return self.torch.cuda.max_memory_allocated()
    '''
    assert found(source) == [("OPS201", 7)]


def test_type_annotations_are_not_findings():
    source = '''
    from typing import List
    import torch
    def f(stream: torch.cuda.Stream) -> torch.cuda.Event:
        events: List[torch.cuda.Event] = []
        return events
    '''
    assert found(source) == []


# -- custom kernels -----------------------------------------------------------------------------
def test_every_call_into_a_native_module_is_a_site():
    source = '''
    import ctypes
    import selective_scan_cuda as ssc
    from torch.utils.cpp_extension import load

    def scan(u):
        out = ssc.fwd(u)
        return ssc.bwd(out)

    def run(x, bf16):
        global kernel
        kernel = load(name="wkv", sources=["wkv.cu"])
        f = kernel.forward_bf16 if bf16 else kernel.forward
        lib = ctypes.CDLL("libcusparseLt.so")
        return lib.cusparseLtGetProperty(0), kernel.max_seq_length > 1
    '''
    got = found(source)
    assert [line for rule, line in got if rule == "OPS310"] == [7, 8, 13, 13, 15]
    assert ("OPS305", 3) in got and ("OPS311", 14) in got


def test_a_packages_own_c_module_is_an_extension_but_torch_c_is_not():
    files = {"pkg/__init__.py": "", "pkg/ops.py": "from . import _C_flash\nfrom torch import _C\n"
             "def f(q):\n    _C._get_tracing_state()\n    return _C_flash.fwd(q)\n"}
    assert found(files) == [("OPS305", 1), ("OPS310", 5)]


def test_torch_library_through_aliases_and_thin_wrappers():
    source = '''
    import torch
    register_fake = torch.library.register_fake

    def register_custom_op(name):
        def decorator(func):
            return torch.library.register_fake(name)(func)
        return decorator

    @register_custom_op("mylib::fused")
    def _(x):
        return x

    @register_fake("mylib::other")
    def _(x):
        return x
    '''
    got = found(source)
    assert ("OPS303", 10) in got and ("OPS303", 14) in got and ("OPS303", 3) in got


def test_torch_ops_through_getattr_hasattr_and_op_lookup_helpers_in_other_files():
    files = {
        "pkg/__init__.py": "",
        "pkg/common.py": '''
        import torch

        def get_operator(library, name):
            return getattr(getattr(torch.ops, library), name)

        def get_pkg_operator(name):
            return get_operator("pkg", name)
        ''',
        "pkg/ops.py": '''
        import torch
        from .common import get_operator, get_pkg_operator
        FWD = get_pkg_operator("fused_fwd")
        MM = get_operator("aten", "_cslt_sparse_mm")
        loaded = hasattr(torch.ops, "pkg")
        probe = hasattr(torch._C, "_cuda_clearCublasWorkspaces")
        ''',
    }
    got = {(f.location.path, f.location.line, f.rule) for f in findings(files)}
    assert got == {("pkg/common.py", 5, "OPS304"), ("pkg/common.py", 8, "OPS304"),
                   ("pkg/ops.py", 4, "OPS304"), ("pkg/ops.py", 6, "OPS304")}


def test_wrappers_across_files_are_found_the_same_with_a_warm_cache(tmp_path: Path):
    root = tmp_path / "tree"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "common.py").write_text(
        "import torch\ndef get_operator(ns, name):\n    return getattr(getattr(torch.ops, ns), name)\n")
    (root / "pkg" / "ops.py").write_text("from .common import get_operator\nOP = get_operator('pkg', 'fwd')\n")
    cache = ResultCache(tmp_path / "cache", "test")
    runs = [[(f.location.path, f.location.line, f.rule)
             for f in scan_paths(root, rules=RULES, check_fixes=False, cache=cache).findings] for _ in range(2)]
    assert runs[0] == runs[1] == [("pkg/common.py", 3, "OPS304"), ("pkg/ops.py", 2, "OPS304")]
