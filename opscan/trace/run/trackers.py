"""Experiment trackers a run makes inert (NOTE [stand-ins for data and weights] in stand_ins.py):
wandb, TensorBoard's writers (torch.utils.tensorboard, tensorboardX), mlflow, comet_ml.

NOTE [inert trackers]
Research scripts log while they train: `wandb.login()` / `wandb.init()` then `wandb.log({...})`,
a TensorBoard `SummaryWriter`, `mlflow.start_run()`, a comet `Experiment`. None of that changes the
ops of the step, and in a contained child each would stop the run (a login with no API key, a
network that is refused) or write files the run has no business writing. So:
- wandb runs in its own documented disabled mode: the contained child's environment holds
  `WANDB_MODE=disabled` (containment/policy.py, also for `opscan run`), where `init` returns a run
  that logs nothing and `login` asks for no key; here `wandb.init` is only named in the report;
- TensorBoard's `SummaryWriter` (torch's and tensorboardX's), mlflow's run and logging functions
  and comet_ml's experiments answer with `Inert`: every method does nothing and returns another
  Inert (a context manager too), so `writer.add_scalar("loss", loss.item(), step)` never asks
  for a value and no event file is written;
each one is named in the report ("stood in for tracker: ...") with the line that asked. No tracker
is imported by opscan: each is patched when the script imports it.
"""

from __future__ import annotations

from collections.abc import Callable

from opscan.trace.run.stand_ins import Patches, StandIns

NOTHING = "inert: nothing logged, written or sent"
MLFLOW = ("start_run", "end_run", "log_param", "log_params", "log_metric", "log_metrics", "log_artifact",
          "log_artifacts", "log_dict", "log_text", "log_figure", "log_image", "log_input", "set_tag", "set_tags",
          "set_experiment", "set_tracking_uri", "create_experiment", "autolog", "log_model")
COMET = ("Experiment", "OfflineExperiment", "ExistingExperiment", "start", "init", "login")


class Inert:
    """A tracker's object that does nothing (NOTE [inert trackers])."""

    def __init__(self, *args, **kwargs) -> None:
        pass

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Inert()

    def __call__(self, *args, **kwargs) -> Inert:
        return Inert()

    def __enter__(self) -> Inert:
        return self

    def __exit__(self, *exc) -> bool:
        return False

    def __iter__(self):
        return iter(())

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return "Inert()"


def install(stand_ins: StandIns, patches: Patches) -> dict[str, Callable]:
    """Each tracker patched when the script imports it."""
    return {"wandb": lambda module: _wandb(module, stand_ins, patches),
            "torch.utils.tensorboard": lambda module: _writer(module, "torch.utils.tensorboard", stand_ins, patches),
            "tensorboardX": lambda module: _writer(module, "tensorboardX", stand_ins, patches),
            "mlflow": lambda module: _functions(module, "mlflow", MLFLOW, stand_ins, patches),
            "comet_ml": lambda module: _functions(module, "comet_ml", COMET, stand_ins, patches)}


def _wandb(module, stand_ins: StandIns, patches: Patches) -> None:
    original = getattr(module, "init", None)
    if not callable(original):
        return

    def init(*args, **kwargs):
        stand_ins.record("tracker", "wandb.init", "wandb's disabled mode (WANDB_MODE=disabled): " + NOTHING)
        kwargs["mode"] = "disabled"
        return original(*args, **kwargs)

    def login(*args, **kwargs) -> bool:
        stand_ins.record("tracker", "wandb.login", "no API key asked for (wandb's disabled mode): " + NOTHING)
        return False   # what login answers in wandb's disabled mode

    patches.set(module, "init", init)
    if callable(getattr(module, "login", None)):
        patches.set(module, "login", login)


def _writer(module, name: str, stand_ins: StandIns, patches: Patches) -> None:
    if not hasattr(module, "SummaryWriter"):
        return

    class SummaryWriter(Inert):
        def __init__(self, *args, **kwargs) -> None:
            stand_ins.record("tracker", f"{name}.SummaryWriter", NOTHING)

    patches.set(module, "SummaryWriter", SummaryWriter)


def _functions(module, name: str, names: tuple[str, ...], stand_ins: StandIns, patches: Patches) -> None:
    for attribute in names:
        if hasattr(module, attribute):
            patches.set(module, attribute, _inert_function(f"{name}.{attribute}", stand_ins))


def _inert_function(subject: str, stand_ins: StandIns) -> Callable:
    def inert(*args, **kwargs) -> Inert:
        stand_ins.record("tracker", subject, NOTHING)
        return Inert()
    return inert
