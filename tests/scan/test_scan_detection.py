"""What the scan finds and does not find: import resolution, positions, guards, strings, suppression."""

from __future__ import annotations

import textwrap

import pytest

from opscan.scan import load_rules, scan_memory
from opscan.scan.suppressions import unused_suppression_findings

RULES = load_rules()


def found(source: str, path: str = "m.py") -> list[tuple[str, int]]:
    result = scan_memory({path: textwrap.dedent(source)}, RULES)
    return [(f.rule, f.location.line) for f in result.findings]


def findings(source: str, path: str = "m.py"):
    return scan_memory({path: textwrap.dedent(source)}, RULES).findings


@pytest.mark.parametrize("source", [
    "import torch as T\nT.cuda.synchronize()\n",
    "from torch import cuda\ncuda.synchronize()\n",
    "from torch import cuda as c\nc.synchronize()\n",
    "import torch.cuda\ntorch.cuda.synchronize()\n",
    "from torch.cuda import synchronize as sync\nsync()\n",
    "def f():\n    import torch as tt\n    tt.cuda.synchronize()\n",
])
def test_import_aware_resolution(source):
    assert ("OPS201", source.count("\n")) in found(source)


def test_from_import_of_a_submodule_resolves():
    # the import of torch.cuda.amp is a site too (a warning), the use resolves through it
    assert found("from torch.cuda import amp\nwith amp.autocast():\n    pass\n") == [("OPS202", 1), ("OPS202", 2)]


def test_local_names_that_are_not_imports_do_not_resolve():
    assert found("cuda = object()\ncuda.synchronize()\nclass M:\n    def cuda(self):\n        return self.cuda\n") == []


def test_comments_docstrings_and_log_messages_are_not_findings():
    source = '''
    """Moves everything to cuda; call torch.cuda.synchronize() first."""
    import logging
    # model.to("cuda")
    logging.info("training on cuda with nccl, CUDA_VISIBLE_DEVICES=0")
    def f(device):
        """device: e.g. "cuda:0"."""
        if device.type == "cpu" or accelerator == "cuda":
            return "cuda"
        print(f"using {device} (cuda)")
        raise ValueError("expected a cuda tensor")
    '''
    assert found(source) == []


def test_positions_are_one_based_with_end_and_character_columns():
    source = 'import torch\nlabel = "é"; x = torch.zeros(1, device="cuda")\n'
    (finding,) = findings(source)
    loc = finding.location
    assert (finding.rule, loc.line, loc.column, loc.end_line, loc.end_column) == ("OPS101", 2, 40, 2, 46)
    assert source.splitlines()[1][loc.column - 1:loc.end_column - 1] == '"cuda"'
    assert finding.snippet == 'label = "é"; x = torch.zeros(1, device="cuda")'


def test_guarded_findings_are_still_reported():
    source = '''
    import torch
    if torch.cuda.is_available():
        x = torch.zeros(1).to("cuda")
    if dev.type == "cuda":
        torch.cuda.synchronize()
    try:
        import flash_attn
    except ImportError:
        flash_attn = None
    y = torch.zeros(1).to("cuda")
    '''
    result = {(f.rule, f.location.line): f.guarded for f in findings(source)}
    assert result == {("OPS201", 3): False, ("OPS101", 4): True, ("OPS106", 5): False, ("OPS201", 6): True,
                      ("OPS401", 8): True, ("OPS101", 11): False}


def test_constant_is_reported_once_at_its_definition():
    source = '''
    import torch
    GPU = "cuda:0"
    OTHER = "cuda"
    a = torch.zeros(1).to(GPU)
    b = torch.ones(1, device=GPU)
    print(OTHER)
    '''
    assert found(source) == [("OPS102", 3)]


def test_availability_idiom_is_one_finding():
    source = 'import torch\ndev = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
    assert found(source) == [("OPS103", 2)]


def test_other_accelerators_and_fstrings():
    source = 'import torch\na = torch.zeros(1).to(f"xpu:{rank}")\nb = x.to("npu:0")\nc = x.to(f"cuda:{r}")\n'
    assert found(source) == [("OPS104", 2), ("OPS104", 3), ("OPS101", 4)]


def test_env_and_nccl_and_compile_positions():
    source = '''
    import os, torch
    import torch.distributed as dist
    os.environ["CUDA_VISIBLE_DEVICES"] = "0"
    del os.environ["NCCL_P2P_DISABLE"]
    subprocess.run(cmd, env={"CUDA_VISIBLE_DEVICES": "1"})
    def setup(backend: str = "nccl"):
        dist.init_process_group(backend)
    m = torch.compile(model, dynamic=True, mode="reduce-overhead")
    '''
    assert found(source) == [("OPS210", 4), ("OPS210", 5), ("OPS210", 6), ("OPS206", 7), ("OPS208", 9), ("OPS207", 9)]


def test_suppression_comments_and_their_usage():
    source = '''
    import torch
    x = torch.zeros(1).to("cuda")  # opscan: ignore[OPS101]
    y = torch.zeros(1).cuda()  # opscan: ignore[OPS101]
    torch.cuda.synchronize()  # opscan: ignore
    s = "# opscan: ignore"; z = torch.zeros(1).to("cuda")
    '''
    result = scan_memory({"m.py": textwrap.dedent(source)}, RULES)
    assert [(f.rule, f.location.line) for f in result.findings] == [("OPS105", 4), ("OPS101", 6)]
    used = {s.line: (s.codes, s.used) for s in result.suppressions}
    assert used == {3: (("OPS101",), ("OPS101",)), 4: (("OPS101",), ()), 5: (("*",), ("*",))}
    unused = unused_suppression_findings(result, RULES, RULES.known)   # OPS003, as `opscan scan` adds it
    assert [(f.rule, f.location.line) for f in unused] == [("OPS003", 4)]


def test_custom_kernels_library_objects_and_launches():
    source = '''
    import torch
    import triton
    lib = torch.library.Library("myops", "DEF")
    lib.define("f(Tensor x) -> Tensor")
    lib.impl("f", impl, "CUDA")

    @triton.autotune(configs=[], key=[])
    @triton.jit
    def k(x):
        pass

    def launch(x):
        k[(1,)](x)
        table["a"](x)
    '''
    assert found(source) == [("OPS401", 3), ("OPS303", 4), ("OPS303", 5), ("OPS303", 6), ("OPS302", 8), ("OPS302", 14)]


def test_extension_imports_declared_in_setup_py_and_pyproject():
    files = {
        "setup.py": ("from setuptools import setup, Extension\n"
                     "setup(ext_modules=[Extension(name='pkg.fast_ops', sources=[])])\n"),
        "pyproject.toml": "[tool.setuptools]\next-modules = [{name = 'pkg._native', sources = ['a.c']}]\n",
        "pkg/__init__.py": "from . import fast_ops\nfrom pkg import _native\nfrom . import slow_ops\n",
    }
    result = scan_memory(files, RULES)
    assert [(f.rule, f.location.path, f.location.line) for f in result.findings] == [
        ("OPS305", "pkg/__init__.py", 1), ("OPS305", "pkg/__init__.py", 2)]


@pytest.mark.parametrize("pyproject", ['tool = "x"\n', '[tool]\nsetuptools = "x"\n',
                                       '[tool.setuptools]\next-modules = 3\n'])
def test_a_pyproject_whose_tables_are_values_ends_no_scan(pyproject: str):
    # the project's own extension modules are read from pyproject.toml before any file is scanned:
    # a value where a table is read raised AttributeError / TypeError and ended the whole scan
    result = scan_memory({"pyproject.toml": pyproject, "train.py": "x = x.to('cuda')\n"}, RULES)
    assert [(f.rule, f.location.path) for f in result.findings] == [("OPS101", "train.py")]


def test_notebook_cells_are_scanned_with_cell_numbers():
    import json

    nb = {"cells": [
        {"cell_type": "markdown", "source": ["x.to('cuda')"]},
        {"cell_type": "code", "source": ["%pip install torch\n", "import torch\n"]},
        {"cell_type": "code", "source": ["%%bash\n", "if [ -x y ]; then echo cuda; fi\n"]},
        {"cell_type": "code", "source": ["x = torch.zeros(1)\n", "x = x.to('cuda')\n"]},
    ], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (finding,) = scan_memory({"nb.ipynb": json.dumps(nb)}, RULES).findings
    assert (finding.rule, finding.location.cell, finding.location.line) == ("OPS101", 3, 2)


@pytest.mark.parametrize("data,rule,line", [
    (b"x = 'cuda'\ndef f(:\n    pass\n", "OPS000", 2),   # a file with no token is not parsed (NOTE [pre-check])
    (b"x = 1\ny = '\xff'\n", "OPS001", 2),
    (b"# -*- coding: nope -*-\nx = 1\n", "OPS001", 1),
    (b"x = 1\x00\n", "OPS001", 1),
    (b"   \n", "OPS004", 1),
])
def test_bad_files_become_findings(data, rule, line):
    result = scan_memory({"bad.py": data, "good.py": b"import torch\ntorch.cuda.synchronize()\n"}, RULES)
    assert [(f.rule, f.location.path, f.location.line) for f in result.findings] == [
        (rule, "bad.py", line), ("OPS201", "good.py", 2)]


def test_pep263_latin1_and_empty_init_are_fine():
    latin = "# -*- coding: latin-1 -*-\nname = 'é'\nimport torch\nx = torch.zeros(1).to('cuda')\n".encode("latin-1")
    result = scan_memory({"a.py": latin, "pkg/__init__.py": b""}, RULES)
    assert [(f.rule, f.location.line) for f in result.findings] == [("OPS101", 4)]


def test_tables_of_supported_devices_are_not_pins():
    """From accelerate and transformers: enumerations of device types are not hard-coded devices; each
    table naming other accelerators is a device dispatch, reported once (OPS108, issue 26)."""
    source = '''
    supported_device = ("xpu", "cuda", "npu", "xla", "mlu", "hpu", "mps")
    cfg = {"supported_devices": ((is_cuda, "cuda"), (is_npu, "npu"))}
    devices = ["cuda:0", "cuda:1"]
    '''
    assert found(source) == [("OPS108", 2), ("OPS108", 3), ("OPS102", 4), ("OPS102", 4)]   # line 4: a constant


def test_deeply_nested_code_is_analysed_or_reported():
    chain = "import torch\nx = " + " + ".join(["torch.cuda.a"] * 2000) + "\ny = torch.zeros(1).to('cuda')\n"
    result = found(chain)
    assert ("OPS101", 3) in result and len(result) == 2001
    too_deep = "x = " + "(" * 300 + "1" + ")" * 300 + "\nimport torch\ny = torch.zeros(1).to('cuda')\n"
    assert found(too_deep) == [("OPS000", 1)]


def test_a_guarded_conditional_value_is_guarded():
    source = '''
    def f(state):
        device_type = "cuda" if is_torch_xla_available(check_is_gpu=True) else state.device.type
        device = "cuda" if flag else "cpu"
    '''
    assert {(f.rule, f.location.line): f.guarded for f in findings(source)} == {("OPS101", 3): True,
                                                                                ("OPS101", 4): False}


def test_custom_op_device_types_keyword_is_a_device_position():
    """From torchtitan: a custom op registered for CUDA only."""
    source = '''
    import torch

    @torch.library.custom_op("hybridep::combine", mutates_args=(), device_types="cuda")
    def combine(x):
        return x
    '''
    assert found(source) == [("OPS303", 4), ("OPS101", 4)]


def test_an_import_of_the_own_package_does_not_hide_the_next_module():
    # `import mypkg, cupy` inside mypkg: mypkg is the project's own code, cupy is still a CUDA-only library
    files = {"mypkg/__init__.py": "", "mypkg/core.py": "import mypkg, cupy\nfrom mypkg import flash_attn\n"}
    result = scan_memory(files, RULES)
    assert [(f.rule, f.location.path, f.location.line, f.subject) for f in result.findings] == [
        ("OPS401", "mypkg/core.py", 1, "cupy")]


@pytest.mark.parametrize("source,rule,task,subject", [
    ("import torch\ntorch.cuda.synchronize()\n", "OPS201", "device-agnostic", "torch.cuda.synchronize"),
    ("import torch\nx = torch.zeros(1, device='cuda:1')\n", "OPS101", "device-agnostic", "cuda:1"),
    ("import torch.distributed as dist\ndist.init_process_group('nccl')\n", "OPS206", "distributed-backend", "nccl"),
    ("from flash_attn.flash_attn_interface import flash_attn_func\n", "OPS401", "library", "flash_attn"),
    ("import torch\nlib = torch.library.custom_op('mylib::scan_fwd', mutates_args=())\n", "OPS303", "kernel",
     "scan_fwd"),
    ("import torch\ny = torch.ops.mylib.scan(x)\n", "OPS304", "kernel", "scan"),
    ("from torch.utils.cpp_extension import load\next = load(name='selective_scan', sources=['a.cu'])\n",
     "OPS301", "kernel", "selective_scan"),
    ("import cupy\nk = cupy.RawKernel(CODE, 'my_kernel')\n", "OPS307", "kernel", "my_kernel"),
    # a kernel rule's subject is the kernel's name, never the API symbol: none stated here
    ("from torch.utils.cpp_extension import BuildExtension\nsetup(cmdclass={'build_ext': BuildExtension})\n",
     "OPS301", "kernel", ""),
])
def test_findings_carry_task_and_subject_from_the_match(source, rule, task, subject):
    last = source.count("\n")   # the line that states the subject (an import line may be reported too)
    (hit,) = [f for f in findings(source) if f.rule == rule and f.location.line == last]
    assert (hit.task, hit.subject) == (task, subject)


def test_a_kernel_language_import_joins_its_kernel_but_other_libraries_do_not():
    source = ("import triton\nimport flash_attn\n\n@triton.jit\ndef add_kernel(x):\n    pass\n")
    got = sorted((f.rule, f.location.line, f.task, f.subject) for f in findings(source))
    assert got == [("OPS302", 4, "kernel", "add_kernel"),
                   ("OPS401", 1, "kernel", "add_kernel"),       # triton: the kernel's own language
                   ("OPS401", 2, "library", "flash_attn")]


def test_a_name_match_gets_its_own_message_not_an_empty_value():
    """`fixes[].message` overrides the rule's message for those names: OPS206 on a name match says
    which name, where the rule's template would read "process-group backend ''"."""
    got = {f.location.line: f.message for f in findings(
        "import torch.distributed as dist\nok = dist.is_nccl_available()\ndist.init_process_group('nccl')\n")}
    assert got[2].startswith("`torch.distributed.is_nccl_available` names the NCCL process-group backend")
    assert got[3] == "process-group backend 'nccl' is CUDA-only; TorchNeuron's is 'neuron'"
    assert "''" not in got[2]
