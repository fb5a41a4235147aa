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
is then answered by the run's data stand-ins. A script read alone runs with no arguments (`"$@"` is
nothing, `$#` is 0; `$1` stays as written); read as a README invokes it, its arguments are the
README's (NOTE [a script invoked with its arguments] in sources.py). An `if` whose test the text
decides keeps the branch it selects (NOTE [branches the arguments select] in shell_branches.py);
loops, `case` and functions are not followed: their lines are read as lines.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass, field

from opscan.targets.entry.shell_branches import Branches, decide, segments

WRAPPERS = frozenset({"nohup", "time", "exec", "env", "command", "sudo"})
# a cluster's task launchers, whose own options come before the program (NOTE [a cluster's launcher])
CLUSTER_LAUNCHERS = frozenset({"srun", "mpirun", "mpiexec"})
_PROGRAM = re.compile(r"^(python[\d.]*|torchrun|accelerate|deepspeed|[\w./-]+\.(py|sh))$")
SEPARATORS = frozenset({"&&", "||", ";", "|", "&"})
REDIRECTS = re.compile(r"^(\d*>>?|\d*<|&>|\d*>&\d*)")
_VAR = re.compile(r"\$\{(\w+|[@*#])(?::?-([^}]*))?\}|\$(\w+|[@*#])")
_ALL_QUOTED = re.compile(r'"\$(?:[@*]|\{[@*]\})"')
_ASSIGN = re.compile(r"^(?:export\s+)?([A-Za-z_]\w*)=(.*)$")
# a README's `<int>`, `<path_to_data>`, `[MODEL]` where the reader puts a value: not a redirection, not
# a glob (NOTE [placeholders])
_PLACEHOLDER = re.compile(r"(?<!\S)(?:<([A-Za-z_][\w.-]*)>|\[([A-Za-z_][\w.-]*)\])(?!\S)")
_HOLE = "__opscan_placeholder__"   # + the placeholder's name
# `bash run.sh ARGS` (NOTE [a script invoked with its arguments])
INVOKERS = frozenset({"bash", "sh", "zsh", "source", "."})


@dataclass
class Shell:
    """What the text read so far has set: variables and the folder commands run from."""

    variables: dict[str, str] = field(default_factory=dict)
    cwd: str = ""                         # relative to the project root ("" = the root)
    unset: set[str] = field(default_factory=set)   # variables used but never set
    arguments: tuple[str, ...] | None = None       # the script's arguments, when a text invokes it
                                                   # (NOTE [a script invoked with its arguments])

    def expand(self, text: str) -> str:
        given = self.arguments or ()
        text = _ALL_QUOTED.sub(lambda _: shlex.join(given), text)   # `"$@"`: each argument one word

        def one(match: re.Match) -> str:
            name = match.group(1) or match.group(3)
            default = match.group(2)
            if name in self.variables:
                value = self.variables[name]
            elif name in ("@", "*"):
                value = " ".join(given)   # none when the script is read alone (`bash train.sh`)
            elif name == "#":
                value = str(len(given))
            elif name.isdigit() and self.arguments is not None and \
                    not _PLACEHOLDER.fullmatch(given[int(name) - 1] if 0 < int(name) <= len(given) else ""):
                value = given[int(name) - 1] if 0 < int(name) <= len(given) else ""
            else:   # never set, or invoked with a placeholder (`bash run.sh <gpu_id> msl`): unknown
                if default is not None:
                    return default
                self.unset.add(name)
                return match.group(0)
            return default if default is not None and not value else value
        return _VAR.sub(one, text)


@dataclass(frozen=True)
class Simple:
    """One simple command: its words (program first), the folder it runs from, the line it starts at."""

    words: tuple[str, ...]
    cwd: str
    line: int
    unset: tuple[str, ...] = ()
    read_as: tuple[str, ...] = ()         # how the text was read beyond the shell (NOTE [documentation continuations])
    via: str = ""                         # the invocation of the script it was read in
                                          # (NOTE [a script invoked with its arguments])


# NOTE [documentation continuations]
# A README is documentation: its commands are read as the author meant them, even where a shell
# would read them otherwise, and the entry's reason says so. Two ways of writing a long command
# that a shell misreads:
# - a `\` followed by spaces and a `# comment` (`--teacher_name wrn-28-4 \   # the teacher`):
#   bash reads an escaped space (a stray `' '` argument) and ends the command at the comment; the
#   author meant a continuation with a note beside it;
# - PowerShell's backtick at the end of a line (`python src/main.py `` then `--lr 0.001 ``): the
#   author's shell continues the line there; in bash it opens a command substitution.
# Both are read as continuations; nothing else changes (a `\` inside quotes before `#` is rare
# enough in a command that it is not told apart).
_COMMENTED_CONTINUATION = re.compile(r"(?<=\s)\\\s+#.*$")
_BACKTICK_CONTINUATION = re.compile(r"(?<=\s)`$")
COMMENTED = "a `\\` before a comment read as a line continuation"
BACKTICKS = "PowerShell backticks read as line continuations"


def logical_lines(text: str, first: int = 1) -> list[tuple[int, str, tuple[str, ...]]]:
    """(line number, text, how it was read) of each logical line: `\\` continuations joined (and the
    documentation's continuations: NOTE [documentation continuations]), prompts (`$ `, `>>> ` is
    not shell) and comments dropped."""
    out: list[tuple[int, str, tuple[str, ...]]] = []
    pending, start, read_as = "", first, ()
    for number, raw in enumerate(text.splitlines(), first):
        line = raw.rstrip()
        if not pending:
            start, read_as = number, ()
            stripped = line.lstrip()
            if stripped.startswith("$ "):
                line = stripped[2:]
        for pattern, said in ((_COMMENTED_CONTINUATION, COMMENTED), (_BACKTICK_CONTINUATION, BACKTICKS)):
            match = pattern.search(line)
            if match and not line.lstrip().startswith("#"):
                line = line[:match.start()].rstrip() + " \\"
                read_as = read_as if said in read_as else (*read_as, said)
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        joined = (pending + line).strip()
        pending = ""
        if joined and not joined.startswith("#"):
            out.append((start, joined, read_as))
    if pending.strip():
        out.append((start, pending.strip(), read_as))
    return out


def commands(text: str, shell: Shell | None = None, first: int = 1) -> list[Simple]:
    """The simple commands of shell `text`, in order, with the shell's state followed (NOTE [shell read, not run])."""
    shell = shell if shell is not None else Shell()
    found: list[Simple] = []
    branches = Branches()
    for number, line_read, read_as in logical_lines(text, first):
        for line in segments(line_read):
            if branches.control(line, lambda test: decide(shell.expand(test))) or not branches.running:
                continue   # NOTE [branches the arguments select]
            _command(line, shell, number, read_as, found)
    return found


def _command(line: str, shell: Shell, number: int, read_as: tuple[str, ...], found: list[Simple]) -> None:
    """Read one segment of a logical line: an assignment sets a variable, `cd` moves, the rest are
    simple commands appended to `found`."""
    assigned = _ASSIGN.match(line)
    if assigned and _one_word(assigned.group(2)):
        shell.variables[assigned.group(1)] = _unquote(shell.expand(assigned.group(2)))
        return
    shell.unset.clear()
    line, chosen = _first_alternatives(line)   # NOTE [alternatives of a usage line]
    read_as = (*read_as, *chosen)
    try:
        lexer = shlex.shlex(_PLACEHOLDER.sub(lambda m: _HOLE + (m.group(1) or m.group(2)), shell.expand(line)),
                            posix=True,
                            punctuation_chars=";&|<>")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words = list(lexer)
    except ValueError:   # an unclosed quote: not a command a user could type
        return
    for part in _split(words):
        part = _program_first(part)
        invokes = bool(part) and (part[0] in INVOKERS or part[0].endswith((".sh", ".bash")))
        part = [f"<{w.removeprefix(_HOLE)}>" if w.startswith(_HOLE) else w for w in part] if invokes \
            else _unfilled(part)
        if not part:
            continue
        if part[0] == "cd":
            target = part[1] if len(part) > 1 else ""
            if target and not target.startswith(("/", "~", "$", "-")):
                shell.cwd = _moved(shell.cwd, target)
            continue
        found.append(Simple(tuple(part), shell.cwd, number, tuple(sorted(shell.unset)), read_as))


# NOTE [alternatives of a usage line]
# A README's usage line lists the values an option takes in its slot: `python model_main.py
# --track=[logical/physical] --features=[spect/mfcc/cqcc]`. Passed as written, the script reads the
# whole slot as the value and refuses it (`assert features in (...)`: "Not supported feature"). A
# bracketed (or angled) list of two or more plain words joined by `/` or `|`, standing as an option's
# value (after `=` or alone), is read as its first choice (`--track=logical`), and the reading says
# so; a single `[NAME]` stays a placeholder (NOTE [placeholders]).
_ALTERNATIVES = re.compile(r"(?<=[=\s])(?:\[([\w.+-]+(?:[/|][\w.+-]+)+)\]|<([\w.+-]+(?:\|[\w.+-]+)+)>)(?=\s|$)")


def _first_alternatives(line: str) -> tuple[str, tuple[str, ...]]:
    """`line` with each usage slot of alternatives read as its first choice, and how each was read."""
    chosen: list[str] = []

    def first(match: re.Match) -> str:
        listed = match.group(1) or match.group(2)
        value = re.split(r"[/|]", listed)[0]
        chosen.append(f"{match.group(0)} as {value} (its first choice)")
        return value

    return _ALTERNATIVES.sub(first, line), tuple(chosen)


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
    word `<name>` alone between spaces is a placeholder, and so is `[NAME]` (`python train_dis.py
    [MODEL] [RESUME] [DEVICE]`: a usage line's slots, which the shell would pass as they are and the
    script's parser refuses: exit 2); it and its option are dropped, so the
    option's default applies, or, when it is required, a value is chosen for it as for any
    required argument (required_args.py). An argument of a shell script's invocation (`bash run.sh
    <gpu_id> msl`) stays as written: dropping it would move the next one to its place, `$1`."""
    out: list[str] = []
    for word in words:
        if word.startswith(_HOLE):
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
        elif word in CLUSTER_LAUNCHERS:   # NOTE [a cluster's launcher]
            following = next((i for i in range(index + 1, len(words))
                              if _PROGRAM.match(posixpath.basename(words[i]))), None)
            if following is None:
                break
            index = following
        else:
            break
    return words[index:]


# NOTE [a cluster's launcher]
# Research code trained on a cluster writes its command behind the cluster's task launcher: `srun
# python -u ../train.py ...` in a SLURM batch script, `mpirun -np 4 python train.py`. The launcher
# starts one copy of the program per task; its own options (`-n 4`, `--gres=gpu:1`) come before the
# program. The command read is the program's: from the first word that is a Python launcher
# (`python`, `torchrun`, `accelerate`, `deepspeed`) or a script, the launcher and its options set
# aside (one task: the run is rank 0 of its job, as for torchrun).


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    try:
        parts = shlex.split(value)
    except ValueError:
        return value
    return " ".join(parts)
