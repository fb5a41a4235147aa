"""`opscan parity`: compare two loss logs, or run a training script on two devices and compare."""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile
from pathlib import Path

from opscan.errors import UsageError

HELP = ("compare the loss curves of a baseline and a candidate run "
        "(`parity BASELINE CANDIDATE`, or `parity run -- python train.py`)")

COMMAND_LINE = "command line"


def _split_at_dashes(parser: argparse.ArgumentParser) -> None:
    """Make everything after the first `--` the training command (args.command), untouched."""
    original = parser.parse_known_args

    def parse_known_args(args=None, namespace=None):
        args = list(sys.argv[1:] if args is None else args)
        command: list[str] = []
        if "--" in args:
            cut = args.index("--")
            args, command = args[:cut], args[cut + 1:]
        namespace, extras = original(args, namespace)
        namespace.command = command
        return namespace, extras

    parser.parse_known_args = parse_known_args  # type: ignore[method-assign]


def _float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number >= 0")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = ("opscan parity BASELINE CANDIDATE --tolerance T [options]\n"
                    "       opscan parity run [--target-device neuron] [options] -- COMMAND...")
    parser.add_argument("inputs", nargs="*", metavar="BASELINE CANDIDATE",
                        help="two loss logs (JSON {step: loss}, JSON lines or CSV), or `run`")
    parser.add_argument("--tolerance", type=_float, metavar="T",
                        help="absolute tolerance on |candidate - baseline| (required here or in "
                             "[tool.opscan.parity] tolerance)")
    parser.add_argument("--rel-tolerance", type=_float, metavar="R",
                        help="relative tolerance: a step passes when |delta| <= T + R x |baseline|")
    parser.add_argument("--steps", metavar="LIST",
                        help="steps to compare, e.g. 10,50,100,200 or 0-200:10 (default: every "
                             "step present in both logs)")
    parser.add_argument("--require-same-steps", action="store_true",
                        help="fail (exit 1) when the two logs do not have the same steps")
    parser.add_argument("--format", choices=("terminal", "json"), default="terminal")
    parser.add_argument("--plot", metavar="FILE", help="also draw the curves to FILE.png or FILE.svg "
                        "(needs matplotlib: opscan-neuron[plot])")
    parser.add_argument("--no-chart", action="store_true", help="leave the terminal chart out")
    run = parser.add_argument_group("parity run")
    run.add_argument("--target-device", metavar="DEVICE",
                     help="TORCH_DEVICE of the candidate run (default: [tool.opscan.parity] "
                          "target-device, else neuron)")
    run.add_argument("--out-dir", metavar="DIR",
                     help="keep the loss logs and the script's output here (default: a temporary "
                          "folder, removed after a successful comparison)")
    run.add_argument("--timeout", type=_float, metavar="SECONDS", help="stop a run after this long")
    from opscan.commands.flags import add_containment_arguments

    add_containment_arguments(run)   # the training command runs contained (docs/reliability.md)
    _split_at_dashes(parser)


def run(args: argparse.Namespace) -> int:
    from opscan.workflow.parity import Tolerance, compare, parse_steps
    from opscan.workflow.settings import parity_settings

    inputs = list(args.inputs)
    command = list(getattr(args, "command", []))
    running = bool(inputs) and inputs[0] == "run"
    if running:
        if len(inputs) > 1:
            raise UsageError("parity run: put the training command after `--` "
                             f"(got {' '.join(inputs[1:])!r} before it)")
    else:
        if command:
            raise UsageError("parity: a command after `--` needs `opscan parity run`")
        if len(inputs) != 2:
            raise UsageError("parity: give two loss logs, BASELINE and CANDIDATE "
                             f"(got {len(inputs)}), or `parity run -- COMMAND`")
        for flag in ("target_device", "out_dir", "timeout"):
            if getattr(args, flag) is not None:
                raise UsageError(f"parity: --{flag.replace('_', '-')} only applies to `parity run`")

    settings = parity_settings()
    if args.tolerance is not None:
        tolerance = Tolerance(args.tolerance, args.rel_tolerance or 0.0, COMMAND_LINE)
    elif settings.tolerance is not None:
        rel = args.rel_tolerance if args.rel_tolerance is not None else (settings.rel_tolerance or 0.0)
        tolerance = Tolerance(settings.tolerance, rel, settings.source)
    else:
        raise UsageError("parity: no tolerance - decide it before looking at the numbers: pass "
                         "--tolerance (e.g. 2e-3) or set `tolerance` in [tool.opscan.parity]")
    steps = parse_steps(args.steps) if args.steps else settings.steps

    run_info = None
    if running:
        baseline, candidate, out_dir, keep, held = _run_pair(args, command, settings)
        run_info = {"command": command, "baseline_device": "cpu",
                    "target_device": args.target_device or settings.target_device or "neuron",
                    "out_dir": str(out_dir) if keep else None, "containment": held.as_json()}
    else:
        from opscan.workflow.losslog import read_loss_log
        baseline, candidate = read_loss_log(inputs[0]), read_loss_log(inputs[1])
        out_dir, keep = None, True
    result = compare(baseline, candidate, tolerance, steps, args.require_same_steps)
    _render(result, args, run_info)
    if out_dir is not None and not keep:
        shutil.rmtree(out_dir, ignore_errors=True)
    return 0 if result.ok else 1


def _run_pair(args, command, settings):
    from dataclasses import replace

    from opscan.commands.flags import policy_from
    from opscan.containment.process import Limits, check_containment
    from opscan.workflow.script_runs import run_pair

    target = args.target_device or settings.target_device or "neuron"
    keep = args.out_dir is not None
    out_dir = Path(args.out_dir) if keep else Path(tempfile.mkdtemp(prefix="opscan-parity-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    policy = replace(policy_from(args), writable=(str(out_dir.resolve()),), overlays=(os.getcwd(),))
    held = check_containment(Limits(containment=policy))   # ContainmentError (exit 2) when required and not had

    def progress(message: str) -> None:
        print(f"opscan parity run: {message}", file=sys.stderr)

    progress(held.line())
    # On a failed run the temporary folder is kept: the error message points into it.
    (_, baseline), (_, candidate) = run_pair(command, target, out_dir, args.timeout,
                                             progress=progress, policy=policy)
    return baseline, candidate, out_dir, keep, held


def _render(result, args, run_info) -> None:
    from opscan.workflow import parity_render

    if args.plot:
        from opscan.workflow.parity_plot import write_plot
        written = write_plot(result, args.plot)
        print(f"opscan parity: plot written to {written}", file=sys.stderr)
    if args.format == "json":
        parity_render.render_json(result, sys.stdout, run_info)
        return
    from rich.console import Console
    console = Console(highlight=False, soft_wrap=False)
    parity_render.render_terminal(result, console, plot=not args.no_chart, run=run_info)
