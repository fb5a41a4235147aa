"""Syntax newer than the interpreter's (PEP 695, PEP 701) is scanned and fixed as usual (NOTE [newer syntax])."""

from __future__ import annotations

import ast
import textwrap

import pytest

from opscan.fix.module import fix_source
from opscan.index import parse
from opscan.scan import load_rules, scan_memory

RULES = load_rules()

PEP695 = textwrap.dedent('''\
    import torch

    type Pair[T] = tuple[T, T]
    type Table = dict[
        str,   # a comment inside
        int,
    ]


    def move[T: torch.Tensor = torch.Tensor](x: T) -> T:
        return x.cuda()


    class Box[T, *Ts, **P](torch.nn.Module):
        def __init__(self, v: T):
            super().__init__()
            self.v = v.to("cuda")

        def later[
            U,
        ](self, u: U) -> U:
            return u.to("cuda:1")
    ''')


def found(source: str) -> list[tuple[str, int, int]]:
    return [(f.rule, f.location.line, f.location.column) for f in scan_memory({"m.py": source}, RULES).findings]


def test_pep695_findings_are_reported_at_their_lines_and_columns():
    assert found(PEP695) == [("OPS105", 11, 12), ("OPS101", 17, 23), ("OPS101", 22, 21)]


def test_the_tree_keeps_every_position_of_the_source():
    tree = parse(PEP695, "m.py")
    lines = PEP695.splitlines()
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)]
    for call in calls:   # each call's text is where the tree says it is
        assert lines[call.lineno - 1][call.col_offset:].startswith(ast.unparse(call.func.value))
    assert [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))] == ["move", "Box"]


@pytest.mark.parametrize("source", [
    "import torch\ndef f[T](x:\n    return x.cuda()\n",        # a real syntax error in a generic function
    "import torch\ntype = X = \nx.cuda()\n",
    "import torch\nx = (\nx.cuda()\n",
])
def test_a_real_syntax_error_is_still_ops000(source):
    assert [rule for rule, _, _ in found(source)] == ["OPS000"]


def test_the_fixer_rewrites_a_pep695_file_and_keeps_its_syntax():
    findings = scan_memory({"m.py": PEP695}, RULES).findings
    fixed = fix_source(PEP695, findings, RULES)
    assert [o.status for o in fixed.outcomes] == ["fixed"] * 3
    assert "def move[T: torch.Tensor = torch.Tensor](x: T) -> T:" in fixed.text
    assert ".cuda()" not in fixed.text and '"cuda' not in fixed.text
    assert found(fixed.text) == []


def test_opscan_scan_and_fix_on_a_pep695_project(run_cli, tmp_path, monkeypatch):
    (tmp_path / "gen.py").write_text(PEP695)
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli("scan", ".", "--format", "json", "--no-cache")
    assert code == 1 and '"OPS000"' not in out and out.count('"OPS101"') == 2
    code, _, _ = run_cli("fix", ".")
    assert code == 0
    fixed = (tmp_path / "gen.py").read_text()
    assert "class Box[T, *Ts, **P](torch.nn.Module):" in fixed and ".cuda()" not in fixed
    code, out, _ = run_cli("scan", ".", "--format", "json", "--no-cache")
    assert code == 0 and '"OPS000"' not in out


# PEP 701 f-strings (NOTE [newer f-strings]): valid on 3.12+, rejected by `ast` on 3.11
PEP701 = textwrap.dedent('''\
    import torch

    names = {"dev": "cuda"}
    label = f"{names["dev"]}: {torch.zeros(1).cuda()}" "!"
    wide = f"{label!r:{len(label)}}"
    report = f"""{
        torch.ones(2).to("cuda")   # a comment inside a field
    }"""
    joined = f"{"\\n".join(names)}"
    nested = f"{f"{names["dev"]}"}"
    model = torch.nn.Linear(1, 1).cuda()
    ''')


def test_pep701_findings_are_reported_at_their_lines_and_columns():
    # inside a field with nested same quotes (line 4), inside a multi-line field with a comment
    # (line 7), and outside any f-string (lines 3, 11), each at its own column
    assert found(PEP701) == [("OPS101", 3, 17), ("OPS105", 4, 28), ("OPS101", 7, 22), ("OPS105", 11, 9)]


def test_a_pep701_tree_keeps_every_position_of_the_source():
    tree = parse(PEP701, "m.py")
    lines = PEP701.splitlines()
    names = [n for n in ast.walk(tree) if isinstance(n, ast.Name)]
    assert {n.id for n in names} >= {"names", "label", "torch", "len", "model"}
    for name in names:
        assert lines[name.lineno - 1][name.col_offset:name.end_col_offset] == name.id


@pytest.mark.parametrize("source", [
    'import torch\nx = f"{d["k"]}"\ny = (\nz.cuda()\n',   # a PEP 701 f-string and a real syntax error
    'import torch\nx = f"{d["k"]"\nz.cuda()\n',           # an unterminated field
])
def test_a_real_syntax_error_beside_a_pep701_fstring_is_still_ops000(source):
    assert [rule for rule, _, _ in found(source)] == ["OPS000"]


def test_pep758_except_without_parentheses_is_read_with_every_column_kept():
    """`except A, B:` (3.14) gets its parentheses in the rewrite; a `)` inserted before the colon
    moves nothing of the tree (NOTE [except without parentheses])."""
    source = ("import torch\n"
              "try:\n"
              "    x = torch.zeros(1).cuda()\n"
              "except ValueError, TypeError: y = torch.ones(1).cuda()\n"
              "try:\n"
              "    pass\n"
              "except* KeyError,   IndexError :\n"
              "    z = torch.empty(1).to(\"cuda\")\n")
    lines = source.splitlines()
    assert found(source) == [("OPS105", 3, lines[2].index("torch") + 1), ("OPS105", 4, lines[3].index("torch") + 1),
                             ("OPS101", 8, lines[7].index('"cuda"') + 1)]
    tree = parse(source, "m.py")
    handlers = [n for n in ast.walk(tree) if isinstance(n, ast.ExceptHandler)]
    assert [[ast.unparse(e) for e in h.type.elts] for h in handlers] == [["ValueError", "TypeError"],
                                                                         ["KeyError", "IndexError"]]
    for node in ast.walk(tree):   # every name and call is where the tree says it is
        if isinstance(node, (ast.Name, ast.Call)) and node.lineno == node.end_lineno:
            text = lines[node.lineno - 1].encode()[node.col_offset:node.end_col_offset].decode()
            assert text == ast.unparse(node).replace("'", '"'), text


def test_a_real_syntax_error_beside_an_except_tuple_is_still_ops000():
    source = "import torch\ntry:\n    x = torch.zeros(1).cuda()\nexcept ValueError, TypeError:\n    pass\nx = (\n"
    assert [rule for rule, _, _ in found(source)] == ["OPS000"]


def test_non_ascii_text_blanked_or_rewritten_keeps_the_columns_after_it():
    """`ast` columns are UTF-8 byte offsets: a blanked `é` or `└` must keep its bytes, or every
    finding after it on its line moves (NOTE [newer f-strings], `_Rows`)."""
    source = textwrap.dedent('''\
        import torch

        names = {"é": 1}
        x = f"└── {names["é"]} ünï" + str(torch.zeros(1).cuda())
        type Größe = dict[str, "Ü"]; y = torch.ones(1).cuda()
        def f[T: "Ä"](v: T): return v.to("cuda")
        ''')
    lines = source.splitlines()
    expected = [("OPS105", 4, lines[3].index("torch.zeros") + 1), ("OPS105", 5, lines[4].index("torch.ones") + 1),
                ("OPS101", 6, lines[5].index('"cuda"') + 1)]
    assert expected == [("OPS105", 4, 35), ("OPS105", 5, 34), ("OPS101", 6, 34)]
    assert found(source) == expected
