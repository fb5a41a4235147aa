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


def fix(text: str):
    findings = scan_memory({"m.py": text}, RULES).findings
    assert findings, "the reproduction no longer has a finding: it tests nothing"
    return fix_source(text, findings, RULES)


def test_the_version_guard_file_is_planned_and_its_rewrite_parses():
    result = fix(VERSION_GUARD)
    assert [(o.finding.location.line, o.status) for o in result.outcomes] == [(3, "fixed")]
    ast.parse(result.text)
    assert result.text.count("DEVICE = torch.accelerator.current_accelerator(check_available=True)") == 1


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
