"""Runs a training script twice (CPU baseline, then the target device) and collects its loss logs.

The contract a script follows (docs/workflow.md, "The training-script contract"):
it reads the device from TORCH_DEVICE, seeds everything, and writes its losses as JSON
{step: loss} (or JSON lines / CSV) to the file named by LOSS_DUMP before exiting 0.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from opscan import containment
from opscan.containment import Policy

from opscan.errors import RunError, UsageError
from opscan.workflow.losslog import LossLog, read_loss_log

DEVICE_VAR = "TORCH_DEVICE"
DUMP_VAR = "LOSS_DUMP"
ROLE_VAR = "OPSCAN_PARITY_RUN"     # "baseline" | "candidate": informational, scripts may ignore it
BASELINE_DEVICE = "cpu"


@dataclass(frozen=True)
class RunOutcome:
    """One run of the script."""

    label: str                 # "baseline" | "candidate"
    device: str
    loss_path: Path
    output_path: Path          # the script's stdout and stderr, interleaved
    exit_code: int
    seconds: float


def _tail(path: Path, lines: int = 1) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    kept = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
    return " | ".join(kept)


def run_once(command: Sequence[str], label: str, device: str, out_dir: Path,
             timeout: float | None = None, env: Mapping[str, str] | None = None,
             policy: Policy | None = None) -> RunOutcome:
    """Run `command` with TORCH_DEVICE=`device` and LOSS_DUMP=<out_dir>/<label>.json; with
    `policy`, contained (opscan/containment/: allow-listed environment, no network, writes only
    into `out_dir` and a scratch folder; the working folder's writes go to a copy)."""
    loss_path = out_dir / f"{label}.json"
    output_path = out_dir / f"{label}.log"
    if loss_path.exists():
        loss_path.unlink()
    child_env = dict(os.environ if env is None else env)
    child_env[DEVICE_VAR] = device
    child_env[DUMP_VAR] = str(loss_path)
    child_env[ROLE_VAR] = label
    argv, scratch = list(command), None
    if policy is not None and policy.enabled:   # the launcher execs it: find it here, for the same errors
        if shutil.which(command[0], path=child_env.get("PATH")) is None:
            if os.sep in command[0] and os.path.exists(command[0]):
                raise UsageError(f"parity run: command is not executable: {command[0]!r}")
            raise UsageError(f"parity run: command not found: {command[0]!r}")
        scratch = containment.prepare_scratch()
        run_vars = tuple((k, child_env[k]) for k in (DEVICE_VAR, DUMP_VAR, ROLE_VAR))
        named = containment.named_paths(argv, os.getcwd(), child_env)   # the script the user named, and its folder
        policy = replace(policy, set_env=(*policy.set_env, *run_vars),
                         writable=tuple(dict.fromkeys((*policy.writable, str(out_dir.resolve())))),
                         readable=tuple(dict.fromkeys((*policy.readable, *named))))
        argv = containment.command_prefix(policy, scratch) + argv
        child_env = containment.child_environment(child_env, policy, scratch)
    started = time.perf_counter()
    try:
        with output_path.open("wb") as output:
            proc = subprocess.run(argv, env=child_env, stdout=output,
                                  stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=timeout)
    except FileNotFoundError:
        raise UsageError(f"parity run: command not found: {command[0]!r}") from None
    except PermissionError:
        raise UsageError(f"parity run: command is not executable: {command[0]!r}") from None
    except subprocess.TimeoutExpired:
        raise RunError(f"{label} run ({DEVICE_VAR}={device}) did not finish within {timeout:g} s; "
                       f"its output is in {output_path}") from None
    finally:
        if scratch:
            containment.remove_scratch(scratch)
    seconds = time.perf_counter() - started
    if proc.returncode in (126, 127) and scratch:   # the contained launcher could not exec the command
        raise UsageError(f"parity run: {_tail(output_path) or f'cannot run {command[0]!r}'}")
    if proc.returncode != 0:
        tail = _tail(output_path)
        hint = ("; is the target device present? `opscan preflight` checks"
                if label == "candidate" else "")
        raise RunError(f"{label} run ({DEVICE_VAR}={device}) exited with code {proc.returncode}"
                       + (f": {tail}" if tail else "") + f" (full output: {output_path}{hint})")
    if not loss_path.is_file():
        raise RunError(f"{label} run ({DEVICE_VAR}={device}) exited 0 but wrote no loss log to "
                       f"${DUMP_VAR} ({loss_path}); see the contract in docs/workflow.md "
                       f"(output: {output_path})")
    return RunOutcome(label, device, loss_path, output_path, proc.returncode, seconds)


def run_pair(command: Sequence[str], target_device: str, out_dir: Path,
             timeout: float | None = None, env: Mapping[str, str] | None = None,
             progress: Callable[[str], None] | None = None, policy: Policy | None = None
             ) -> tuple[tuple[RunOutcome, LossLog], tuple[RunOutcome, LossLog]]:
    """Run the baseline on the CPU, then the candidate on `target_device`; read both loss logs."""
    if not command:
        raise UsageError("parity run: give the training command after `--`, "
                         "e.g. opscan parity run -- python train.py --seed 1337")
    if not target_device.strip():
        raise UsageError("parity run: --target-device is empty")
    out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    for label, device in (("baseline", BASELINE_DEVICE), ("candidate", target_device)):
        if progress:
            progress(f"{label}: {DEVICE_VAR}={device} {' '.join(command)}")
        outcome = run_once(command, label, device, out_dir, timeout, env, policy)
        if progress:
            progress(f"{label}: done in {outcome.seconds:.1f} s -> {outcome.loss_path}")
        results.append((outcome, read_loss_log(outcome.loss_path)))
    return results[0], results[1]
