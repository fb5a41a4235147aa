"""Issue 26 leftovers: package `_C` modules, `hasattr(torch.ops, ...)` guards, function-level imports."""

from __future__ import annotations

import random
import re
import textwrap

from opscan.scan import load_rules, scan_memory
from opscan.scan.tokens import ANY, ATTR, EDGE, QUOTE, bounded_regex

RULES = load_rules()


def findings(source: str, path: str = "pkg/m.py", rules=RULES):
    return scan_memory({path: textwrap.dedent(source)}, rules).findings


def test_a_package_compiled_module_imported_by_its_package_and_its_calls():
    got = findings("""\
        import mypkg._C as C
        from otherpkg import _C

        def f(x):
            y = C.fwd(x)
            return _C.bwd(y)
        """)
    assert [(f.rule, f.location.line, f.subject) for f in got] == [
        ("OPS305", 1, "_C"), ("OPS305", 2, "_C"), ("OPS310", 5, "C"), ("OPS310", 6, "_C")]


def test_torch_own_C_module_is_not_an_extension():
    got = findings("""\
        import torch._C
        from torch import _C

        def f():
            return _C._get_tracing_state()
        """)
    assert not [f for f in got if f.rule in ("OPS305", "OPS310")]


def test_a_hasattr_probe_of_torch_ops_guards_the_call_without_hiding_it():
    got = findings("""\
        import torch

        def gelu(x):
            if hasattr(torch.ops, "mylib"):
                return torch.ops.mylib.fused_gelu(x)
            if hasattr(torch.ops.mylib, "fused_relu"):
                return torch.ops.mylib.fused_relu(x)
            return torch.ops.mylib.plain(x)
        """)
    assert [(f.rule, f.location.line, f.guarded) for f in got] == [
        ("OPS304", 4, False), ("OPS304", 5, True), ("OPS304", 6, False), ("OPS304", 7, True),
        ("OPS304", 8, False)]
    assert {f.category for f in got} == {"custom-kernel"}


def test_calls_through_a_function_level_import_are_walked():
    # no token on the call's lines: the walk must still visit them (the import binds the name)
    source = """\
        import os

        def run(a):
            from torch.cuda import synchronize as wait_all
            total = a + 1
            wait_all(
                )
            return total
        """
    fast = findings(source)
    slow_rules = load_rules()
    slow_rules.compiled.always = True   # every statement visited
    assert [(f.rule, f.location.line) for f in fast] == [("OPS201", 4), ("OPS201", 6)]
    assert fast == findings(source, rules=slow_rules)


def _reference(words: dict[str, tuple[int, int]], text: str) -> bool:
    """Whether some word occurs in `text` within its bounds, by brute force."""
    def ok_left(i, bound):
        before = text[i - 1] if i else ""
        word_char = bool(before) and (before.isascii() and (before.isalnum() or before == "_"))
        return {ANY: True, EDGE: not word_char, QUOTE: before in "\"'" and before != "",
                ATTR: before in ".\"'" and before != ""}[bound]

    for word, (left, right) in words.items():
        for match in re.finditer(re.escape(word), text):
            after = text[match.end():match.end() + 1]
            right_ok = not right or not (after.isascii() and (after.isalnum() or after == "_")) or after == ""
            if ok_left(match.start(), left) and right_ok:
                return True
    return False


def test_the_pivot_regex_finds_exactly_the_bounded_tokens():
    rng = random.Random(26)
    alphabet = "acdlopuxCD_.\"' \n"
    for _ in range(300):
        words = {"".join(rng.choice("acdlopuxCD_.") for _ in range(rng.randint(2, 5))):
                 (rng.choice((ANY, EDGE, QUOTE, ATTR)), rng.choice((ANY, EDGE))) for _ in range(rng.randint(1, 6))}
        regex = bounded_regex(words)
        for _ in range(10):
            text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
            assert (regex.search(text) is not None) == _reference(words, text), (words, text)
