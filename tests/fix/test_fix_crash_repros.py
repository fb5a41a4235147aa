"""Minimal reproductions of files that once crashed the fixer (and, through the fixable mark, every
scan): each must now be planned without an exception, and what it rewrites must parse (issue 40)."""

from __future__ import annotations

import ast

from opscan.fix import fix_source
from opscan.scan import load_rules, scan_memory

RULES = load_rules()

# From a public quantization library's Triton backend: a module-level conditional holding "cuda"
# after `import torch`. The fixer took `current_accelerator()` in it for a device to reuse, then
# asked for the parents of a node through an attribute that did not exist (AttributeError).
VERSION_GUARD = ('import torch\n\n'
                 'device_type = torch.accelerator.current_accelerator().type if hasattr(torch, "accelerator") '
                 'else "cuda"\n')
CUDA_BRANCH = VERSION_GUARD.replace('hasattr(torch, "accelerator")', "torch.cuda.is_available()")


def fix(text: str):
    findings = scan_memory({"m.py": text}, RULES).findings
    assert findings, "the reproduction no longer has a finding: it tests nothing"
    return fix_source(text, findings, RULES)


def test_the_version_guard_file_is_planned_and_its_rewrite_parses():
    # Trainium takes the `hasattr` branch (NOTE [what Trainium runs] in scan/trainium.py): no finding
    assert scan_memory({"m.py": VERSION_GUARD}, RULES).findings == ()
    # the same form whose "cuda" branch Trainium does take: planned without an exception, left as a
    # form the fixer has no rewrite for (the module-level conditional that crashed it)
    result = fix(CUDA_BRANCH)
    assert [(o.finding.location.line, o.status, o.reason) for o in result.outcomes] == [(3, "left", "form")]
    assert result.text == CUDA_BRANCH
    ast.parse(result.text)


def test_a_device_type_string_is_not_reused_as_the_device():
    # `current_accelerator().type if ... else "cuda"` is a string: `x.to(device_type)` would work,
    # `torch.autocast(device_type.type)` would not. The module gets its own DEVICE instead.
    text = VERSION_GUARD + '\n\ndef f(x):\n    with torch.autocast("cuda"):\n        return x.to("cuda")\n'
    out = fix(text).text
    assert "device_type.type" not in out and "x.to(device_type)" not in out
    assert "torch.autocast(DEVICE.type)" in out and "x.to(DEVICE)" in out
    ast.parse(out)


def test_a_reused_device_serves_function_bodies_not_module_lines_above_it():
    text = ('import torch\n\n\n'
            'def f(x):\n    return x.to("cuda")\n\n\n'
            'y = torch.zeros(1).to("cuda")\n'
            'dev = torch.accelerator.current_accelerator(check_available=True) or torch.device("cpu")\n')
    result = fix(text)
    by_line = {o.finding.location.line: o for o in result.outcomes}
    assert by_line[5].status == "fixed" and "    return x.to(dev)\n" in result.text   # runs after dev exists
    assert by_line[8].status == "left" and by_line[8].reason == "no-device"         # runs before it
