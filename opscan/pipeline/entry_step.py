"""The training step of `opscan PATH`: the project's training command chosen (read, never run, by
opscan/targets/entry/), run as `opscan run` runs it (contained, on fake tensors, one optimizer step,
data and weights it cannot read stood in), kept when it trained, else the model path taken in its
place; and the `Step` the verdict names (NOTE [the step answered for] in opscan/assess/step.py).

NOTE [the training command first]
With no `[[tool.opscan.models]]`, `opscan PATH` runs the best training command it read (or the one
`--entry` / `entry` gives) before it builds any model: the project's own step is the answer the
team needs. The run counts when it trained: it ended after its optimizer step, or ran to its end
after a backward pass. Otherwise (it stopped before its first step, failed, timed out, or ran no
backward) the reason is a note and the model path of today follows (the model search, each
candidate tried in turn, under opscan's stand-in step), so nothing is lost; when that path builds
nothing either, the stopped run's ops are kept (an incomplete trace: the verdict says so).
Configured models are traced as configured (the team chose them); `entry` / `--entry` runs the
command beside them. `--no-project-code` runs no command found by reading.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, replace
from pathlib import Path

from opscan.assess.step import (HOST_ONLY, forward_only, host_only, project_step, script_parts, stand_in_parts,
                                stand_in_step)
from opscan.config import Config, ModelConfig
from opscan.errors import MissingDependencyError, OpscanError
from opscan.records import DeviceProfile, Mode, ModelTrace, Step, StepKind, TrainingEntry, TargetKind, Target
from opscan.reporters.texts import replacement_words

MAX_LISTED = 5   # other training commands named in the notes


@dataclass(frozen=True)
class Entered:
    """The training commands read (best first) and the one to run (None: none is run, `why_not` says why)."""

    entries: tuple[TrainingEntry, ...] = ()
    chosen: TrainingEntry | None = None
    why_not: str = ""
    given: bool = False   # the user named it (--entry, `entry` in the settings): never replaced


@dataclass(frozen=True)
class Ran:
    """The run of the chosen command: its trace (None: it could not start), whether it is the
    project's step (`trained`), why not, and the notes it made."""

    trace: ModelTrace | None
    trained: bool
    why: str = ""
    notes: tuple[str, ...] = ()


def choose(target: Path, config: Config, *, trace: bool, project_code: bool, given: str = "",
           index=None) -> Entered:
    """The entries of the project at `target` and the one to run (NOTE [the training command first])."""
    if not trace or not target.is_dir():
        return Entered()
    from opscan.targets.entry import find_entries, given_entry

    entries = find_entries(index) if index is not None else ()
    command = given or config.entry
    if command:
        entry = given_entry(command)
        return Entered((entry, *(e for e in entries if e.command != entry.command)), entry, given=True)
    if config.models:
        return Entered(entries, None, "models are configured: [[tool.opscan.models]] or --model")
    if not project_code:
        return Entered(entries, None, "--no-project-code: no training command is run")
    return Entered(entries, entries[0] if entries else None, "" if entries else "no training command found")


def run_chosen(entered: Entered, root: Path, profile: DeviceProfile | None, limits, command) -> Ran:
    """Run `entered.chosen` with the phase `command(entry, root, profile, limits)`; what it gave."""
    entry = entered.chosen
    assert entry is not None
    shown = shown_command(entry)
    try:
        trace, said = command(entry, root, profile, budget(limits, entered))
    except MissingDependencyError:
        raise
    except OpscanError as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return Ran(None, False, why, (f"training command `{shown}` could not run: {why}",))
    notes = [f"training command `{shown}`: {entry.why}"] if entry.why else []
    notes.extend(said)
    notes.extend(f"stood in for {r.kind}: {replacement_words(r)}" for r in trace.replaced)
    trained = trace.complete and bool(trace.steps or trace.mode == Mode.TRAIN)
    why = "" if trained else (f"it stopped: {trace.stopped_at}" if not trace.complete else
                              "it ran to its end without a backward pass or an optimizer step")
    if trained and host_only(trace):   # NOTE [a step that never reaches the device] in opscan/assess/step.py
        trained, why = False, f"it trained on the host only: {HOST_ONLY}"
    if not trained:
        notes.append(f"training command `{shown}` was not a training step ({why}): the model path follows")
    return Ran(replace(trace, built_by=f"ran the training command `{shown}`"), trained, why, tuple(notes))


def built_model_first(discovery, models: tuple[ModelConfig, ...], ran: Ran | None, entered: Entered, index=None):
    """(discovery, models) with the model the command built before it stopped tried first, built with
    the arguments it was built with (NOTE [the model the command built] in
    opscan/trace/run/built_models.py); as they were when it built none, trained, or nothing was found."""
    built = ran.trace.built_model if ran is not None and ran.trace is not None and not ran.trained else ()
    if discovery is None or entered.chosen is None or not _well_formed(built, index):
        return discovery, models
    from opscan.records import CandidateKind, ModelCandidate, Mode

    rel, name, _ = built
    target = Target.parse(f"repo:{rel}:{name}")
    same = next((m for m in models if m.target == target), None)
    if same is None and index is not None:   # read here, handed to the child (NOTE [one project index])
        from opscan.targets.discovery import call_site_table, step_plans

        same = ModelConfig(target=target, mode=Mode.TRAIN, call_sites=call_site_table(index, (str(target),)),
                           step=step_plans(index, (str(target),)).get(target))
    base = same or ModelConfig(target=target, mode=Mode.TRAIN)
    first = replace(base, built_with=built)
    note = (f"the model `{shown_command(entered.chosen)}` built before it stopped, with the arguments it was "
            "built with")
    candidate = ModelCandidate(str(target), CandidateKind.REPO_CLASS, rel, note=note)
    discovery = replace(discovery, traced=(str(target), *(t for t in discovery.traced if t != str(target))),
                        candidates=(candidate, *(c for c in discovery.candidates if c.target != str(target))))
    return discovery, (first, *(m for m in models if m.target != target))


def _well_formed(built: tuple, index) -> bool:
    """Whether the child's record of the model its run built is a project file, a class name and
    arguments of bounded size: the child ran the project's code, so its answer is checked as data."""
    if len(built) != 3 or not all(isinstance(part, str) for part in built):
        return False
    rel, name, text = built
    parts = rel.split("/")
    return bool(re.fullmatch(r"[\w./-]+\.py", rel)) and ".." not in parts and not rel.startswith("/") \
        and name.isidentifier() and len(text) <= 65_536 \
        and (index is None or (index.root / rel).is_file())


# NOTE [the budget of a command found by reading]
# A command found by reading runs the project's own code on stand-in data, and data whose content is
# made up can send that code into a loop it never leaves with its real data (a sampler drawing a
# negative item until it finds one the user has not seen, when the stand-in users have seen every
# item): the run then waited for the child's whole limit (900 s by default) before the model path
# could follow, and a pre-commit or CI job waited with it. A real run reaches its first optimizer
# step in seconds to a few minutes here (the slowest of the repository sets, under load: about 260
# s), so a command opscan chose itself gets COMMAND_BUDGET seconds when the limit is the default;
# past it the run stops, named as a timeout, and the model path follows. A command the user names
# (`--entry`, `entry`) and a `--timeout` of the user's own keep the whole limit.
COMMAND_BUDGET = 300.0


def budget(limits, entered: Entered):
    """`limits` for running `entered.chosen` (NOTE [the budget of a command found by reading])."""
    from opscan.containment.policy import DEFAULT_TIMEOUT

    if limits is None or entered.given or limits.timeout != DEFAULT_TIMEOUT:
        return limits
    return replace(limits, timeout=COMMAND_BUDGET)


# NOTE [a command that cannot import here]
# The command ranked first may need a library the environment lacks (`python train_blip.py` importing
# transformers, left out of a research environment's requirements): it stops before any op with
# `ModuleNotFoundError` of a module that is not the project's. That says nothing about the project's
# training, only about this environment, so the next command found whose script differs is run
# instead (at most MAX_NEXT more), and a note says which and why. A command the user named is
# never replaced; any other failure (absent data, a bug of the script) keeps the command: it is
# the project's training, and the model path follows as before.
# NOTE [a command that trains on the host only]
# The same holds for a command whose step never reaches the device (NOTE [a step that never reaches
# the device] in opscan/assess/step.py): a README whose first command trains a small flow on the CPU
# and whose next trains a GAN on the device. The host-only run says nothing of the device's ops, so
# the next command found whose script differs is run too, within the same MAX_NEXT; when none is
# left (or none reaches the device either), the model path follows as before.
MAX_NEXT = 2
_MISSING = re.compile(r"^\(before any op\) at .*?ModuleNotFoundError: No module named '([\w.]+)'")


def next_entry(entered: Entered, ran: Ran, root: Path, tried: int) -> tuple[Entered, str] | None:
    """(the Entered with the next command chosen, the note) when the chosen one stopped on a library
    missing here (NOTE [a command that cannot import here]), else None."""
    if entered.given or entered.chosen is None or ran.trained or ran.trace is None or tried >= MAX_NEXT:
        return None
    missing = _MISSING.match(ran.trace.stopped_at or "")
    if missing is None and not host_only(ran.trace):   # NOTE [a command that trains on the host only]
        return None
    top = missing.group(1).split(".")[0] if missing is not None else ""
    if top and ((root / top).is_dir() or (root / f"{top}.py").is_file()):   # the project's own module
        return None
    scripts = {_script_of(entered.chosen)}
    order = list(entered.entries)
    start = order.index(entered.chosen) + 1 if entered.chosen in order else 0
    following = next((e for e in order[start:] if _script_of(e) not in scripts), None)
    if following is None:
        return None
    why = f"needs `{top}`, not installed here" if top else "trained on the host only"
    note = (f"training command `{shown_command(entered.chosen)}` {why}: the next command found is run instead, "
            f"`{shown_command(following)}`")
    return replace(entered, chosen=following), note


def others_note(entered: Entered) -> tuple[str, ...]:
    """One note listing the other training commands read (what `--entry` may pick)."""
    others = [e for e in entered.entries if e is not entered.chosen][:MAX_LISTED]
    if not others:
        return ()
    more = len(entered.entries) - len(others) - (1 if entered.chosen else 0)
    listed = "; ".join(f"`{shown_command(e)}` ({e.where})" for e in others)
    tail = f"; and {more} more" if more > 0 else ""
    which = "other training commands found" if entered.chosen else "training commands found, none run"
    return (f"{which} (--entry picks one): {listed}{tail}",)


def step_of(traces: tuple[ModelTrace, ...], models: tuple[ModelConfig, ...], entered: Entered, ran: Ran | None,
            config: Config, script_command: str = "") -> Step | None:
    """The step the traces answer for (None: nothing traced and no command run)."""
    if not traces:
        return stopped_step(entered, ran)
    if ran is not None and ran.trace is not None and any(t is ran.trace for t in traces):
        if entered.chosen is None:
            return None
        if not ran.trained:   # NOTE [the ops of a command that stopped]
            shown = shown_command(entered.chosen)
            return Step(StepKind.NONE, f"no complete step: the ops `{shown}` dispatched until it {stop_words(ran)}; "
                        "the model path built no model", command=shown, why=stop_words(ran))
        return project_step(shown_command(entered.chosen))   # it trained on the device
    if script_command and any(_kind(t.target) is TargetKind.SCRIPT for t in traces):
        scripts = [t for t in traces if _kind(t.target) is TargetKind.SCRIPT]
        return project_step(script_command, all(host_only(t) for t in scripts))
    if all(t.mode == Mode.INFERENCE for t in traces):
        return forward_only([t.target for t in traces])
    model = next((m for m in models if any(t.target == m.target for t in traces)), None) or \
        (models[0] if models else None)
    scripted = next((t.step for t in traces if t.step is not None and t.step.script), None)
    # the parts the training script constructs (NOTE [the step read from the training script]), else the stand-in's
    parts = script_parts(scripted) if scripted is not None else \
        stand_in_parts(*((model.optimizer, model.optimizer_impl, model.amp) if model is not None else
                         (ModelConfig.optimizer, ModelConfig.optimizer_impl, ModelConfig.amp)))
    return stand_in_step(parts, _why_stand_in(entered, ran), config.accept_stand_in_step)


# NOTE [a command that stopped, nothing traced]
# When the training command ran and stopped before its first optimizer step and the model path then
# built nothing, the headline used to name only the source's blockers ("blocked by 3 CUDA-pinned
# sites in 3 files"): a user read it as the reason nothing was traced, though the run had answered
# every CUDA request (CUDA-pinned sites are what to change for the device, never what stops a run
# here) and stopped on something else. The verdict then names a step of kind `none`: the command,
# where and why it stopped ("`python train.py` stopped before its first optimizer step:
# FileNotFoundError at utils.py:143"), and every headline gains that clause.
_STOP = re.compile(r"(?:\(before any op\) )?at (?:(?:aten|torchvision|\w+)::[\w.]+ at )?([^\s:]+:\d+): ([\w.]+)")


# NOTE [the ops of a command that stopped]
# When the command stopped before its first optimizer step and the model path built nothing, the
# ops the run dispatched until then are kept (they are the project's, if not all of them). They are
# no training step: the step named used to be "the training step of `python train.py`", the words
# of a command that trained, over a trace that stopped in its data loader. It is a step of kind
# `none` that says what the ops are and where the command stopped ("no complete step: the ops
# `python train.py` dispatched until it stopped before its first optimizer step: KeyError at
# data.py:18; the model path built no model").


def stopped_step(entered: Entered, ran: Ran | None) -> Step | None:
    """The step of NOTE [a command that stopped, nothing traced], else None."""
    if ran is None or entered.chosen is None or ran.trained:
        return None
    shown = shown_command(entered.chosen)
    return Step(StepKind.NONE, f"no step traced: `{shown}` {stop_words(ran)}; the model path built no model",
                command=shown, why=stop_words(ran))


def stop_words(ran: Ran) -> str:
    """"stopped before its first optimizer step: FileNotFoundError at utils.py:143" (short: headlines)."""
    stopped = ran.trace.stopped_at if ran.trace is not None else ""
    if ran.trace is None:
        return f"could not run: {ran.why}"[:160]
    if ran.trace.complete and host_only(ran.trace):   # NOTE [a step that never reaches the device]
        return "trained on the host only: no op of its step reached the device"
    if ran.trace.complete:
        return "ran to its end without a backward pass or an optimizer step"
    found = _STOP.search(stopped or "")
    where = f": {found.group(2).rstrip(':')} at {found.group(1)}" if found else f": {stopped}"[:160]
    return f"stopped before its first optimizer step{where}"


def _kind(target: str) -> TargetKind | None:
    """The kind of a trace's target (None: no target form, e.g. a hand-built trace's)."""
    parsed = Target.of(target)
    return parsed.kind if parsed is not None else None


def _why_stand_in(entered: Entered, ran: Ran | None) -> str:
    if ran is not None and entered.chosen is not None:
        if ran.trace is not None and host_only(ran.trace):   # NOTE [a step that never reaches the device]
            return f"`{shown_command(entered.chosen)}` ran, but {HOST_ONLY}"
        return (f"`{shown_command(entered.chosen)}` was not traced ({ran.why}); run `opscan run -- "
                f"{entered.chosen.command}` once its data is in place")
    if entered.entries:
        best = entered.entries[0]
        script = _script_of(best)
        because = f" ({entered.why_not})" if entered.why_not else ""
        return f"{script} was not traced{because}: run `opscan run -- {best.command}` or set `entry`"
    return ("no training command found (README, docs, scripts, Makefile, [project.scripts], __main__ scripts "
            "stepping an optimizer): set `entry` in [tool.opscan] or run `opscan run -- python TRAIN.py`")


def shown_command(entry: TrainingEntry) -> str:
    """The command as a user types it from the project root (`cd src && python train.py`)."""
    return f"cd {entry.cwd} && {entry.command}" if entry.cwd else entry.command


def _script_of(entry: TrainingEntry) -> str:
    from opscan.targets.entry.launch import parse_command

    try:
        return parse_command(shlex.split(entry.command))["script"]
    except (OpscanError, ValueError):
        return entry.command


def run_command(entry: TrainingEntry, root: Path, profile: DeviceProfile | None,
                limits) -> tuple[ModelTrace, tuple]:
    """Run `entry` as `opscan run` runs a command (the contained child, the run's function), one
    optimizer step on the imitated device, with the run's data and weight stand-ins
    (docs/run.md, "Stand-ins"); `limits` None runs it in this process. Raises as the run's child does."""
    from opscan.containment.outcome import RUN_FUNCTION, result_of, with_overlay
    from opscan.errors import UsageError
    from opscan.targets.entry.launch import parse_command

    try:
        words = shlex.split(entry.command)
    except ValueError as exc:
        raise UsageError(f"entry: cannot read the command {entry.command!r}: {exc}") from exc
    cwd = (root / entry.cwd).resolve()
    if entry.entry_point:   # a console script: its function called with its arguments
        parsed = {"script": entry.entry_point, "argv": words[1:], "module": True, "nproc": None, "env": {}}
    else:
        parsed = parse_command(words, "neuron")
    script = parsed["script"] if parsed["module"] else str((cwd / parsed["script"]).resolve())
    if not parsed["module"] and not Path(script).is_file():
        raise UsageError(f"entry `{entry.command}`: no such script {parsed['script']} (from {cwd})")
    moved = ""
    if not parsed["module"]:   # NOTE [a script run from its own folder] (opscan/targets/entry/own_folder.py)
        from opscan.targets.entry.own_folder import own_folder

        folder, because = own_folder(script, str(cwd), str(root))
        if folder:
            cwd = Path(folder)
            moved = (f"{Path(script).relative_to(root.resolve()).as_posix()}: run from its own folder "
                     f"{cwd.relative_to(root.resolve()).as_posix()}/ (its relative path {because!r} exists only from "
                     "there, as `cd` into it and running the script reads it)")
    options = {"script": script, "argv": list(parsed["argv"]), "module": parsed["module"], "device": "neuron",
               "steps": 1, "nproc": parsed["nproc"], "env": parsed["env"], "profile": profile,
               "project_root": str(root), "cwd": str(cwd), "stand_ins": True}
    if limits is None:
        from opscan.containment import PARTS
        from opscan.containment.outcome import IN_PROCESS
        from opscan.trace.run import run_script

        trace, said = run_script(**options)
        return replace(trace, containment=tuple((part, IN_PROCESS) for part in PARTS)), _with(said, moved)
    from opscan.containment.process import run

    ended = run(RUN_FUNCTION, options, with_overlay(limits, str(root)),
                returns=tuple[ModelTrace, tuple[str, ...]])   # run_script's (trace, notes)
    trace, said = result_of(ended, f"run of `{entry.command}`", limits)
    return replace(trace, containment=ended.containment.parts if ended.containment else ()), _with(said, moved)


def _with(said: tuple, note: str) -> tuple:
    return (*said, note) if note else said
