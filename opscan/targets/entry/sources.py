"""Where a project writes its training command down, read as text (never run): the shell blocks of
its README and docs, its shell scripts, its Makefile recipes and its `[project.scripts]`; each gives
the simple commands it holds (opscan/targets/entry/shell_words.py) with where they were read.
Stdlib only; every file through the run's project index (each file read once).
"""

from __future__ import annotations

import posixpath
import re
import shlex
import tomllib
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

from opscan.targets.entry.shell_words import INVOKERS, Shell, Simple, commands
from opscan.records import EntryKind

SHELL_LANGUAGES = frozenset({"", "sh", "bash", "shell", "console", "zsh", "shell-session", "bash-session",
                             "shellsession", "text", "none", "cmd"})
_FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)")
_RST_BLOCK = re.compile(r"^\.\. (?:code-block|code|sourcecode)::\s*(\w*)\s*$")
# NOTE [inline commands]
# READMEs also give the command in prose, as inline code: "2. Train: `python main.py`." A Markdown
# inline code span (single backticks, outside code blocks) that starts with a Python launcher
# (`python`, `python3`, `py`, `torchrun`, `accelerate launch`) is read as a command too, after the
# document's code blocks (a block is the authors' fuller command): the ranking then keeps it only
# when its script exists and trains, as for any command.
# A line that is one emphasised command (`*python train.py --dataroot ./datasets/train/*`, `**...**`,
# `_..._`), as READMEs without code formatting write it, is read the same way: the emphasis is the
# author's only mark of a command; within a sentence an emphasised span is prose.
_INLINE = re.compile(r"(?<!`)`((?:python3?|py|torchrun|accelerate launch) [^`\n]+)`(?!`)")
_EMPHASISED = re.compile(r"^\s*(?:[-*+]\s+|\d+[.)]\s+)?(\*{1,2}|_{1,2})"
                         r"((?:python3?|py|torchrun|accelerate launch) .+?)\1\s*$")
MAX_SHELL_SCRIPTS = 200
MAX_DOCUMENTS = 200


@dataclass(frozen=True)
class Found:
    """A simple command read from `path` (relative to the root), of the entry kind `kind`."""

    simple: Simple
    kind: str
    path: str
    context: str = ""                    # a Makefile target's name
    base: str = ""                       # the file's folder: a script path not found from the root is
                                         # looked for from there (a `scripts/train.sh` run as `bash train.sh`)


# NOTE [a document's own folder]
# A README one folder down (`code/README.md`, `DinoImpl/README.md`) writes its commands from its own
# folder: `cd fbank_net/training; python clean_100.py` means `code/fbank_net/training/clean_100.py`.
# A document's commands are looked for from the root first (docs/ pages usually write them from
# there), then from the document's folder joined with the folder its text `cd`s into, then from the
# document's folder; as for a shell script, the first that holds the script is where it runs.


def documents(index) -> list[Found]:
    """Commands of the shell blocks of README files (kind `readme`) and other Markdown / reST files,
    docs/ first (kind `docs`), in the order of the walk."""
    out: list[Found] = []
    count = 0
    for path in index.paths(lambda p: p.suffix.lower() in (".md", ".rst", ".markdown") or
                            p.name.lower() in ("readme", "readme.txt")):
        rel = index.rel(path)
        count += 1
        if count > MAX_DOCUMENTS:
            break
        text = index.text(rel, max_bytes=2_000_000)
        if text is None:
            continue
        kind = EntryKind.README if PurePosixPath(rel).name.lower().startswith("readme") and "/" not in rel \
            else EntryKind.DOCS
        folder = str(PurePosixPath(rel).parent)
        for first, block, console in _blocks(text, rel.lower().endswith(".rst")):
            if console:   # a console session: only the prompted lines (and their continuations) are commands
                block = _prompted_lines(block)
            for simple in commands(block, Shell(), first):
                base = "" if folder == "." else folder   # NOTE [a document's own folder]
                out.append(Found(simple, kind, rel, base=base))
                out.extend(_through_script(index, simple, kind, rel, base))
    return out


# NOTE [a script invoked with its arguments]
# A README often runs a shell script rather than Python (`bash run.sh cpu msl`, `source
# scripts/train.sh`, `./train.sh configs/a.yaml`). Read alone, that script's `$1`, `$2` are unknown
# (they stay as written, a literal `'$2'` argument), and both branches of its `if [[ "$1" == "cpu"
# ]]` are read. Read as the README invokes it, its positional parameters are the README's words
# (`$1`=cpu, `$2`=msl, `$@`, `$#`; a parameter past them is empty, `${3:-x}` takes its default),
# its `if`s follow the branch those values select (NOTE [branches the arguments select]), and it
# runs from the folder the README runs it in. Its commands are then the README's (kind readme or
# docs, at the README's line, ranked as the README's), their reason naming the script and its line.
# One level only: a script the invoked script invokes is read alone, as any shell script.


def _through_script(index, simple: Simple, kind: str, path: str, base: str) -> list[Found]:
    """The commands of the project shell script `simple` invokes, read with its arguments (NOTE [a
    script invoked with its arguments]); none when it invokes none."""
    words = list(simple.words)
    if words[0] in INVOKERS:
        words = words[1:]
        while words and words[0].startswith("-"):   # `bash -x run.sh`
            words = words[1:]
    elif not words[0].endswith((".sh", ".bash")):
        return []
    if not words or not words[0].endswith((".sh", ".bash")) or words[0].startswith(("/", "~", "$")):
        return []
    within = posixpath.normpath(posixpath.join(base, simple.cwd)) if base and simple.cwd else base
    for folder in dict.fromkeys((simple.cwd, within, base)):
        rel = posixpath.normpath(posixpath.join(folder, words[0]) if folder else words[0])
        if rel.startswith("..") or not (index.root / rel).is_file():
            continue
        text = index.text(rel, max_bytes=500_000)
        if text is None:
            return []
        invoked = shlex.join(simple.words)
        shell = Shell(cwd=folder, arguments=tuple(words[1:]))
        own = posixpath.dirname(rel)
        return [Found(replace(inner, line=simple.line, via=f"through `{invoked}` ({rel}:{inner.line})"), kind, path,
                      base=own) for inner in commands(text, shell)]
    return []


def shell_scripts(index) -> list[Found]:
    """Commands of the project's shell scripts (`*.sh`, `*.bash`), each read with its own variables."""
    out: list[Found] = []
    for count, path in enumerate(index.paths(lambda p: p.suffix in (".sh", ".bash")), 1):
        if count > MAX_SHELL_SCRIPTS:
            break
        rel = index.rel(path)
        text = index.text(rel, max_bytes=500_000)
        if text is None:
            continue
        folder = str(PurePosixPath(rel).parent)
        out.extend(Found(simple, EntryKind.SHELL_SCRIPT, rel, base="" if folder == "." else folder)
                   for simple in commands(text, Shell()))   # run from the root, as READMEs say (`bash scripts/x.sh`)
    return out


def makefiles(index) -> list[Found]:
    """Commands of the recipes of the project's Makefiles, `$(VAR)` expanded; the target named."""
    out: list[Found] = []
    for path in index.paths(lambda p: p.name in ("Makefile", "makefile", "GNUmakefile")):
        rel = index.rel(path)
        if rel.count("/") > 1:
            continue
        text = index.text(rel, max_bytes=500_000)
        if text is None:
            continue
        folder = str(PurePosixPath(rel).parent)
        variables: dict[str, str] = {}
        target = ""
        for number, raw in enumerate(text.splitlines(), 1):
            if raw.startswith("\t") and target:
                line = re.sub(r"\$\((\w+)\)|\$\{(\w+)\}",
                              lambda m: variables.get(m.group(1) or m.group(2), m.group(0)), raw.strip())
                line = line.lstrip("@-+ ")
                shell = Shell(variables=dict(variables), cwd="" if folder == "." else folder)
                out.extend(Found(simple, EntryKind.MAKEFILE, rel, target) for simple in commands(line, shell, number))
                continue
            assign = re.match(r"^([A-Za-z_]\w*)\s*(::=|:=|\?=|=)\s*(.*)$", raw)
            if assign:
                name, how, value = assign.groups()
                if how != "?=" or name not in variables:   # `?=` sets only what is not set
                    variables[name] = value.strip()
                continue
            rule = re.match(r"^([A-Za-z0-9_.\-/]+)\s*:(?!=)", raw)
            target = rule.group(1) if rule else ("" if raw and not raw.startswith("\t") else target)
    return out


def project_scripts(index) -> dict[str, tuple[str, int]]:
    """[project.scripts] (and [tool.poetry.scripts]) of the root's pyproject.toml: name -> (`module:function`, line)."""
    text = index.text("pyproject.toml", max_bytes=1_000_000)
    if text is None:
        return {}
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError):
        return {}
    found: dict[str, str] = {}
    for table in (_table(data, "project", "scripts"), _table(data, "tool", "poetry", "scripts")):
        if table:
            found.update({k: v for k, v in table.items() if isinstance(v, str) and ":" in v})
    lines = text.splitlines()
    out: dict[str, tuple[str, int]] = {}
    for name, target in found.items():
        pattern = re.compile(rf"^\s*['\"]?{re.escape(name)}['\"]?\s*=")
        line = next((n for n, raw in enumerate(lines, 1) if pattern.match(raw)), 0)
        out[name] = (target, line)
    return out


def _blocks(text: str, rst: bool) -> list[tuple[int, str, bool]]:
    """(first line, text, is a console session) of each shell code block of a Markdown or reST text."""
    out: list[tuple[int, str, bool]] = []
    inline: list[tuple[int, str, bool]] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        fence = _FENCE.match(line)
        if fence and fence.group(2).startswith("`") and "`" in line[fence.end(2):]:
            fence = None   # "```python setup.py install```": inline code (a backtick fence's info has no backtick)
        if fence:
            marker, language = fence.group(2), fence.group(3).lower()
            end = index + 1
            while end < len(lines) and not lines[end].lstrip().startswith(marker[:3]):
                end += 1
            if language in SHELL_LANGUAGES:
                body = "\n".join(lines[index + 1:end])
                out.append((index + 2, body, language in ("console", "shell-session", "bash-session",
                                                          "shellsession") or _prompted(body)))
            index = end + 1
            continue
        block = _RST_BLOCK.match(line.strip()) if rst else None
        if block and block.group(1).lower() in SHELL_LANGUAGES:
            end = index + 1
            while end < len(lines) and (not lines[end].strip() or lines[end].startswith((" ", "\t"))):
                end += 1
            body = "\n".join(lines[index + 1:end])
            out.append((index + 2, body, _prompted(body)))
            index = end
            continue
        inline.extend((index + 1, span, False) for span in _INLINE.findall(line) if not rst)
        emphasised = None if rst else _EMPHASISED.match(line)
        if emphasised:
            inline.append((index + 1, emphasised.group(2).strip(), False))
        index += 1
    return out + inline   # NOTE [inline commands]: after the document's blocks


def _prompted_lines(block: str) -> str:
    """A console session's commands: `$ ` lines and the lines they continue with `\\`; the rest blank
    (its output), so line numbers stay those of the file."""
    out, going = [], False
    for line in block.splitlines():
        stripped = line.lstrip()
        if stripped.startswith("$ ") or going:
            out.append(stripped[2:] if stripped.startswith("$ ") and not going else line)
            going = line.rstrip().endswith("\\")
        else:
            out.append("")
    return "\n".join(out)


def _prompted(body: str) -> bool:
    """Every command line of the block starts with a `$ ` prompt (the rest is output)."""
    lines = [line.strip() for line in body.splitlines() if line.strip()]
    return bool(lines) and any(line.startswith("$ ") for line in lines) and \
        all(line.startswith("$ ") for line in lines if line.startswith(("python", "torchrun", "accelerate")))


def _table(data: dict, *keys: str) -> dict:
    """data[k1][k2]... when each level is a table, else {} (valid TOML may hold a value there: `tool = "x"`)."""
    for key in keys:
        value = data.get(key)
        if not isinstance(value, dict):
            return {}
        data = value
    return data
