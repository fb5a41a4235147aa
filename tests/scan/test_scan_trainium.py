"""Blockers that block (issue 40): conditionals judged by the branch Trainium takes with the paired
torch, autocast switched off on CUDA, environment defaults (NOTE [the branch Trainium takes])."""

from __future__ import annotations

import ast
import textwrap

import pytest

from opscan.index.resolver import Imports
from opscan.records import Severity
from opscan.scan import load_rules, scan_memory
from opscan.scan.trainium import PAIRED_TORCH, PRESENT, Branch, on_trainium

RULES = load_rules()
HEADER = ("import torch\nfrom packaging import version\n"
          "from transformers.utils import is_torch_greater_or_equal, is_torch_version, is_torch_mps_available\n")


def findings(source: str):
    return scan_memory({"m.py": textwrap.dedent(source)}, RULES).findings


def blockers(source: str) -> list[tuple[str, int]]:
    """What blocks: unguarded errors (NOTE [blockers] in opscan/verdict.py)."""
    return [(f.rule, f.location.line) for f in findings(source) if f.severity == Severity.ERROR and not f.guarded]


def answer(test: str) -> Branch | None:
    tree = ast.parse(HEADER)
    imports = Imports("m.py")
    for node in tree.body:
        imports.add(node)
    return on_trainium(ast.parse(test, mode="eval").body, imports.resolve)


@pytest.mark.parametrize("test,expected", [
    ('hasattr(torch, "accelerator")', Branch(True, False)),
    ('hasattr(torch.accelerator, "current_accelerator")', Branch(True, False)),
    ("torch.cuda.is_available()", Branch(False, True)),
    ("not torch.cuda.is_available()", Branch(True, True)),
    ("torch.cuda.device_count() > 1", Branch(False, True)),
    ("args.cuda and torch.cuda.is_available()", Branch(False, True)),
    ("torch.backends.mps.is_available()", Branch(False, False)),
    ("torch.xpu.is_available()", Branch(False, False)),
    ("is_torch_mps_available()", Branch(False, False)),
    ("torch.accelerator.is_available()", Branch(True, False)),
    ('torch.accelerator.current_accelerator().type == "cuda"', Branch(False, False)),
    ("torch.accelerator.current_accelerator(check_available=True) is not None", Branch(True, False)),
    ('hasattr(torch, "accelerator") and torch.accelerator.is_available()', Branch(True, False)),
    ('torch.__version__ >= "2.6"', Branch(True, False)),
    ('"2.6" <= torch.__version__', Branch(True, False)),
    ('torch.__version__ < "2.0.1"', Branch(False, False)),
    ('version.parse(torch.__version__) >= version.parse("2.6")', Branch(True, False)),
    ('version.parse(torch.__version__) < version.parse("1.13")', Branch(False, False)),
    ('is_torch_greater_or_equal("2.6")', Branch(True, False)),
    ('is_torch_version("<", "2.4")', Branch(False, False)),
])
def test_the_evaluator_answers_what_it_knows(test, expected):
    assert answer(test) == expected


@pytest.mark.parametrize("test", [
    'hasattr(torch, "npu")',                   # a plugin may add it: unknown, not False
    'hasattr(torch, "neuron")',
    'torch.__version__ >= "2.14"',             # true on 2.14, false on 2.13: the pairing decides nothing
    'torch.__version__ == "2.13.1"',            # one patch release of a paired minor
    "args.cuda or torch.cuda.is_available()",
    "use_gpu",
    "torch.backends.cudnn.is_available()",    # not in the closed table
    'is_torch_greater_or_equal("2.6", accept_dev=True)',
])
def test_what_it_does_not_know_stays_unknown(test):
    assert answer(test) is None


def test_the_paired_torch_is_the_shipped_releases():
    from opscan.pipeline.pairing import release_head

    assert PAIRED_TORCH == tuple(tuple(int(p) for p in t.split(".")) for t in release_head().torch)


@pytest.mark.slow
def test_every_api_the_evaluator_calls_present_is_in_the_installed_torch():
    torch = pytest.importorskip("torch")
    assert tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) in PAIRED_TORCH
    for name in sorted(PRESENT):
        obj = torch
        for part in name.split(".")[1:]:
            assert hasattr(obj, part), name
            obj = getattr(obj, part)


# -- the issue's examples ------------------------------------------------------------------------
def test_the_version_guard_of_the_issue_does_not_block():
    source = '''
    import torch

    device_type = torch.accelerator.current_accelerator().type if hasattr(torch, "accelerator") else "cuda"
    '''
    assert findings(source) == ()


def test_a_cuda_branch_trainium_takes_blocks_like_the_literal():
    source = '''
    import torch
    device = "mps" if torch.backends.mps.is_available() else "cuda"
    model = torch.nn.Linear(2, 2).to(device)
    '''
    assert blockers(source) == [("OPS102", 3)]
    assert ("OPS108", 3) in [(f.rule, f.location.line) for f in findings(source)]   # the dispatch stays


@pytest.mark.parametrize("source,blocking", [
    # if/else statements: the else Trainium takes is code that runs
    ('''
    def pick(x):
        if torch.backends.mps.is_available():
            return x.to("mps")
        else:
            return x.cuda()
    ''', [("OPS105", 6)]),
    ('''
    def pick(x):
        if torch.accelerator.is_available():
            x = x.cuda()
        return x
    ''', [("OPS105", 4)]),
    # a version guard: the CUDA branch is never taken, in any form
    ('''
    def pick(x):
        if hasattr(torch, "accelerator"):
            x = x.to(torch.accelerator.current_accelerator())
        else:
            x = x.cuda()
        return x
    ''', []),
    ('''
    def pick(x):
        if version.parse(torch.__version__) >= version.parse("2.6"):
            return x.to(torch.accelerator.current_accelerator())
        torch.cuda.synchronize()
        return x.cuda()
    ''', []),
    ('''
    x = torch.zeros(2)
    if not hasattr(torch, "accelerator"):
        x = x.cuda()
    ''', []),
])
def test_if_statements_are_judged_by_the_branch_trainium_takes(source, blocking):
    assert blockers(HEADER + textwrap.dedent(source)) == [(r, line + 3) for r, line in blocking]


def test_a_cuda_check_keeps_its_cuda_branch_reported_guarded():
    source = '''
    import torch
    def pick(x):
        if torch.cuda.is_available():
            x = x.cuda()
        else:
            x = x.to("cpu")
        return x
    '''
    assert [(f.rule, f.location.line, f.guarded) for f in findings(source)] == [("OPS201", 4, False),
                                                                               ("OPS105", 5, True)]


def test_an_unknown_test_keeps_todays_judgement():
    source = '''
    import torch
    def pick(x, use_gpu):
        if use_gpu:
            x = x.cuda()
        return x
    '''
    assert blockers(source) == [("OPS105", 5)]


def test_autocast_switched_off_on_cuda_is_a_warning_and_switched_on_an_error():
    source = '''
    import torch
    from torch.amp import autocast

    class Head(torch.nn.Module):
        @autocast("cuda", enabled=False)
        def forward(self, x):
            with torch.autocast(device_type="cuda", enabled=False):
                y = x.float()
            with torch.autocast("cuda", torch.bfloat16, False):
                y = y + 1
            with torch.autocast("cuda", dtype=torch.bfloat16):
                return y
    '''
    got = [(f.rule, f.location.line, f.severity) for f in findings(source)]
    assert got == [("OPS101", 6, "warning"), ("OPS101", 8, "warning"), ("OPS101", 10, "warning"),
                   ("OPS101", 12, "error")]


def test_an_environment_default_of_cuda_is_a_blocking_pin():
    source = '''
    import os
    dev = os.environ.get("DEV", "cuda")
    device = os.getenv("DEVICE", default="cuda:0")
    os.environ.setdefault("ACCELERATOR", "cuda")
    other = os.getenv("MODE", "train")
    '''
    assert blockers(source) == [("OPS101", 3), ("OPS101", 4), ("OPS101", 5)]
