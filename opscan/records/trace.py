"""The records of a model's trace (ModelTrace, its stop and containment) and of the models found
without running anything (ModelCandidate, Discovery)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from opscan.records.compile import CompileForecast, CompileRegion
from opscan.records.ops import OpUsage, Shrink, StandIn

class StepPartKind(StrEnum):
    """What a part of a training step is (StepPart.part), in the order the parts run."""

    LOSS = "loss"             # the loss function on the outputs
    OPTIMIZER = "optimizer"   # the optimizer and its implementation (fused, foreach)
    AMP = "amp"               # autocast's dtype (GradScaler with float16)
    CLIP = "clip"             # gradient clipping


STEP_PARTS = tuple(k.value for k in StepPartKind)   # the words, in the order the parts run


class Mode(StrEnum):
    """What step a model is traced for (`--mode`, `[[tool.opscan.models]] mode`; docs/trace.md)."""

    TRAIN = "train"           # forward, loss, backward and the optimizer step
    INFERENCE = "inference"   # forward only, under no_grad
    BOTH = "both"             # an inference trace and a train trace, their ops merged

    @property
    def trains(self) -> bool:
        """The trace runs a training step (train or both)."""
        return self is not Mode.INFERENCE


MODES = tuple(m.value for m in Mode)   # the words, in the order --mode lists them


@dataclass(frozen=True)
class StepPart:
    """One part of a training step: what it is and where it was read (NOTE [the step read from the
    training script] in opscan/targets/train_step.py)."""

    part: str              # one of STEP_PARTS (a StepPartKind)
    name: str              # "cross_entropy", "AdamW", "bfloat16", "clip_grad_norm_"; "sum of the outputs" (stand-in)
    detail: str = ""       # "fused", "foreach", "max_norm=1.0", "GradScaler", or what was assumed and why
    source: str = ""       # "train.py:42" where the script constructs it; "" = opscan's stand-in
    applied: bool = True   # False: read from the script but not traced (detail says why)


@dataclass(frozen=True)
class TrainStep:
    """The training step a train-mode trace ran: its parts with where each came from. `script` is the
    training script they were read from ("" when none was: every part is opscan's stand-in). Built
    in the parent as the plan (opscan/targets/train_step.py) and returned by the child as what ran."""

    script: str = ""
    parts: tuple[StepPart, ...] = ()
    backward: str = ""     # where the script calls `.backward()` ("train.py:27"; "" when not read)

    def part(self, name: str) -> StepPart | None:
        return next((p for p in self.parts if p.part == name), None)

    @property
    def own(self) -> bool:
        """True when the loss and the optimizer traced are the training script's (no stand-in among them)."""
        loss, optimizer = self.part(StepPartKind.LOSS), self.part(StepPartKind.OPTIMIZER)
        return bool(self.script) and loss is not None and bool(loss.source) \
            and optimizer is not None and bool(optimizer.source) and optimizer.applied


@dataclass(frozen=True)
class Replacement:
    """Data or weights a run stood in for (opscan/trace/run/stand_ins.py): what, as the report names
    it ("CIFAR10: 64 synthetic 3x32x32 uint8 images, 10 classes"), and the script line that asked."""

    kind: str                            # "data" | "pretrained"
    subject: str                         # what was asked for: "CIFAR10", "torch.hub.load", "data/train.bin"
    detail: str                          # what answered instead, one line
    path: str = ""                       # the line of the project's code that asked (relative), "" unknown
    line: int = 0


@dataclass(frozen=True)
class ModelTrace:
    """The ops one model dispatched in one trace, and how complete the trace is."""

    target: str
    mode: str                            # one of MODES (a Mode)
    device: str
    ops: tuple[OpUsage, ...] = ()
    stand_ins: tuple[StandIn, ...] = ()
    complete: bool = True
    stopped_at: str = ""                 # when incomplete: which op / source line / exception stopped it
    seconds: float = 0.0
    # ops whose fake kernel opscan supplied, PyTorch's being stricter than the real kernels or
    # missing ("fake kernel supplied by opscan for OP"; see opscan/trace/fakes.py), sorted
    supplied_fakes: tuple[str, ...] = ()
    # how the step was traced again after a stop, and why (e.g. "use_cache=False (with its cache
    # the step stopped: ...)"); "" when it was traced as given
    retried: str = ""
    # `opscan run`: ops whose tensors were all on the host (CPU) while the script ran on the
    # imitated device (data loading, metrics); listed apart, not checked against the database
    host_ops: tuple[OpUsage, ...] = ()
    shrink: Shrink | None = None         # the repeated layers and traced sizes (None: older traces)
    compile: CompileForecast | None = None   # compile signatures per step (None: older traces)
    compiled: tuple[CompileRegion, ...] = ()   # torch.compile regions met, in call order (docs/compile.md)
    # the project code that ran to build the model, one line ("built by running README.md block 1"; "" when
    # none: a model folder, a .pt2 file, a timm name) and which parts of the child's containment held
    # (opscan/containment/policy.py PARTS -> "held" or why not; () when the model was not traced in a contained child)
    built_by: str = ""
    containment: tuple[tuple[str, str], ...] = ()
    steps: int | None = None             # `opscan run`: optimizer steps the script took (None: not a run)
    step: TrainStep | None = None        # the parts of the train step traced and their sources (None: not traced
                                         # by the model path in train mode, or an older trace)
    # what a run of the project's training command answered in place of data or weights it could not
    # or would not read (absent, outside the project, or a download), in the order met (docs/run.md)
    replaced: tuple[Replacement, ...] = ()
    stop_hint: str = ""                  # what to try about the stop ("" when it says nothing)
    # a run of the project's training command: the model it built, as data for the model path when it
    # stopped before its step: (file, class, arguments as JSON); () when none (NOTE [the model the
    # command built] in opscan/trace/run/built_models.py)
    built_model: tuple[str, ...] = ()


# NOTE [stop and hint]: a trace's stop (`stopped_at`: op, source line, exception) and what to try
# (`stop_hint`) are two fields. Reports and traces cached before they were split hold one string,
# `<stop>; try: <hint>`: `split_stop` reads it back into the two; `joined_stop` writes the one-line
# form the reports print.
STOP_HINT = "; try:"


def split_stop(text: str) -> tuple[str, str]:
    """(stop, hint) of a stop as written before the hint had its own field ("" hint when none)."""
    stop, _, hint = text.partition(STOP_HINT)
    return stop, hint.strip()


def joined_stop(stop: str, hint: str) -> str:
    """`<stop>; try: <hint>` (the stop alone when there is no hint): one line of a report."""
    return f"{stop}{STOP_HINT} {hint}" if hint else stop


def merge_containment(states: Iterable[tuple[tuple[str, str], ...]]) -> tuple[tuple[str, str], ...]:
    """One (part, "held" or why not) tuple from several children's (see Report.containment)."""
    merged: dict[str, str] = {}
    for parts in states:
        for part, state in parts:
            if merged.get(part, "held") == "held":
                merged[part] = state
    return tuple(merged.items())


def containment_line(parts: tuple[tuple[str, str], ...]) -> str:
    """'containment: environment, network, files, processes held' or which parts did not and why.
    The one sentence of records/ (NOTE [records hold data] in opscan/reporters/texts.py): the
    contained child's side says it too, and reads records and errors only."""
    held = [p for p, s in parts if s == "held"]
    words = [", ".join(held) + " held" if held else "nothing held"]
    return "containment: " + "; ".join(words + [f"{p} not held ({s})" for p, s in parts if s != "held"])


class CandidateKind(StrEnum):
    """What a model candidate found without running anything is (opscan/targets/discovery.py)."""

    HF_FOLDER = "hf-folder"
    TIMM_FOLDER = "timm-folder"
    EXPORT = "export"
    FACTORY = "factory"
    MODULE_CLASS = "module-class"
    FROM_PRETRAINED = "from-pretrained"
    INLINE = "inline"
    # what a repository builds with no configuration (opscan/targets/recipes.py, docs/repositories.md)
    REPO_CLASS = "repo-class"
    REPO_FACTORY = "repo-factory"
    HUBCONF = "hubconf"
    README = "readme"
    MAIN_DEMO = "main-demo"
    REPO_TEST = "repo-test"

    @property
    def description(self) -> str:
        return _CANDIDATE_KINDS[self]

    @property
    def is_folder(self) -> bool:
        """A model folder (transformers or timm): traced as it is."""
        return self in (CandidateKind.HF_FOLDER, CandidateKind.TIMM_FOLDER)

    @property
    def from_repository(self) -> bool:
        """Built by a recipe from a repository's own code with no configuration (`repo:` targets)."""
        return self in _REPO_KINDS


_CANDIDATE_KINDS: dict[str, str] = {
    "hf-folder": "a folder holding a transformers config.json (model_type / architectures)",
    "timm-folder": "a folder holding a timm config.json (architecture)",
    "export": "a .pt2 file saved with torch.export.save",
    "factory": "a function named like a model factory (build, make, create_model, get_model, ...)",
    "module-class": "an nn.Module subclass no other code of its file builds (needs inputs)",
    "from-pretrained": "a from_pretrained / from_config call on a local model folder",
    "inline": "a model built inline in a script or notebook: no name to trace; write a factory",
    "repo-class": "an nn.Module class built with a config opscan makes (defaults, names, shipped config files)",
    "repo-factory": "a factory called with its defaults, or with a variant name from the file's registry",
    "hubconf": "a torch.hub entry point (hubconf.py) called with pretrained=False",
    "readme": "a fenced Python example in a README or doc that builds a model and calls it",
    "main-demo": "an `if __name__ == \"__main__\":` demo, run until its first model call",
    "repo-test": "a test of the repository that builds a model and calls it, run until its model call",
}
_REPO_KINDS = frozenset({CandidateKind.REPO_CLASS, CandidateKind.REPO_FACTORY, CandidateKind.HUBCONF,
                         CandidateKind.README, CandidateKind.MAIN_DEMO, CandidateKind.REPO_TEST})
CANDIDATE_KINDS: dict[str, str] = {k.value: k.description for k in CandidateKind}


@dataclass(frozen=True)
class ModelCandidate:
    """A model opscan found in a project by reading it (never by running it)."""

    target: str                          # trace target: "model.py:build", "hf:models/llama", "pt2:m.pt2"
    kind: CandidateKind                  # one of CANDIDATE_KINDS
    path: str                            # file or folder, relative to the project root
    line: int = 0                        # for Python candidates
    ready: bool = True                   # traceable as it is (False: needs inputs or a factory)
    note: str = ""                       # what to do first, e.g. "needs remote code (auto_map): ..."

    def __post_init__(self) -> None:   # NOTE [typed vocabularies]
        object.__setattr__(self, "kind", CandidateKind(self.kind))


@dataclass(frozen=True)
class Discovery:
    """What opscan found to trace when no model was configured (docs/check.md, "Three kinds of input")."""

    traced: tuple[str, ...] = ()                 # targets traced with no configuration (PATH is the model)
    refused: tuple[ModelCandidate, ...] = ()     # model inputs not built, each with its note
    candidates: tuple[ModelCandidate, ...] = ()  # proposals for [[tool.opscan.models]] (`opscan init`)
    # What the reporters print of it, set by the app (pipeline/analyse.py `_discover`) so they never import discovery:
    config_blocks: tuple[str, ...] = ()          # per candidate, its [[tool.opscan.models]] block (`opscan init`'s)
    factory_hint: str = ""                       # how to write a factory opscan can call (discover.FACTORY_HINT)


class EntryKind(StrEnum):
    """Where a training command was read (opscan/targets/entry/; docs/check.md)."""

    GIVEN = "given"
    README = "readme"
    DOCS = "docs"
    SHELL_SCRIPT = "shell-script"
    MAKEFILE = "makefile"
    PROJECT_SCRIPT = "project-script"
    MAIN_STEP = "main-step"

    @property
    def description(self) -> str:
        return _ENTRY_KINDS[self]


_ENTRY_KINDS: dict[str, str] = {
    "given": "given with --entry or the `entry` key of [tool.opscan]",
    "readme": "a shell block of the README",
    "docs": "a shell block of a document under docs/ (or another Markdown file)",
    "shell-script": "a line of a shell script of the project (scripts/train.sh), its variables expanded",
    "makefile": "a recipe line of a Makefile target",
    "project-script": "a console script of [project.scripts] in pyproject.toml",
    "main-step": "a script that steps an optimizer when run: under `if __name__ == \"__main__\":` or at its top level",
}
ENTRY_KINDS: dict[str, str] = {k.value: k.description for k in EntryKind}


@dataclass(frozen=True)
class TrainingEntry:
    """A command that trains the project, found by reading it (never by running it): the command as a
    user types it, where it was read and why it ranks where it does (opscan/targets/entry/ranking.py)."""

    command: str                         # "python train.py --config configs/small.yaml"
    kind: EntryKind                      # one of ENTRY_KINDS
    path: str = ""                       # the file it was read from, relative to the project root
    line: int = 0
    cwd: str = ""                        # the folder it runs from, relative to the root ("" = the root)
    why: str = ""                        # how it ranks: "steps an optimizer (train.py:40)"
    entry_point: str = ""                # a console script's `module:function` (kind project-script)

    def __post_init__(self) -> None:   # NOTE [typed vocabularies]
        object.__setattr__(self, "kind", EntryKind(self.kind))

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path
