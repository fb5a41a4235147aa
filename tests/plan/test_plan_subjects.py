"""The planner groups findings by the task kind their rule declares and the subject they matched,
never by rule-name substrings or message text."""

from __future__ import annotations

from dataclasses import replace

from opscan.plan import build_tasks
from opscan.scan import load_rules, scan_memory

RULES = load_rules()

KERNEL_FILE = """\
import triton
import flash_attn

@triton.jit
def add_kernel(x):
    pass
"""


def _tasks(files: dict[str, str]):
    return {t.id: t for t in build_tasks(scan_memory(files, RULES).findings, (), ())}


def test_a_library_next_to_a_triton_kernel_stays_its_own_task():
    tasks = _tasks({"k.py": KERNEL_FILE})
    assert set(tasks) == {"kernel:add_kernel", "library:flash_attn"}
    assert [s.line for s in tasks["kernel:add_kernel"].sites] == [1, 4]      # `import triton` goes with it
    assert [s.line for s in tasks["library:flash_attn"].sites] == [2]


def test_task_kind_comes_from_the_rule_not_its_name_or_message():
    (finding,) = scan_memory({"t.py": "import torch.distributed as d\nd.init_process_group('nccl')\n"}, RULES).findings
    renamed = replace(finding, name="some-other-name", message="whatever text")
    assert [t.id for t in build_tasks((renamed,), (), ())] == ["distributed-backend"]
    assert build_tasks((replace(finding, task="none"),), (), ()) == ()


def test_kernels_group_by_subject_across_files():
    files = {
        "ops.py": ("import torch\n@torch.library.custom_op('mylib::scan', mutates_args=())\n"
                   "def scan(x):\n    return x\n"),
        "use.py": "import torch\ny = torch.ops.mylib.scan(x)\n",
    }
    tasks = _tasks(files)
    assert set(tasks) == {"kernel:scan"}
    assert {s.path for s in tasks["kernel:scan"].sites} == {"ops.py", "use.py"}
