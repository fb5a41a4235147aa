"""The training step a verdict answered for, and what it allows the verdict to say.

NOTE [the step answered for]
The ops a verdict judges come from one of two steps. The project's own: its training command,
found by reading (opscan/targets/entry/) or given (`--entry`, `entry`, `opscan run`), run for one
optimizer step on fake tensors: its loss, optimizer (fused or foreach), AMP, clipping and data
path are the ones the team pays device hours for. Or opscan's stand-in around a model it built or
was given (`[[tool.opscan.models]]`, `--model`, the model search): the output summed, an optimizer
opscan chose. A stand-in step checks the model's forward and backward, not the step: a fused
AdamW kernel or a loss's ops that the stand-in never dispatches are not looked up (issue 42's
project: `AdamW(fused=True)` and `F.cross_entropy` were unchecked and the verdict said `ready`).
So:
- every format names the step (`Step.text`, one sentence: "the training step of `python
  train.py`", "a stand-in step: summed output, AdamW (foreach); train.py was not traced: ...");
- `ready` needs the project's own step, or a stand-in the configuration says is right
  (`accept-stand-in-step = true` in [tool.opscan]: the team states that the configured model's
  step is theirs); otherwise a verdict that would be `ready` is `likely`, its headline naming why,
  so `--fail-on not-ready` fails it. Worse verdicts are left as they are: the step is then one of
  their details. A run with no step (the zoo, `opscan trace`, a source-only run) names none; models
  traced in inference mode only (as configured) answer for a forward pass, named as such, not held.
"""

from __future__ import annotations

from dataclasses import replace

from opscan.records import ModelTrace, Step, StepKind, TrainStep, Verdict, VerdictKind
from opscan.reporters.texts import step_part_words

OPTIMIZER_NAMES = {"adamw": "AdamW", "adam": "Adam", "sgd": "SGD", "adafactor": "Adafactor", "rmsprop": "RMSprop",
                   "adagrad": "Adagrad", "lion": "Lion"}


def stand_in_parts(optimizer: str = "adamw", impl: str = "", amp: str = "") -> str:
    """"summed output, AdamW (foreach)": opscan's stand-in step as a model's configuration sets it
    (opscan/trace/step.py: the model's own loss when it returns one, else its outputs summed; the
    optimizer's foreach kernels on the device unless configured)."""
    name = OPTIMIZER_NAMES.get(optimizer.lower(), optimizer)
    text = f"summed output, {name} ({impl or 'foreach'})"
    return text + (f", {amp} autocast" if amp else "")


def script_parts(step: TrainStep) -> str:
    """"cross_entropy from train.py:23, AdamW (fused) from train.py:17, ...": the parts of the model
    path's step as it read them from the training script (NOTE [the step read from the training
    script] in opscan/targets/train_step.py), each with its source or said to be opscan's stand-in."""
    return ", ".join(step_part_words(p) for p in step.parts)


def project_step(command: str, host_only: bool = False) -> Step:
    """The project's own step: its command's first optimizer step; `host_only`: no op of it reached
    the device (NOTE [a step that never reaches the device])."""
    if host_only:
        return Step(StepKind.PROJECT, f"the training step of `{command}`, run on the host only", command=command,
                    why=HOST_ONLY)
    return Step(StepKind.PROJECT, f"the training step of `{command}`", command=command)


# NOTE [a step that never reaches the device]
# A training script that never moves its model or data to a device (no `.to(device)`, no `.cuda()`,
# or `device = "cpu"` written in) runs its whole step on the host: the run records every op as a
# host op and none as the device's. Nothing in it fails, so the verdict was `ready`, though on a
# Trainium instance the same script trains on the instance's CPU and the device's ops were never
# looked at. The verdict of such a step is `unchecked` (verdict.py reads `host_only`), saying why and
# what to change; the step says it ran on the host only, and its host ops stay in the report
# (`host_ops`). `opscan PATH` follows the model path instead (entry_step.py).
def host_only(trace: ModelTrace) -> bool:
    """Whether a script's trace ran its step on the host alone: it stepped (or ran host ops), and no
    op reached the device."""
    return trace.complete and not trace.ops and bool(trace.steps or trace.host_ops)


HOST_ONLY = ("no op of the step reached the device: the script never moves its model or data to one, so it "
             "would train on the host's CPU; move them to the device (`neuron`, or the device the script "
             "selects) and run again to check the device's ops")


def forward_only(targets: list[str]) -> Step:
    """No training step: the models were traced in inference mode (as configured): a forward pass."""
    return Step(StepKind.NONE, f"no training step: the forward pass of {', '.join(targets)} (mode inference)")


def stand_in_step(parts: str, why: str, accepted: bool = False) -> Step:
    """opscan's stand-in step; `why` says why the project's own was not traced and what to run."""
    text = f"a stand-in step: {parts}" + (f"; {why}" if why else "")
    if accepted:
        text += " (accepted: accept-stand-in-step = true)"
    return Step(StepKind.STAND_IN, text, why=why, accepted=accepted)


def apply(verdict: Verdict, step: Step | None) -> Verdict:
    """`verdict` with its step named, and held at `likely` when it rests on a stand-in step the
    configuration did not accept (NOTE [the step answered for])."""
    if step is None:
        return verdict
    verdict = replace(verdict, step=step)
    if step.kind is StepKind.NONE and step.command and not verdict.ops_checked:
        # NOTE [a command that stopped, nothing traced] in opscan/pipeline/entry_step.py
        return replace(verdict, headline=f"{verdict.headline}; `{step.command}` {step.why}")
    if verdict.kind is VerdictKind.READY and step.kind is StepKind.STAND_IN and not step.accepted:
        return replace(verdict, kind=VerdictKind.LIKELY,
                       headline="likely — the ops of a stand-in step, not the project's: " + _short(step))
    return verdict


def _short(step: Step) -> str:
    """What the headline says of a stand-in step: why the project's own was not traced."""
    return step.why or step.text
