"""Shell text read as the commands it runs: lines joined at `\\`, split into simple commands at `&&`,
`;`, `||` and `|`, variables expanded where the text sets them, `cd` followed, and the words
before the program (`CUDA_VISIBLE_DEVICES=0`, `nohup`, `time`) set aside. Stdlib only; nothing is run.

NOTE [shell read, not run]
A README block, a `scripts/train.sh` or a Makefile recipe is read the way a user reads it to type
the command: `shlex` splits the words, `VAR=value` and `export VAR=value` lines set what later
`$VAR`, `${VAR}` and `${VAR:-default}` expand to (a default is taken when the text never sets the
variable), `cd DIR` moves the folder the following commands run from, and everything past a
redirection or a background `&` is dropped. What the text does not set (`$1`, `$DATA_ROOT` from
the user's shell) stays as written and is named in the entry's reason; a path that does not exist
is then answered by the run's data stand-ins. Loops, conditionals and functions are not followed:
their lines are read as lines.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass, field

WRAPPERS = frozenset({"nohup", "time", "exec", "env", "command", "sudo"})
SEPARATORS = frozenset({"&&", "||", ";", "|", "&"})
REDIRECTS = re.compile(r"^(\d*>>?|\d*<|&>|\d*>&\d*)")
_VAR = re.compile(r"\$\{(\w+)(?::?-([^}]*))?\}|\$(\w+)")
_ASSIGN = re.compile(r"^(?:export\s+)?([A-Za-z_]\w*)=(.*)$")
# a README's `<int>`, `<path_to_data>` where the reader puts a value: not a redirection (NOTE [placeholders])
_PLACEHOLDER = re.compile(r"(?<!\S)<[A-Za-z_][\w.-]*>(?!\S)")
_HOLE = "__opscan_placeholder__"


@dataclass
class Shell:
    """What the text read so far has set: variables and the folder commands run from."""

    variables: dict[str, str] = field(default_factory=dict)
    cwd: str = ""                         # relative to the project root ("" = the root)
    unset: set[str] = field(default_factory=set)   # variables used but never set

    def expand(self, text: str) -> str:
        def one(match: re.Match) -> str:
            name = match.group(1) or match.group(3)
            default = match.group(2)
            if name in self.variables:
                return self.variables[name]
            if default is not None:
                return default
            self.unset.add(name)
            return match.group(0)
        return _VAR.sub(one, text)


@dataclass(frozen=True)
class Simple:
    """One simple command: its words (program first), the folder it runs from, the line it starts at."""

    words: tuple[str, ...]
    cwd: str
    line: int
    unset: tuple[str, ...] = ()


def logical_lines(text: str, first: int = 1) -> list[tuple[int, str]]:
    """(line number, text) of each logical line: `\\` continuations joined, prompts (`$ `, `>>> ` is
    not shell) and comments dropped."""
    out: list[tuple[int, str]] = []
    pending, start = "", first
    for number, raw in enumerate(text.splitlines(), first):
        line = raw.rstrip()
        if not pending:
            start = number
            stripped = line.lstrip()
            if stripped.startswith("$ "):
                line = stripped[2:]
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        joined = (pending + line).strip()
        pending = ""
        if joined and not joined.startswith("#"):
            out.append((start, joined))
    if pending.strip():
        out.append((start, pending.strip()))
    return out


def commands(text: str, shell: Shell | None = None, first: int = 1) -> list[Simple]:
    """The simple commands of shell `text`, in order, with the shell's state followed (NOTE [shell read, not run])."""
    shell = shell if shell is not None else Shell()
    found: list[Simple] = []
    for number, line in logical_lines(text, first):
        assigned = _ASSIGN.match(line)
        if assigned and _one_word(assigned.group(2)):
            shell.variables[assigned.group(1)] = _unquote(shell.expand(assigned.group(2)))
            continue
        shell.unset.clear()
        try:
            lexer = shlex.shlex(_PLACEHOLDER.sub(_HOLE, shell.expand(line)), posix=True, punctuation_chars=";&|<>")
            lexer.whitespace_split = True
            lexer.commenters = "#"
            words = list(lexer)
        except ValueError:   # an unclosed quote: not a command a user could type
            continue
        for part in _split(words):
            part = _program_first(_unfilled(part))
            if not part:
                continue
            if part[0] == "cd":
                target = part[1] if len(part) > 1 else ""
                if target and not target.startswith(("/", "~", "$", "-")):
                    shell.cwd = _moved(shell.cwd, target)
                continue
            found.append(Simple(tuple(part), shell.cwd, number, tuple(sorted(shell.unset))))
    return found


def _moved(cwd: str, target: str) -> str:
    """The folder after `cd target` from `cwd` (both relative to the root; "" = the root)."""
    path = posixpath.normpath(posixpath.join(cwd or ".", target))
    return "" if path == "." else path


def _one_word(value: str) -> bool:
    try:
        return len(shlex.split(value)) == 1
    except ValueError:
        return False


def _split(words: list[str]) -> list[list[str]]:
    """Simple commands at `&&`, `||`, `;`, `|`, `&`; words past a redirection dropped."""
    parts: list[list[str]] = [[]]
    skip = False
    for word in words:
        if word in SEPARATORS:
            parts.append([])
            skip = False
            continue
        if skip:
            continue
        if REDIRECTS.match(word) and word.strip("<>&0123456789") == "":
            skip = True   # `> log.txt 2>&1`: the rest of this command is where its output goes
            continue
        parts[-1].append(word)
    return [p for p in parts if p]


def _unfilled(words: list[str]) -> list[str]:
    """The words with each placeholder dropped, and the option it was the value of.

    NOTE [placeholders]
    `python Train.py -s <int>` is a README's way of saying "put a number here"; read as shell, `<int>`
    is a redirection from a file `int>` and left `-s` without its value (argparse then exits 2). A
    word `<name>` alone between spaces is a placeholder: it and its option are dropped, so the
    option's default applies, or, when it is required, a value is chosen for it as for any
    required argument (required_args.py)."""
    out: list[str] = []
    for word in words:
        if word == _HOLE:
            if out and out[-1].startswith("-") and "=" not in out[-1] and len(out) > 1:
                out.pop()
            continue
        out.append(word)
    return out


def _program_first(words: list[str]) -> list[str]:
    """The words from the program on: leading `VAR=value` (set for that command only) and wrappers
    (`nohup`, `time`, `env`) set aside."""
    index = 0
    while index < len(words):
        word = words[index]
        if _ASSIGN.match(word) and not word.startswith("-"):
            index += 1
        elif word in WRAPPERS:
            index += 1
        else:
            break
    return words[index:]


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    try:
        parts = shlex.split(value)
    except ValueError:
        return value
    return " ".join(parts)
