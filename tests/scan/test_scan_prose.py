"""The pre-check reads code, not prose (NOTE [prose in the pre-check] in opscan/scan/prose.py): comments
and string statements are removed before it looks for tokens, and nothing else ever is."""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings

from opscan.scan import load_rules, scan_source
from opscan.scan.prose import prose_spans

ROOT = Path(__file__).resolve().parents[2]
RULES = load_rules()


def reference_spans(text: str) -> list[tuple[int, int]]:
    """`prose_spans` from Python's own tokenizer: COMMENT tokens, and STRING tokens that are the whole
    of a logical line (nothing after them but a comment)."""
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    starts = [0]
    for line in io.StringIO(text):      # lines as the tokenizer counts them: `\n` only
        starts.append(starts[-1] + len(line))

    def offset(row: int, col: int) -> int:
        return starts[row - 1] + col

    spans = []
    first = True     # the next significant token starts a logical line
    for index, tok in enumerate(tokens):
        if tok.type == tokenize.COMMENT:
            spans.append((offset(*tok.start), offset(*tok.end)))
            continue
        if tok.type in (tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING):
            continue
        if tok.type == tokenize.NEWLINE:
            first = True
            continue
        if tok.type == tokenize.STRING and first:
            after = next(t for t in tokens[index + 1:] if t.type not in (tokenize.COMMENT,))
            if after.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                spans.append((offset(*tok.start), offset(*tok.end)))
        first = False
    return spans


def reference(text: str) -> str:
    out, kept = [], 0
    for start, end in reference_spans(text):
        out += [text[kept:start], " "]
        kept = end
    return "".join(out) + text[kept:]


CASES = {
    "docstrings": '"""Module: cuda"""\nimport torch\n\n\ndef f():\n    """uses torch.compile"""\n    return 1\n',
    "comments": "import torch  # on cuda\n# x.to('cuda')\nx = 1\n",
    "kept strings": ('x = "cuda"\ns = (\n    """in brackets"""\n)\n"fmt {}".format(1)\n'
                     'y = 1; "after a semicolon"\nif x: "one line"\nz = 1 + \\\n    2\n'),
    "prefixes": ("a = rb'\\''\nb = f\"{x!r:>{w}}\"\nc = u'''x''' + R\"\"\"y\"\"\"\n"
                 "f'''doc ' with ''' \nBr'q'\n"),
    "continuations": "x = 'a\\\nb'\ny = \\\n    'not a statement'\n'''multi\nline'''  # tail\n",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_prose_is_what_the_tokenizer_says(name):
    assert prose_spans(CASES[name]) == reference_spans(CASES[name])


def test_prose_on_real_files():
    for path in sorted([*(ROOT / "opscan" / "scan").glob("e*.py"), *(ROOT / "examples" / "nanogpt").rglob("*.py")]):
        text = path.read_text(encoding="utf-8")
        assert prose_spans(text) == reference_spans(text), path


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(source=hypothesmith.from_grammar())
def test_prose_is_never_code(source):
    """On generated programs: only spans the tokenizer calls prose are removed (fewer are allowed:
    what the lexer is unsure of stays code)."""
    text = source.replace("\r\n", "\n").replace("\r", "\n")
    try:
        expected = set(reference_spans(text))
    except (tokenize.TokenError, IndentationError, SyntaxError, StopIteration):
        return
    assert set(prose_spans(text)) <= expected


def test_relevant_reads_code_and_import_statements_in_code():
    from opscan.scan.prose import relevant

    compiled = RULES.compiled
    assert not relevant(compiled, '"""Example:\n    from flash_attn import f\n    x.cuda()\n"""\nx = 1\n')
    assert relevant(compiled, '"""Example."""\nfrom flash_attn import f\n')
    assert relevant(compiled, "# a comment\nx = y.cuda()\n")
    assert relevant(compiled, 'x = 1 + \\\n    "cuda"\nmodel.to(x)\n')      # a continued line's string is code
    assert not relevant(compiled, "# torch.cuda.synchronize()\n" + "'" * 3 + "torch.cuda" + "'" * 3 + "  # note\n")


def test_a_token_only_in_prose_does_not_make_a_file_parsed():
    prose = b'"""Run with torch.compile on cuda."""\n# see torch.cuda.synchronize\nx = 1\n'
    code = b'"""Run on cuda."""\nimport torch\nx = torch.zeros(1).to("cuda")\n'
    assert scan_source("prose.py", prose, RULES).parsed is False
    found = scan_source("code.py", code, RULES)
    assert found.parsed and [f.rule for f in found.findings] == ["OPS101"]
    # the same findings as when every file is parsed
    assert scan_source("prose.py", prose, RULES, precheck=False).findings == ()
