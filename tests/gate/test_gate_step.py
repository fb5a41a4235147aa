"""The verdict names the step it answered for (NOTE [the step answered for] in opscan/assess/step.py) and
`opscan PATH` runs the project's training command first (NOTE [the training command first] in
opscan/pipeline/entry_step.py): the pipeline with the command and trace phases replaced (no torch)."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest

from opscan.assess.step import apply, project_step, stand_in_step
from opscan.config import Config, load_config
from opscan.errors import ConfigError, TraceError
from opscan.pipeline.analyse import Phases, RunOptions, analyse
from opscan.records import ModelTrace, OpUsage, StepKind, Verdict, VerdictKind
from opscan.reporters import REPORTERS
from tests.support.release import static_release

RELEASE = static_release({"aten::addmm": "native", "aten::_fused_adamw_": "native"}, kind="documented")
STEPS = ("import torch\nmodel = torch.nn.Linear(2, 2)\noptimizer = torch.optim.AdamW(model.parameters())\n"
         "if __name__ == '__main__':\n    optimizer.step()\n")


def test_a_stand_in_step_holds_ready_at_likely_unless_the_configuration_accepts_it():
    ready = Verdict(VerdictKind.READY, "ready")
    held = apply(ready, stand_in_step("summed output, AdamW (foreach)", "train.py was not traced"))
    assert held.kind is VerdictKind.LIKELY and "train.py was not traced" in held.headline
    assert held.step is not None and held.step.kind is StepKind.STAND_IN
    accepted = apply(ready, stand_in_step("summed output, AdamW (foreach)", "", accepted=True))
    assert accepted.kind is VerdictKind.READY and accepted.step.accepted
    own = apply(ready, project_step("python train.py"))
    assert own.kind is VerdictKind.READY and own.step.text == "the training step of `python train.py`"
    blocked = apply(Verdict(VerdictKind.BLOCKED, "blocked by 1 site"), stand_in_step("x", "y"))
    assert (blocked.kind, blocked.headline) == (VerdictKind.BLOCKED, "blocked by 1 site")   # worse stays as it is


def _project(tmp_path: Path, config: str = "") -> Path:
    (tmp_path / "train.py").write_text(STEPS, encoding="utf-8")
    (tmp_path / "model.py").write_text("import torch\ndef build():\n    return torch.nn.Linear(2, 2), "
                                       "{'input': torch.zeros(1, 2)}\n", encoding="utf-8")
    (tmp_path / "README.md").write_text("```sh\npython train.py --lr 3e-4\n```\n", encoding="utf-8")
    if config:
        (tmp_path / "pyproject.toml").write_text(config, encoding="utf-8")
    return tmp_path


def _trace(target: str, ops=("aten::addmm",), **changes) -> ModelTrace:
    return ModelTrace(target, "train", "neuron", ops=tuple(OpUsage(op, 1, ("forward",), ("torch.float32",))
                                                            for op in ops), **changes)


class Calls:
    """The command and trace phases, recorded: what the pipeline ran, in order."""

    def __init__(self, command_trace: ModelTrace | None = None, fail: str = "") -> None:
        self.ran: list[str] = []
        self.command_trace = command_trace
        self.fail = fail

    def command(self, entry, root, profile, limits):
        self.ran.append(f"command {entry.command}")
        if self.fail:
            raise TraceError(self.fail)
        return self.command_trace, ("train.py: ended after 1 optimizer step of each optimizer",)

    def trace(self, model, root, profile, limits):
        self.ran.append(f"trace {model.target}")
        return _trace(model.target)

    def phases(self) -> Phases:
        return Phases.default(command=self.command, trace=self.trace,
                              database=lambda config: RELEASE)


def _analyse(root: Path, calls: Calls, options: RunOptions | None = None):
    return analyse(root, load_config(root), options or RunOptions(limits=None), phases=calls.phases())


def test_the_training_command_read_is_run_and_its_step_named(tmp_path):
    calls = Calls(_trace("script:train.py", ("aten::addmm", "aten::_fused_adamw_"), steps=1))
    report = _analyse(_project(tmp_path), calls)
    assert calls.ran == ["command python train.py --lr 3e-4"]   # the model path is not taken
    assert report.verdict.step.kind is StepKind.PROJECT
    assert report.verdict.step.command == "python train.py --lr 3e-4"
    assert "aten::_fused_adamw_" in {u.op for t in report.traces for u in t.ops}
    assert [e.command for e in report.entries] == ["python train.py --lr 3e-4"]


def test_a_command_that_cannot_run_falls_back_to_the_model_path_and_says_why(tmp_path):
    calls = Calls(fail="run of `python train.py --lr 3e-4` failed inside the model code: FileNotFoundError")
    report = _analyse(_project(tmp_path), calls)
    assert calls.ran[0] == "command python train.py --lr 3e-4" and calls.ran[1].startswith("trace ")
    step = report.verdict.step
    assert step.kind is StepKind.STAND_IN and "FileNotFoundError" in step.why
    assert "opscan run -- python train.py --lr 3e-4" in step.text
    assert any("could not run" in note for note in report.notes)


def test_a_run_that_stops_before_its_step_is_not_the_projects_step(tmp_path):
    stopped = _trace("script:train.py", complete=False, stopped_at="KeyError at train.py:3", steps=0)
    calls = Calls(stopped)
    report = _analyse(_project(tmp_path), calls)
    assert calls.ran[1].startswith("trace ") and report.verdict.step.kind is StepKind.STAND_IN
    assert "KeyError" in report.verdict.step.why


def test_configured_models_are_a_stand_in_step_naming_the_command_found(tmp_path):
    root = _project(tmp_path, '[[tool.opscan.models]]\ntarget = "model.py:build"\n')
    calls = Calls()
    report = _analyse(root, calls)
    assert calls.ran == ["trace model.py:build"]
    step = report.verdict.step
    assert step.kind is StepKind.STAND_IN and "summed output, AdamW (foreach)" in step.text
    assert "opscan run -- python train.py --lr 3e-4" in step.text
    assert report.verdict.kind is VerdictKind.LIKELY and "stand-in step" in report.verdict.headline


def test_accept_stand_in_step_lets_a_configured_model_be_ready(tmp_path):
    root = _project(tmp_path, '[tool.opscan]\naccept-stand-in-step = true\n'
                              '[[tool.opscan.models]]\ntarget = "model.py:build"\n')
    report = _analyse(root, Calls())
    assert report.verdict.step.accepted and report.verdict.kind is VerdictKind.READY


def test_entry_picks_another_command_from_the_flag_or_the_configuration(tmp_path):
    root = _project(tmp_path, '[tool.opscan]\nentry = "python train.py --lr 1"\n')
    calls = Calls(_trace("script:train.py", steps=1))
    _analyse(root, calls)
    assert calls.ran == ["command python train.py --lr 1"]
    calls = Calls(_trace("script:train.py", steps=1))
    _analyse(root, calls, RunOptions(limits=None, entry="python train.py --lr 2"))
    assert calls.ran == ["command python train.py --lr 2"]


def test_entry_and_accept_stand_in_step_are_checked_config_keys(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.opscan]\nentry = ""\naccept-stand-in-step = "yes"\n',
                                             encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_config(tmp_path)
    problems = " ".join(map(str, raised.value.problems))
    assert "tool.opscan.entry" in problems and "tool.opscan.accept-stand-in-step" in problems


@pytest.mark.parametrize("fmt", sorted(REPORTERS))
def test_every_format_names_the_step(tmp_path, fmt):
    if fmt == "dot":
        pytest.skip("the graph of the port tasks carries no verdict")
    calls = Calls(_trace("script:train.py", steps=1))
    report = _analyse(_project(tmp_path), calls)
    from importlib import import_module

    out = io.StringIO()
    import_module(REPORTERS[fmt]).render(report, out)
    text = out.getvalue()
    assert "the training step of `python train.py --lr 3e-4`" in " ".join(text.split())
    if fmt == "json":
        step = json.loads(text)["verdict"]["step"]
        assert step["kind"] == "project" and step["command"] == "python train.py --lr 3e-4"


def test_no_step_is_named_when_nothing_was_traced(tmp_path):
    report = analyse(_project(tmp_path), Config(root=tmp_path), RunOptions(trace=False, limits=None),
                     phases=Calls().phases())
    assert report.verdict.step is None and report.entries == ()


def test_an_inference_model_is_a_forward_pass_not_held(tmp_path):
    root = _project(tmp_path, '[[tool.opscan.models]]\ntarget = "model.py:build"\nmode = "inference"\n')
    calls = Calls()
    calls.trace = lambda model, *rest: replace(_trace(model.target), mode="inference")   # type: ignore[method-assign]
    report = _analyse(root, calls)
    assert report.verdict.step.kind is StepKind.NONE and "forward pass" in report.verdict.step.text
    assert "stand-in" not in report.verdict.headline


@pytest.mark.slow
def test_the_issues_project_answers_with_its_own_step_with_no_configuration(run_cli):
    """Issue 42's project (model.py, train.py with AdamW(fused=True), F.cross_entropy and gradient
    clipping, its command in the README): `opscan PROJECT`, in the contained child, traces its own step."""
    pytest.importorskip("torch")
    root = Path(__file__).resolve().parents[1] / "targets" / "repos" / "trainstep"
    code, out, err = run_cli(str(root), "--format", "json")
    report = json.loads(out)
    ops = {o["op"] for o in report["ops"]}
    assert {"aten::_fused_adamw_", "aten::nll_loss_forward", "aten::_foreach_norm.Scalar"} <= ops, err
    step = report["verdict"]["step"]
    assert (step["kind"], step["command"]) == ("project", "python train.py --steps 1000 --batch-size 32")
    assert [t["target"] for t in report["traces"]] == ["script:train.py"] and report["traces"][0]["complete"]
    assert report["entries"][0]["kind"] == "readme"


@pytest.mark.slow
def test_a_console_script_of_project_scripts_runs_its_function_with_the_commands_arguments(tmp_path):
    pytest.importorskip("torch")
    from opscan.index import ProjectIndex
    from opscan.pipeline.entry_step import run_command
    from opscan.targets.entry import find_entries

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "pkg" / "cli.py").write_text(
        "import sys\nimport torch\nfrom .nets import Net\n"
        "def train():\n    model = Net(int(sys.argv[sys.argv.index('--width') + 1]))\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    model(torch.randn(2, 4)).sum().backward()\n    optimizer.step()\n", encoding="utf-8")
    (tmp_path / "pkg" / "nets.py").write_text(
        "import torch\nclass Net(torch.nn.Linear):\n    def __init__(self, width):\n"
        "        super().__init__(4, width)\n",
        encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n[project.scripts]\np-train = "pkg.cli:train"\n',
                                             encoding="utf-8")
    (tmp_path / "README.md").write_text("```sh\np-train --width 8\n```\n", encoding="utf-8")
    entry = find_entries(ProjectIndex(tmp_path))[0]
    assert (entry.command, entry.kind, entry.entry_point) == ("p-train --width 8", "readme", "pkg.cli:train")
    trace, notes = run_command(entry, tmp_path, None, None)
    assert trace.complete and trace.steps == 1, trace.stopped_at
    ops = {u.op for u in (*trace.ops, *trace.host_ops)}   # nothing moved to a device: host ops
    assert {"aten::addmm", "aten::t"} <= ops and trace.target == "script:pkg.cli:train"


@pytest.mark.slow
def test_a_script_reading_beside_itself_with_numpy_runs_its_step_from_its_folder(tmp_path):
    """NOTE [a script run from its own folder]: numpy's loader checks the path itself, so only the
    working directory answers it; the run says it moved."""
    pytest.importorskip("torch")
    from opscan.pipeline.entry_step import run_command
    from opscan.records import TrainingEntry
    from tests.targets.test_targets_entry import _gcn_like

    _gcn_like(tmp_path)
    entry = TrainingEntry("python pygcn/train.py", "main-step", "pygcn/train.py", 1)
    trace, notes = run_command(entry, tmp_path, None, None)
    assert trace.complete and trace.steps == 1, trace.stopped_at
    assert "aten::addmm" in {u.op for u in (*trace.ops, *trace.host_ops)} and trace.replaced == ()
    assert any("run from its own folder pygcn/" in n for n in notes), notes


class _NothingBuilds(Calls):
    def trace(self, model, root, profile, limits):
        self.ran.append(f"trace {model.target}")
        raise TraceError("cannot choose a value for the required argument 'd_latent'")


@pytest.mark.parametrize("fmt", ["json", "markdown", "terminal"])
def test_a_command_that_stopped_with_nothing_traced_is_named_in_the_headline_and_step(tmp_path, fmt):
    """NOTE [a command that stopped, nothing traced]: not only the source's blockers."""
    stopped = _trace("script:train.py", ops=(), complete=False, steps=0,
                     stopped_at="(before any op) at utils.py:143: FileNotFoundError: [Errno 2] No such file or "
                                "directory: './data/train.pickle'")
    calls = _NothingBuilds(stopped)
    report = _analyse(_project(tmp_path), calls)
    assert calls.ran[0] == "command python train.py --lr 3e-4" and not report.verdict.ops_checked
    step = report.verdict.step
    assert step.kind is StepKind.NONE and step.command == "python train.py --lr 3e-4"
    assert report.verdict.headline.endswith(
        "; `python train.py --lr 3e-4` stopped before its first optimizer step: FileNotFoundError at utils.py:143")
    from importlib import import_module

    out = io.StringIO()
    import_module(REPORTERS[fmt]).render(report, out)
    assert "FileNotFoundError at utils.py:143" in " ".join(out.getvalue().split())


def test_the_ops_of_a_command_that_stopped_are_no_training_step(tmp_path):
    """NOTE [the ops of a command that stopped]: kept when the model path built nothing, named as what they are."""
    stopped = _trace("script:train.py", complete=False, steps=0,
                     stopped_at="aten::detach at data.py:18: KeyError: 'lemma'")
    report = _analyse(_project(tmp_path), _NothingBuilds(stopped))
    assert [t.target for t in report.traces] == ["script:train.py"] and report.verdict.ops_checked
    step = report.verdict.step
    assert step.kind is StepKind.NONE and step.command == "python train.py --lr 3e-4"
    assert "training step of" not in step.text and "KeyError at data.py:18" in step.text
    assert report.verdict.kind is not VerdictKind.READY


def test_a_command_that_trained_on_the_host_only_with_nothing_traced_says_so(tmp_path):
    """NOTE [a step that never reaches the device]: not "ran to its end without a backward pass"."""
    host = _trace("script:train.py", ops=(), complete=True, steps=1)
    report = _analyse(_project(tmp_path), _NothingBuilds(host))
    step = report.verdict.step
    assert step.kind is StepKind.NONE and "trained on the host only" in step.text
    assert "without a backward pass" not in step.text and "trained on the host only" in report.verdict.headline


class _PerCommand(Calls):
    """Each command's own trace, by its script."""

    def __init__(self, traces: dict) -> None:
        super().__init__()
        self.traces = traces

    def command(self, entry, root, profile, limits):
        self.ran.append(f"command {entry.command}")
        return self.traces[entry.command.split()[1]], ()


def test_a_command_that_trains_on_the_host_only_gives_way_to_the_next(tmp_path):
    """NOTE [a command that trains on the host only]: the next command found is run."""
    root = _project(tmp_path)
    (root / "train_gan.py").write_text(STEPS, encoding="utf-8")
    (root / "README.md").write_text("```sh\npython train.py --lr 3e-4\npython train_gan.py\n```\n", encoding="utf-8")
    calls = _PerCommand({"train.py": _trace("script:train.py", ops=(), steps=1),
                         "train_gan.py": _trace("script:train_gan.py", ("aten::addmm",), steps=1)})
    report = _analyse(root, calls)
    assert calls.ran == ["command python train.py --lr 3e-4", "command python train_gan.py"]
    assert report.verdict.step.kind is StepKind.PROJECT and report.verdict.step.command == "python train_gan.py"
    assert any("trained on the host only: the next command found is run instead" in n for n in report.notes)


@pytest.mark.parametrize("built", [("../outside.py", "Net", "{}"), ("model.py", "Net; import os", "{}"),
                                   ("absent.py", "Net", "{}"), ("model.py", "Net", "x" * 70_000), ("model.py",)])
def test_a_childs_record_of_the_model_it_built_is_checked_as_data(tmp_path, built):
    """The child ran the project's code: a record naming no project file, no class name, or too much
    is ignored (NOTE [the model the command built]); the model path runs as it would without it."""
    stopped = _trace("script:train.py", ops=(), complete=False, steps=0, stopped_at="KeyError at train.py:3",
                     built_model=built)
    calls = Calls(stopped)
    report = _analyse(_project(tmp_path), calls)
    assert not any("built before it stopped" in n for n in report.notes)
    assert all(not r.startswith(("trace repo:../", "trace repo:absent")) for r in calls.ran)
    assert report.verdict.step.kind is StepKind.STAND_IN


def test_a_stopped_command_is_not_in_the_headline_when_the_model_path_traced(tmp_path):
    stopped = _trace("script:train.py", ops=(), complete=False, steps=0, stopped_at="KeyError at train.py:3")
    report = _analyse(_project(tmp_path), Calls(stopped))
    assert report.verdict.step.kind is StepKind.STAND_IN and "stopped before" not in report.verdict.headline
