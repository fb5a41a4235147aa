"""The codemods: every autofix example, the device design, safety, guards and the torch check."""

from __future__ import annotations

import ast
import difflib

import pytest

from opscan.fix import codemods, fix_source
from opscan.fix.examples import check_autofix
from opscan.scan import load_rules, scan_memory
from opscan.scan.rules import CODEMODS

RULES = load_rules()
FIXABLE = [r for r in RULES if r.autofix is not None]


def fix(text: str, unsafe: bool = False, probe=None):
    findings = scan_memory({"m.py": text}, RULES).findings
    return fix_source(text, findings, RULES, unsafe=unsafe, probe=probe)


def statuses(result) -> dict[tuple[int, str], str]:
    return {(o.finding.location.line, o.finding.rule): o.status for o in result.outcomes}


@pytest.mark.parametrize("rule", FIXABLE, ids=[r.id for r in FIXABLE])
def test_every_autofix_example(rule):
    assert check_autofix(rule) == []


def test_rules_declare_fixes_for_the_mechanical_rules():
    assert {r.id for r in FIXABLE} == {"OPS101", "OPS102", "OPS103", "OPS105", "OPS201", "OPS202", "OPS206", "OPS214"}
    assert set(CODEMODS) == set(codemods.CODEMODS)


def test_replacements_exist_in_the_installed_torch():
    torch = pytest.importorskip("torch")
    from opscan.scan.fixes import TorchProbe

    probe = TorchProbe()
    for rule in FIXABLE:
        for _, replacement in rule.autofix.replace:
            assert probe.has(replacement), (rule.id, replacement, torch.__version__)


MIXED = '''"""Module docstring mentioning "cuda"."""
import torch
from torch.cuda.amp import GradScaler


# a comment that stays
def run(x, rank):
    y = x.to('cuda')      # single quotes, odd spacing
    z = torch.ones(2,  device = "cuda:0")
    w = x.to(f"cuda:{rank}")
    v = x.cuda(rank)
    if torch.cuda.is_available():
        x = x.cuda()
    torch.cuda.synchronize()
    name = torch.cuda.get_device_name()
    return y, z, w, v, name


scaler = GradScaler()
'''


def test_untouched_lines_keep_their_bytes_and_output_parses():
    result = fix(MIXED)
    ast.parse(result.text)
    before, after = MIXED.splitlines(keepends=True), result.text.splitlines(keepends=True)
    site_lines = {o.finding.location.line for o in result.outcomes if o.status == "fixed"}
    inserted = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if op in ("replace", "delete"):
            assert set(range(i1 + 1, i2 + 1)) <= site_lines, before[i1:i2]
        if op in ("insert", "replace"):
            inserted.extend(after[j1:j2])
    assert sum(line.startswith("DEVICE = ") for line in inserted) == 1   # one device for the module
    assert MIXED.splitlines()[:3] == result.text.splitlines()[:3]          # docstring and imports
    assert "    y = x.to(DEVICE)      # single quotes, odd spacing\n" in after
    assert "    z = torch.ones(2,  device = f\"{DEVICE.type}:0\")\n" in after


def test_fixing_twice_equals_fixing_once():
    for unsafe in (False, True):
        once = fix(MIXED, unsafe=unsafe).text
        assert fix(once, unsafe=unsafe).text == once


def test_guards_unsafe_and_missing_equivalents_are_left_with_reasons():
    result = fix(MIXED)
    by_line = {o.finding.location.line: o for o in result.outcomes}
    assert by_line[12].status == "left" and "guard" in by_line[12].detail          # the availability test
    assert by_line[13].status == "left" and "guard" in by_line[13].detail          # the work it protects
    assert by_line[11].status == "unsafe" and "index" in by_line[11].detail        # .cuda(rank)
    assert by_line[15].status == "left" and "get_device_name" in by_line[15].detail
    assert by_line[14].status == "fixed"
    unsafe = fix(MIXED, unsafe=True)
    assert "    v = x.to(DEVICE)\n" in unsafe.text


def test_an_existing_device_variable_is_reused():
    text = ('import torch\n'
            'dev = torch.accelerator.current_accelerator(check_available=True) or torch.device("cpu")\n'
            'x = torch.zeros(2).to("cuda")\n'
            'm = torch.nn.Linear(2, 2).cuda()\n')
    out = fix(text).text
    assert out == ('import torch\n'
                   'dev = torch.accelerator.current_accelerator(check_available=True) or torch.device("cpu")\n'
                   'x = torch.zeros(2).to(dev)\n'
                   'm = torch.nn.Linear(2, 2).to(dev)\n')


def test_a_module_without_import_torch_gets_one_import_and_one_device():
    text = "import numpy as np\n\n\ndef f(m):\n    return m.cuda()\n\n\ndef g(t):\n    return t.cuda()\n"
    out = fix(text).text
    assert out.count("import torch\n") == 1 and out.count("DEVICE = ") == 1
    assert out.index("import torch") > out.index("import numpy")
    ast.parse(out)


def test_the_device_name_never_shadows_an_existing_name():
    text = "import torch\nDEVICE = 'tpu'\nx = torch.zeros(1).to('cuda')\n"
    out = fix(text).text
    assert "DEVICE = 'tpu'" in out and "ACCELERATOR_DEVICE = torch.accelerator" in out
    assert "x = torch.zeros(1).to(ACCELERATOR_DEVICE)" in out


def test_availability_idiom_keeps_a_string_when_used_as_one():
    text = 'import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\nif device == "cpu":\n    pass\n'
    out = fix(text).text
    assert 'device = (torch.accelerator.current_accelerator(check_available=True) or torch.device("cpu")).type\n' in out


class _NoTorchAttr:
    installed = True
    version = "2.0.0"

    def has(self, path: str) -> bool:
        return not path.startswith("torch.accelerator")


def test_replacement_missing_from_the_installed_torch_is_not_written():
    result = fix("import torch\ntorch.cuda.synchronize()\n", probe=_NoTorchAttr())
    assert result.text == "import torch\ntorch.cuda.synchronize()\n"
    (outcome,) = result.outcomes
    assert outcome.status == "left" and "2.0.0" in outcome.detail


def test_nccl_comparisons_are_left():
    text = 'import torch.distributed as dist\nif dist.get_backend() == "nccl":\n    pass\n'
    result = fix(text)
    assert result.text == text
    assert [o.status for o in result.outcomes] == ["left"]


def test_scan_marks_safe_fixable_findings():
    text = ("import torch\nx = torch.zeros(1).cuda()\nk = torch.zeros(1).to('cuda')\n"
            "if torch.cuda.is_available():\n    y = torch.zeros(1).cuda()\ntorch.cuda.synchronize()\n")
    findings = scan_memory({"m.py": text}, RULES).findings
    marks = {(f.location.line, f.rule): f.fixable for f in findings}
    assert marks[(2, "OPS105")] and marks[(3, "OPS101")]
    assert not marks[(4, "OPS201")] and not marks[(5, "OPS105")]      # the guard and the guarded work


def test_the_device_goes_after_the_import_block_that_imports_torch():
    text = ("try:\n    import apex\nexcept ImportError:\n    apex = None\n\nimport torch\nimport torch.nn as nn\n\n"
            "x = torch.zeros(1).cuda()\n")
    out = fix(text).text
    assert "import torch\nimport torch.nn as nn\n\nDEVICE = torch.accelerator" in out


def test_a_parameter_default_in_a_method_is_fixed():
    text = 'import torch\n\n\nclass S:\n    def setup(self, backend: str = "nccl"):\n        pass\n'
    out = fix(text).text
    assert 'def setup(self, backend: str = torch.distributed.get_default_backend_for_device(DEVICE)):' in out


@pytest.mark.parametrize("text", [
    'import torch.distributed as dist\ndist.init_process_group("nccl")\n',   # binds `dist`, not `torch`
    'from torch.nn import Linear\nm = Linear(2, 2).cuda()\n',                 # binds `Linear`
])
def test_a_module_whose_torch_imports_bind_no_torch_gets_import_torch(text):
    """A word seen only in an import's module path binds no name: `import torch` can be added."""
    result = fix(text)
    assert [o.status for o in result.outcomes] == ["fixed"]
    assert result.text.count("import torch\n") == 1 and "DEVICE = torch.accelerator" in result.text
    ast.parse(result.text)


def test_a_module_using_the_name_torch_for_something_else_is_left_with_that_reason():
    result = fix('import numpy as torch\nimport torch.distributed as dist\ndist.init_process_group("nccl")\n')
    [outcome] = result.outcomes
    assert outcome.status == "left" and "uses the name `torch` for something else" in outcome.detail
    assert "import torch\n" not in result.text
