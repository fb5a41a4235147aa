"""Build files report what a port must change (issue 40): not the helpers of torch.utils.cpp_extension,
not extras keyed by accelerator names, not a `_C` that a Python module of the tree defines."""

from __future__ import annotations

import textwrap

from opscan.records import Severity
from opscan.scan import load_rules, scan_memory

RULES = load_rules()

SETUP = '''\
import os
from setuptools import setup
from torch.utils.cpp_extension import IS_WINDOWS, ROCM_HOME, CUDA_HOME
from torch.utils.cpp_extension import BuildExtension, CUDAExtension, IS_HIP_EXTENSION
from torch.utils import cpp_extension

extras = {"cpu": ["numpy"], "gpu": ["scipy"]}
extras["all"] = [dep for key, deps in extras.items() if "gpu" not in key for dep in deps]
ext = []
if CUDA_HOME is not None and not IS_WINDOWS and not IS_HIP_EXTENSION and cpp_extension.HIP_HOME is None:
    ext.append(CUDAExtension("pkg._ops", ["ops.cu"], extra_compile_args={"nvcc": ["-O3"]}))
setup(name="pkg", ext_modules=ext, cmdclass={"build_ext": BuildExtension}, extras_require=extras)
'''


def judged(files: dict[str, str]) -> list[tuple[str, int, str, str]]:
    found = scan_memory({k: textwrap.dedent(v) for k, v in files.items()}, RULES).findings
    return [(f.location.path, f.location.line, f.rule, f.severity) for f in found]


def test_a_setup_py_reports_the_build_not_its_helpers():
    assert judged({"setup.py": SETUP}) == [
        ("setup.py", 3, "OPS301", Severity.WARNING),    # imports helpers only
        ("setup.py", 4, "OPS301", Severity.ERROR),      # imports what builds (and a helper)
        ("setup.py", 5, "OPS301", Severity.ERROR),      # the module
        ("setup.py", 11, "OPS301", Severity.ERROR),     # the CUDA extension and its nvcc flags
        ("setup.py", 12, "OPS301", Severity.ERROR),     # BuildExtension
    ]


def test_a_c_member_of_a_python_module_is_not_an_extension_but_a_compiled_one_still_is():
    files = {
        "pkg/__init__.py": "",
        "pkg/config/__init__.py": "from .defaults import _C as cfg\n",
        "pkg/config/defaults.py": "_C = object()\n",
        "pkg/train.py": "from .config.defaults import _C\nfrom . import _C as ext\ncfg = _C.clone()\next.fwd(cfg)\n",
    }
    assert [(p, line, rule) for p, line, rule, _ in judged(files)] == [("pkg/train.py", 2, "OPS305"),
                                                                        ("pkg/train.py", 4, "OPS310")]
    files["pkg/_C.py"] = "def fwd(x):\n    return x\n"      # now the package's _C is Python too
    assert judged(files) == []
