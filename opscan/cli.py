"""Command line: argv -> the command's run(); an OpscanError is printed as one line and exits 2.

Exit codes: 0 clean, 1 something at or above the failing threshold was found, 2 usage, config or
input error. `opscan PATH` (no sub-command) runs the `check` command: the whole answer for PATH.
"""

from __future__ import annotations

import argparse
import difflib
import gc
import importlib
import os
import sys
from collections.abc import Sequence

from opscan import __version__
from opscan.errors import ConfigError, OpscanError

# Each command module defines HELP (one line), add_arguments(parser) and run(args) -> int.
# They are imported only when needed, and none imports torch at module level.
COMMANDS: dict[str, str] = {
    "check": "opscan.commands.check",
    "scan": "opscan.commands.scan",
    "trace": "opscan.commands.trace",
    "db": "opscan.commands.db",
    "rules": "opscan.commands.rules",
    "baseline": "opscan.commands.baseline",
    "parity": "opscan.commands.parity",
    "preflight": "opscan.commands.preflight",
    "payback": "opscan.commands.payback",
    "zoo": "opscan.commands.zoo",
    "init": "opscan.commands.init",
    "fix": "opscan.commands.fix",
    "run": "opscan.commands.run",
}
DEFAULT_COMMAND = "check"


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so usage errors share the one-line format
    `opscan: error: ...` (main prints the prefix once), with the closest flag or choice suggested."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise _ArgError(message)

    def parse_args(self, args=None, namespace=None):  # type: ignore[override]
        namespace, extras = self.parse_known_args(args, namespace)
        if extras:
            raise _ArgError(_unrecognized(_command_parser(self, namespace), extras))
        return namespace

    def _check_value(self, action, value):  # an invalid choice names the closest one
        if action.choices is not None and value not in action.choices:
            choices = [str(choice) for choice in action.choices]
            close = difflib.get_close_matches(str(value), choices, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise argparse.ArgumentError(
                action, f"invalid choice: {value!r} (choose from {', '.join(map(repr, choices))}){hint}")
        return super()._check_value(action, value)


class _ArgError(Exception):
    pass


def _command_parser(parser: argparse.ArgumentParser, namespace) -> argparse.ArgumentParser:
    """The innermost sub-command's parser (`opscan db show`): its flags are the ones to suggest."""
    while True:
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        chosen = getattr(namespace, sub.dest, None) if sub is not None else None
        if not isinstance(chosen, str) or chosen not in (sub.choices if sub is not None else {}):
            return parser
        parser = sub.choices[chosen]


def _unrecognized(parser: argparse.ArgumentParser, extras: list[str]) -> str:
    """`unrecognized argument: --tiemout; did you mean --timeout?` for what argparse left over."""
    flags = sorted({flag for action in parser._actions for flag in action.option_strings
                    if action.help is not argparse.SUPPRESS})
    guesses, several = [], sum(extra.startswith("-") for extra in extras) > 1
    for extra in extras:
        flag = extra.split("=", 1)[0]
        close = difflib.get_close_matches(flag, flags, n=1, cutoff=0.6) if flag.startswith("-") else []
        guesses.extend(f"{close[0]} (for {flag})" if several else close[0] for _ in close[:1])
    noun = "argument" if len(extras) == 1 else "arguments"
    hint = f"; did you mean {', '.join(guesses)}?" if guesses else ""
    return f"unrecognized {noun}: {' '.join(extras)}{hint}"


def _command_typo(word: str) -> str | None:
    """`tarce` -> `trace`: a first word that is neither a command nor an existing path."""
    if os.path.exists(word):
        return None
    close = difflib.get_close_matches(word, list(COMMANDS), n=1, cutoff=0.75)
    return close[0] if close else None


def _load(name: str):
    try:
        return importlib.import_module(COMMANDS[name])
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("opscan.commands"):
            return None
        raise


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser; with `only`, just that sub-command is loaded (start-up stays fast)."""
    parser = _Parser(
        prog="opscan",
        description="Find what will not just run when a PyTorch project moves to AWS Trainium "
        "(TorchNeuron). `opscan PATH` gives the whole answer; the sub-commands give its parts.",
    )
    parser.add_argument("--version", action="version", version=f"opscan {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS:
        if only is not None and name != only:
            continue
        module = _load(name)
        if module is None:
            continue
        command = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(command)
        command.set_defaults(_run=module.run)
    return parser


# NOTE [garbage collection in a run]
# A run builds many objects that live until it ends and form no cycles (a warm scan decodes a
# whole tree's results from the cache's index: ~100,000 containers on transformers' source), and
# CPython's default first threshold (700 allocations) then runs the cyclic collector ~155 times
# (141 young, 13 middle, 1 full pass): 33-38 ms of a 0.3 s warm scan. For the length of a run the
# first threshold is 10,000 (as mypy raises its own) and what exists when main() starts (the
# interpreter's and the imported modules' objects) is frozen out of the collector's passes
# (gc.freeze): 15 passes, 13-30 ms (measured at load 2-3, gc.callbacks). At most that many more objects wait for the
# collector; reference counting still frees everything else at once. The thresholds are restored
# and the frozen objects returned to the collector when main() returns (it also runs in the tests).
GC_THRESHOLD = 10_000


def main(argv: Sequence[str] | None = None) -> int:
    """Run opscan with `argv` (default: sys.argv[1:]) and return the exit code."""
    previous = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(GC_THRESHOLD, previous[0]), *previous[1:])
    try:
        return _main(argv)
    finally:
        gc.set_threshold(*previous)
        gc.unfreeze()


def _main(argv: Sequence[str] | None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] not in COMMANDS and not args_list[0].startswith("-"):
        typo = _command_typo(args_list[0])
        if typo is not None:
            print(f"opscan: error: no such command, file or folder: {args_list[0]!r}; did you mean "
                  f"`opscan {typo}`?", file=sys.stderr)
            return 2
        args_list.insert(0, DEFAULT_COMMAND)
    only = args_list[0] if args_list and args_list[0] in COMMANDS else None
    try:
        parser = build_parser(only)
        if not args_list:
            parser.print_help()
            return 2
        args = parser.parse_args(args_list)
        if getattr(args, "_run", None) is None:
            parser.print_help()
            return 2
        return int(args._run(args))
    except _ArgError as exc:
        print(f"opscan: error: {exc}", file=sys.stderr)
        return 2
    except ConfigError as exc:
        print(f"opscan: error: {exc}", file=sys.stderr)
        for problem in exc.problems:
            print(f"  {problem}", file=sys.stderr)
        return 2
    except OpscanError as exc:
        print(f"opscan: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("opscan: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
