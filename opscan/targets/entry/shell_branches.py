"""The `if` / `elif` / `else` / `fi` of shell text, followed where the text decides them: which lines
of a script run once its variables and arguments are known. Stdlib only; nothing is run.

NOTE [branches the arguments select]
`bash run.sh cpu msl` runs one branch of `if [[ "$gpu_n" == "cpu" ]]; then python main.py ... -device
cpu; else CUDA_VISIBLE_DEVICES=$gpu_n python main.py ...; fi`. A test is decided when, once the
text's variables (and the arguments the script was invoked with) are expanded, it is one of the
forms a script compares words with: `[ A = B ]`, `[[ A == B ]]`, `!=`, `-z A`, `-n A`, `test ...`,
each maybe negated with `!`, and no word still holds a `$`. A decided `if` keeps only the branch it
selects (the first true test of an `elif` chain, else the `else`); an undecided one keeps every
branch, read as lines (what the reading did before branches were followed). Loops and `case` are not
followed.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

_KEYWORD = re.compile(r";\s*(?=(?:then|else|elif|fi)\b)")
_LEAD = re.compile(r"^(then|else)\s+(.+)$", re.S)


@dataclass
class _If:
    decided: bool     # every test so far was decided
    taken: bool       # a branch was already selected
    active: bool      # the lines of the current branch run


class Branches:
    """The stack of open `if`s of a text read line by line."""

    def __init__(self) -> None:
        self._stack: list[_If] = []

    @property
    def running(self) -> bool:
        """The lines read now run (every open `if` is in a branch that runs)."""
        return all(item.active for item in self._stack)

    def control(self, segment: str, decide: Callable[[str], bool | None]) -> bool:
        """Follow `segment` when it is a control word (`if COND`, `elif COND`, `else`, `fi`, `then`);
        True when it was one (the caller reads nothing else of it). `decide` tells a test's value,
        None when the text does not decide it."""
        word = segment.split(None, 1)[0] if segment.strip() else ""
        if word == "if":
            running = self.running
            value = decide(segment[2:].strip()) if running else None
            self._stack.append(_If(value is not None, bool(value), value is not False))
        elif word == "elif" and self._stack:
            top = self._stack[-1]
            if not top.decided:
                top.active = True
            elif top.taken:
                top.active = False
            else:
                value = decide(segment[4:].strip())
                top.decided, top.active = value is not None, value is not False
                top.taken = bool(value)
        elif word == "else" and self._stack:
            top = self._stack[-1]
            top.active = not top.decided or not top.taken
        elif word == "fi" and self._stack:
            self._stack.pop()
        elif word != "then":
            return False
        return True


def segments(line: str) -> list[str]:
    """A logical line cut before its control words: `if [ x ]; then python a.py; else python b.py;
    fi` gives `if [ x ]`, `then`, `python a.py`, `else`, `python b.py`, `fi`."""
    out: list[str] = []
    for part in _KEYWORD.split(line):
        part = part.strip()
        lead = _LEAD.match(part)
        out.extend((lead.group(1), lead.group(2)) if lead else (part,))
    return [part for part in out if part]


def decide(condition: str) -> bool | None:
    """The value of an expanded test (NOTE [branches the arguments select]), None when undecided."""
    try:
        words = shlex.split(condition)
    except ValueError:
        return None
    negate = False
    if words[:1] == ["!"]:
        negate, words = True, words[1:]
    brackets = len(words[0]) if words[:1] in (["["], ["[["]) else 0
    if brackets and words[-1:] == ["]" * brackets]:
        words = words[1:-1]
    elif words[:1] == ["test"]:
        words = words[1:]
    else:
        return None
    if any("$" in word or "`" in word for word in words):
        return None
    value: bool | None = None
    if len(words) == 3 and words[1] in ("=", "=="):   # `[[ $x == cuda* ]]` matches a pattern
        value = fnmatch.fnmatchcase(words[0], words[2]) if brackets == 2 else words[0] == words[2]
    elif len(words) == 3 and words[1] == "!=":
        value = words[0] != words[2]
    elif len(words) == 2 and words[0] == "-z":
        value = words[1] == ""
    elif len(words) == 2 and words[0] == "-n":
        value = words[1] != ""
    if value is None:
        return None
    return not value if negate else value
