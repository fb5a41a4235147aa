"""The required options of a script's own argparse parser, filled for a command that writes none
(NOTE [required options filled]).

NOTE [required options filled]
A script found training when run (kind main-step: no command written anywhere) whose parser has
options with `required=True` exits 2 in its parser when run with no arguments. Where a README or a
doc writes the command, its arguments are the authors' (ranking.py; also one folder down, NOTE [a
written command run from its script's folder]). Where nothing is written, each required option is
given a value read from its declaration, and the command says so:
- `choices=[...]` written as literals: the first choice;
- `type=int` / `type=float`: 1 / 1.0 (a size or rate: the trace needs a valid value, not the
  authors' one);
- anything else: the option's own name as a string (a placeholder: a dataset or folder name, which
  the data stand-ins answer when the script reads it).
A positional argument (`add_argument('path', type=str)`, no `nargs` of `?` or `*`, no default) is
required as well: it gets a value by the same rule, its own name for a path (`path`: the data
stand-ins answer an absent folder of that name). Only literal declarations are read (never run).
"""

from __future__ import annotations

import ast


def required_options(tree: ast.Module) -> list[tuple[str, str, str]]:
    """(option, value, how it was chosen) of every `add_argument('--x', required=True, ...)` of the file,
    and (``, value, how) of each required positional argument, in the order declared."""
    out: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            continue
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if len(flags) == 1 and flags[0] and not flags[0].startswith("-") and _positional_required(keywords):
            if flags[0] not in seen:
                seen.add(flags[0])
                out.append(("", *_value(flags[0], keywords)))
            continue
        required = keywords.get("required")
        if not (isinstance(required, ast.Constant) and required.value is True):
            continue
        option = next((f for f in flags if f.startswith("--")), next((f for f in flags if f.startswith("-")), ""))
        if not option or option in seen:
            continue
        seen.add(option)
        out.append((option, *_value(option, keywords)))
    return out


def _positional_required(keywords: dict[str, ast.expr]) -> bool:
    """A positional argument argparse requires: no default, no `nargs` that allows none, not a flag."""
    nargs = keywords.get("nargs")
    if isinstance(nargs, ast.Constant) and nargs.value in ("?", "*"):
        return False
    if "default" in keywords or "action" in keywords:
        return False
    return not (nargs is not None and not isinstance(nargs, ast.Constant))


def _value(option: str, keywords: dict[str, ast.expr]) -> tuple[str, str]:
    choices = keywords.get("choices")
    if isinstance(choices, (ast.List, ast.Tuple)) and choices.elts and isinstance(choices.elts[0], ast.Constant):
        return str(choices.elts[0].value), "its first choice"
    kind = keywords.get("type")
    if isinstance(kind, ast.Name) and kind.id == "int":
        return "1", "an int: 1"
    if isinstance(kind, ast.Name) and kind.id == "float":
        return "1.0", "a float: 1.0"
    name = option.lstrip("-").replace("-", "_")
    return name, "a placeholder: its own name"


def filled(tree: ast.Module) -> tuple[list[str], str]:
    """(the words to add, what the command says of them) for the required options of `tree`."""
    options = required_options(tree)
    if not options:
        return [], ""
    words = [value for option, value, _ in options if not option]   # positionals first, in order
    words += [w for option, value, _ in options if option for w in (option, value)]
    said = ", ".join(f"{option} {value} ({how})" if option else f"{value} ({how}, positional)"
                     for option, value, how in options)
    return words, f"; required options no command writes, filled (assumed): {said}"
