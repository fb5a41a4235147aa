"""A training command read as `opscan run` reads it: `python SCRIPT ARGS`, `python -m MODULE ARGS`,
`torchrun [OPTIONS] SCRIPT ARGS`, `accelerate launch [OPTIONS] SCRIPT ARGS` or `SCRIPT ARGS`; and the
project a script belongs to. Stdlib only: `opscan run` (commands/run.py) and `opscan PATH` (the
training command found by reading, opscan/pipeline/entry_step.py) both read commands here.
"""

from __future__ import annotations

from pathlib import Path

PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


def parse_command(command: list[str], device: str = "neuron") -> dict:
    """{"script", "argv", "module", "nproc", "env", "summary"} of `python SCRIPT ARGS`, `python -m MODULE
    ARGS`, `torchrun [OPTIONS] SCRIPT ARGS`, `accelerate launch [OPTIONS] SCRIPT ARGS` (NOTE [accelerate
    launch]) or `SCRIPT.py ARGS`. `env`: the variables the launcher sets for the script. Raises UsageError."""
    from opscan.targets.entry.accelerate_launch import parse_accelerate
    from opscan.errors import UsageError

    words = list(command[1:] if command[:1] == ["--"] else command)
    if not words:
        raise UsageError("expected the script's command after `--`, e.g. opscan run -- python train.py")
    nproc = None
    head = Path(words[0]).name
    if head.startswith("python"):
        words = _without_interpreter_options(words[1:])
        if words[:2] == ["-m", "torch.distributed.run"] or words[:2] == ["-m", "torch.distributed.launch"]:
            head, words = "torchrun", words[1:]
        elif words[:2] == ["-m", "accelerate.commands.launch"]:
            head, words = "accelerate", ["accelerate", "launch", *words[2:]]
    if head == "accelerate-launch":   # accelerate's second console script
        head, words = "accelerate", ["accelerate", "launch", *words[1:]]
    if head == "accelerate":
        if words[1:2] != ["launch"]:
            raise UsageError(f"`{' '.join(words[:2])}`: of accelerate's commands "
                             "only `accelerate launch` runs a script")
        return parse_accelerate(words[2:], device)
    if head == "torchrun":
        words = words[1:]
        while words and words[0].startswith("-") and words[0] not in ("-m", "--module"):
            flag, _, value = words.pop(0).partition("=")
            takes = flag not in ("--standalone", "--no-python", "--no_python", "--run-path", "--run_path")
            if takes and not value and words:
                value = words.pop(0)
            if flag in ("--nproc-per-node", "--nproc_per_node") and value.isdigit():
                nproc = int(value)
    module = bool(words) and words[0] in ("-m", "--module")
    if module:
        words = words[1:]
    if not words or words[0].startswith("-"):
        raise UsageError(f"no script in the command {' '.join(command)!r}: expected python SCRIPT ARGS, "
                         "python -m MODULE ARGS, torchrun SCRIPT ARGS or accelerate launch SCRIPT ARGS")
    return {"script": words[0], "argv": words[1:], "module": module, "nproc": nproc, "env": {}, "summary": ""}


# Python's own options before the script (`python -u train.py`, `python -W ignore main.py`): set
# aside, the script's command is what follows (the run is unbuffered and warns as opscan sets it).
_INTERPRETER_FLAGS = frozenset({"-u", "-O", "-OO", "-B", "-E", "-s", "-S", "-I", "-q", "-b", "-bb", "-d", "-v"})
_INTERPRETER_VALUES = frozenset({"-W", "-X"})


def _without_interpreter_options(words: list[str]) -> list[str]:
    index = 0
    while index < len(words):
        word = words[index]
        if word in _INTERPRETER_FLAGS or (word[:2] in _INTERPRETER_VALUES and len(word) > 2):
            index += 1
        elif word in _INTERPRETER_VALUES:
            index += 2
        else:
            break
    return words[index:]


def project_root(script: str, module: bool) -> Path:
    """The script's project: the nearest folder up from it with pyproject.toml, setup.py or .git."""
    start = Path.cwd() if module else Path(script).resolve().parent
    for folder in (start, *start.parents):
        if any((folder / marker).exists() for marker in PROJECT_MARKERS):
            return folder
    return start
