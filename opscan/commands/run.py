"""`opscan run -- python SCRIPT ARGS`: the ops of a real training script's steps, on fake tensors."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path

from opscan.commands.flags import positive_int
from opscan.containment.outcome import RUN_FUNCTION   # the run mode's function (opscan/trace/run/)
from opscan.targets.entry.launch import PROJECT_MARKERS, parse_command, project_root

__all__ = ["PROJECT_MARKERS", "RUN_FUNCTION", "parse_command", "project_root", "run"]

HELP = ("run an unmodified training or inference script for N optimizer steps on fake tensors of the "
        "imitated device and report its ops as `opscan PATH` does")
DESCRIPTION = HELP + (". The script really runs (in opscan's contained child process, as `python SCRIPT "
                      "ARGS` would, from the current directory): it reads its data and may write files. "
                      "No GPU and no weights are needed; see docs/run.md.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = DESCRIPTION
    parser.add_argument("--device", choices=("neuron", "cpu"), default="neuron",
                        help="the device the script's accelerator tensors imitate (default neuron; cpu "
                             "imitates a CPU-only machine: the ops of a real CPU run)")
    parser.add_argument("--steps", type=positive_int, default=1, metavar="N",
                        help="optimizer steps to run (default 1); a script with no torch.optim optimizer "
                             "runs to its end")
    parser.add_argument("--nproc", type=positive_int, default=None, metavar="N",
                        help="world size of the fake process group of a torchrun/DDP script (default: "
                             "torchrun's --nproc-per-node or accelerate launch's --num_processes, else none)")
    from opscan.commands.flags import FORMATS, add_backend_argument, add_db_argument, add_limit_arguments

    add_backend_argument(parser)
    add_db_argument(parser)
    parser.add_argument("--fail-on", action="append", metavar="WHAT", default=None,
                        help="exit 1 on: error, warning, fallback, unknown, custom-kernel, not-ready "
                             "(as `opscan PATH`)")
    parser.add_argument("--exit-zero", action="store_true", help="always exit 0 (report-only runs)")
    parser.add_argument("--format", choices=FORMATS, default="terminal", help="output format")
    parser.add_argument("--output", "-o", metavar="FILE", default=None, help="write the report to FILE")
    add_limit_arguments(parser)
    parser.add_argument("script_command", nargs=argparse.REMAINDER, metavar="-- python SCRIPT ARGS...",
                        help="the command that runs the script: python SCRIPT, python -m MODULE, "
                             "torchrun [--nproc-per-node N] SCRIPT or accelerate launch [OPTIONS] SCRIPT, "
                             "with its arguments")
    _split_at_dashes(parser)


def _split_at_dashes(parser: argparse.ArgumentParser) -> None:
    """NOTE [run's own options]: what comes before `--` is parsed as opscan's options, strictly
    (an unknown one is a one-line usage error, exit 2, as in every other command); everything
    after the first `--` is the script's command, untouched. Without `--` the first word that is
    not an option starts the command (`opscan run python train.py --lr 3`)."""
    original = parser.parse_known_args

    def parse_known_args(args=None, namespace=None):
        args = list(sys.argv[1:] if args is None else args)
        if "--" not in args:
            return original(args, namespace)
        cut = args.index("--")
        namespace, extras = original(args[:cut], namespace)
        if namespace.script_command:   # words before `--` that are no option of opscan run
            extras = [*extras, *namespace.script_command]
        namespace.script_command = args[cut + 1:]
        return namespace, extras

    parser.parse_known_args = parse_known_args  # type: ignore[method-assign]


def assess_run(root: Path, config, trace, progress=None, on_error=None, command: str = ""):
    """The Report of `opscan PATH` for `root` with `trace` as its trace phase (one small function,
    so the one assessment of the app can replace `analyse` here); `command` is the one run, whose
    step the verdict names (NOTE [the step answered for])."""
    from opscan.pipeline.analyse import Phases, analyse
    from opscan.pipeline.options import RunOptions

    return analyse(root, config, RunOptions(script_command=command), phases=Phases.default(trace=trace),
                   progress=progress, on_error=on_error)


def _shown(command: list[str]) -> str:
    """The script's command as typed (the words after `--`)."""
    import shlex

    return shlex.join(command[1:] if command[:1] == ["--"] else command)


def run(args: argparse.Namespace) -> int:
    from opscan.commands.flags import gate, limits_from, progress, render_report
    from opscan.config import ModelConfig, parse_fail_on
    from opscan.config.checks import load_checked_config
    from opscan.errors import InputError, UsageError
    from opscan.containment.process import run as isolated
    from opscan.containment import PARTS
    from opscan.containment.outcome import IN_PROCESS, result_of, with_overlay

    parsed = parse_command(args.script_command, args.device)
    if not parsed["module"] and not Path(parsed["script"]).is_file():
        raise InputError("no such script", path=parsed["script"])
    root = project_root(parsed["script"], parsed["module"])
    config = load_checked_config(root).override(
        backend=args.backend, db=Path(args.db).resolve() if getattr(args, "db", None) else None,
        fail_on=parse_fail_on(args.fail_on) if args.fail_on else None)
    name = parsed["script"] if parsed["module"] else os.path.relpath(Path(parsed["script"]).resolve(), root)
    config = replace(config, models=(ModelConfig(target=f"script:{Path(name).as_posix()}"),))
    if getattr(args, "in_process", False) and getattr(args, "require_containment", False):
        raise UsageError("--require-containment and --in-process: the script would run in opscan's own "
                         "process, with nothing contained")
    limits = limits_from(args)
    notes: list[str] = []

    def trace(model, root_, profile, _limits=None):   # the run's own limits apply (below)
        options = {"script": parsed["script"] if parsed["module"] else str(Path(parsed["script"]).resolve()),
                   "argv": list(parsed["argv"]), "module": parsed["module"], "device": args.device,
                   "steps": args.steps, "nproc": args.nproc or parsed["nproc"], "env": parsed["env"],
                   "profile": profile,
                   "project_root": str(root), "cwd": os.getcwd()}
        if getattr(args, "in_process", False):
            from opscan.trace.run import run_script

            result, said = run_script(**options)
            result = replace(result, containment=tuple((part, IN_PROCESS) for part in PARTS))
        else:   # contained (docs/reliability.md): the project folder's writes go to a copy
            from opscan.records import ModelTrace

            ended = isolated(RUN_FUNCTION, options, with_overlay(limits, str(root)),
                             returns=tuple[ModelTrace, tuple[str, ...]])   # run_script's (trace, notes)
            result, said = result_of(ended, f"run of {name}", limits)
            result = replace(result, containment=ended.containment.parts if ended.containment else ())
        result = replace(result, built_by=f"ran the script {name}")
        notes.extend(said)
        if parsed["summary"]:
            notes.append(parsed["summary"])
        if result.host_ops:
            notes.append(f"{len(result.host_ops)} ops ran on host tensors (data loading, metrics): listed "
                         "apart (JSON host_ops), not checked against the database")
        return replace(result, target=model.target)

    errors: list = []
    with progress() as update:
        report = assess_run(root, config, trace, update, errors.append, command=_shown(args.script_command))
    report = replace(report, notes=report.notes + tuple(notes))
    render_report(report, args.format, args.output)
    code = gate(report, config.fail_on, args.exit_zero)
    for error in errors:
        print(f"opscan: error: {error}", file=sys.stderr)
    return 2 if errors else code
