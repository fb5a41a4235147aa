"""run_script: an unmodified training or inference script run on fake tensors, its ops recorded.

NOTE [running a script]
The script runs as `python SCRIPT ARGS` would run it (runpy, `__name__ == "__main__"`, its
sys.argv, its working directory: it reads its data and may write files), with:
- every tensor fake (opscan's FakeMode, as in `opscan trace`): no model-sized compute, and no
  weights are made; host tensors (data loading, metrics) are fake CPU tensors, so their
  data-dependent values (`.item()`, `if loss < best`) are stand-ins, counted and reported;
- CUDA requests answered as on the imitated device (opscan/trace/run/redirect.py);
- the recorder of `opscan trace`, told the phase: a module called from outside any module starts
  "forward" (after an update), `backward()` / `autograd.grad` is "backward", and what follows a
  backward (clipping, unscaling, the optimizer step, hand-written updates) is "optimizer";
- torch.optim's global step hooks count each optimizer's steps: the run ends when an optimizer is
  about to take step N+1 (so every optimizer of a GAN-style loop steps N times); a script without
  a torch.optim optimizer runs to its end;
- ops whose tensors are all on the CPU while the device is another are host ops, listed apart;
- foreach and fused choices made as for real tensors of the same device (torch.optim and
  clip_grad_norm_ fall back to for-loops for tensor subclasses);
- on the imitated neuron device, TorchNeuron's package (`torch_neuronx`) is found and imports, as
  on a Trainium machine, for libraries that look for it before they use `torch.neuron`
  (NOTE [the imitated package] in neuron_package.py);
- `torchrun`-style jobs: rank 0 of `nproc` on a fake process group (init_process_group answered
  with it), DistributedDataParallel a pass-through (its all-reduce runs in C++, not as aten ops);
- `.item()` stand-ins that never end a loop answered with the loop's exit where the run would stop
  (NOTE [forced loop exits] in loop_exits.py);
- DataLoader workers imitated in-process (loaders.py), checkpoints written as zeros and small ones
  read back for real (checkpoints.py), libraries asking whether a tensor is fake answered as in a
  real run (libraries.py).
"""

from __future__ import annotations

import contextlib
import os
import runpy
import sys
import time

import torch
from torch import nn

from opscan.errors import TraceError, UsageError
from opscan.records import DeviceProfile, Mode, ModelTrace, Phase
from opscan.trace import (
    compiled,
    fakes,
    lazy,
    logs,
)
from opscan.trace import forecast as compile_forecast
from opscan.trace import numbers, signatures
from opscan.trace.run import (
    built_models,
    checkpoints,
    configured,
    generators,
    host_sequences,
    libraries,
    stand_in_hooks,
    stand_ins as standing,
    loaders,
    loop_exits,
    neuron_package,
    package_root,
    run_mode,
    workers as worker_processes,
)
from opscan.trace import device as devices
from opscan.trace.run import redirect as redirects
from opscan.trace.recorder import Recorder, collect_tensors
from opscan.trace.signatures import CompileLog
from opscan.trace.sources import SourceFinder

RUN_DEVICES = ("neuron", "cpu")
# The hint after a stopped run names options `opscan run` has (tests/run/test_run_options.py).
RUN_HINT = ("--device cpu, to see whether the problem is device-specific; set OPSCAN_TRACE_DEBUG=1 "
            "for the full traceback")


class StepsDone(BaseException):
    """The run took its optimizer steps (a BaseException: a script's `except Exception` keeps it)."""


class ScriptRecorder(Recorder):
    """The trace's recorder for a whole script: names modules as they are first called, follows
    the phases of NOTE [running a script] and keeps host ops apart."""

    def __init__(self, finder: SourceFinder, device: str) -> None:
        super().__init__(finder, device, {})
        self.host = Recorder(finder, "cpu", {}) if device != "cpu" else None
        self.data_values = True   # host data keeps its values (NOTE [shape origins] in signatures.py)
        if self.host is not None:
            self.host.data_values = True
            self.host.compile_log = CompileLog(self.compile_log.origins)
        self.backwards = 0
        self.loop_exits = loop_exits.LoopExits()

    def _stand_in(self, func, name, source, args, kwargs):
        return self.loop_exits.stand_in(self, func, name, source, args, kwargs)   # NOTE [forced loop exits]

    def enter_module(self, module, args) -> None:
        if not self.module_stack:
            if id(module) not in self.module_names:
                for name, sub in module.named_modules(remove_duplicate=False):
                    self.module_names.setdefault(id(sub), name)
            if self.phase == Phase.OPTIMIZER:
                self.phase = Phase.FORWARD
        super().enter_module(module, args)

    def _record(self, name, source, args, kwargs, out) -> None:
        if self.host is not None:
            tensors = collect_tensors(out, collect_tensors(kwargs, collect_tensors(args, [])))
            if tensors and not any(t.device.type == self.device_type for t in tensors):
                self.host.phase = self.phase
                self.host._dynamic = self._dynamic
                self.host._record(name, source, args, kwargs, out)
                return
        super()._record(name, source, args, kwargs, out)

    def end_step(self, optimizer) -> None:
        """An optimizer took a step: the compile signatures' segment ends (forecast.py `steps_of`)."""
        self.compile_log.close(id(optimizer))
        if self.host is not None:
            self.host.compile_log.close(id(optimizer))

    def forecast(self, stopped_by_steps: bool):
        """The run's CompileForecast (the partial step it stopped in left out)."""
        return compile_forecast.forecast(self.compile_log, self.host.compile_log if self.host is not None else None,
                                   drop_rest=stopped_by_steps)


def run_script(script: str, argv=(), *, module: bool = False, device: str = "neuron", steps: int | None = 1,
               nproc: int | None = None, env: dict | None = None, profile: DeviceProfile | None = None,
               project_root: str | None = None, cwd: str | None = None,
               stand_ins: bool = False) -> tuple[ModelTrace, tuple[str, ...]]:
    """Run `script` (a path, a module name when `module`, or a console script's `module:function`)
    with `argv` on fake tensors.

    Returns (the trace, notes: how the run ended and each CUDA request answered, with its line).
    `steps`: optimizer steps to run (None: to the end); `nproc`: world size of a fake process group;
    `env`: environment variables its launcher sets (accelerate launch's), set during the run only;
    `stand_ins`: data and weights absent, outside `project_root` or remote are stood in for (NOTE
    [stand-ins for data and weights] in stand_ins.py; `opscan PATH`'s run of the training command).
    """
    if device not in RUN_DEVICES:
        raise UsageError(f"unknown device {device!r} (known: {', '.join(RUN_DEVICES)})")
    if steps is not None and steps < 1:
        raise UsageError(f"--steps must be at least 1, not {steps}")
    profile = profile or devices.DEFAULT_PROFILE
    if device == "neuron":
        devices.ensure_neuron()
        devices.apply_profile(profile)
        devices.ensure_autocast()
    finder = SourceFinder(project_root)
    recorder = ScriptRecorder(finder, device)
    requests = redirects.Requests(finder)
    compiles = compiled.Compiles(finder, requests)   # NOTE [compiled regions]
    counter = _Steps(steps, recorder)
    standins = standing.StandIns(project_root, finder, None if module else script) if stand_ins else None
    workers = worker_processes.Workers() if stand_ins else None   # NOTE [training in worker processes]
    built = built_models.BuiltModels(project_root or "") if stand_ins and project_root else None
    started = time.perf_counter()
    stopped, hint, ended = "", "", "ran to its end"
    package = neuron_package.findable(requests.note) if device == "neuron" else contextlib.nullcontext()
    extra_path, path_note = package_root.package_root(script, project_root) if stand_ins and not module else ("", "")
    inserted, insert_notes = package_root.absolute_inserts(script, project_root) if stand_ins and not module \
        else ((), ())
    extra_paths = tuple(p for p in (extra_path, *inserted) if p)
    with logs.captured(), _as_main(script, argv, module, cwd, extra_paths), _environment(env or {}), \
            _distributed(nproc, device) as dist_note, \
            _phases(recorder, counter), package:
        try:
            with _run_rules(device, requests, profile, recorder, compiles, standins), \
                    worker_processes.imitated(workers), \
                    (built.watching() if built is not None else contextlib.nullcontext()):   # NOTE [the model the
                # command built] in built_models.py
                if module and ":" in script:   # a console script: its function, as its launcher calls it
                    name, _, function = script.partition(":")
                    sys.exit(runpy.run_module(name, alter_sys=True)[function]())
                elif module:
                    runpy.run_module(script, run_name="__main__", alter_sys=True)
                else:
                    runpy.run_path(script, run_name="__main__")
        except StepsDone:
            ended = f"ended after {steps} optimizer step{'s' if steps != 1 else ''} of each optimizer"
        except SystemExit as exc:
            if exc.code not in (None, 0):
                stopped = f"the script exited with {exc.code!r} (sys.exit)"
        except (UsageError, TraceError):
            raise
        except Exception as exc:  # noqa: BLE001 - the script's failure ends the run, kept partial
            from opscan.trace.tracer import stopped_reason

            stopped, hint = stopped_reason(exc, recorder, finder, RUN_HINT)
            if standins is not None:
                stopped += standing.unanswered(exc, standins)
    label = _name(script, module, project_root)
    notes = [f"{label}: {ended if not stopped else 'stopped'}; {counter.describe()}"]
    if path_note:
        notes.append(f"{label}: {path_note}")
    notes.extend(f"{label}: {line}" for line in insert_notes)
    notes.extend(f"{label}: {line}" for line in requests.lines())
    notes.extend(f"{label}: {line}" for line in recorder.loop_exits.notes())
    notes.extend(f"{label}: {line}" for line in (workers.notes() if workers is not None else ()))
    if dist_note:
        notes.append(f"{label}: {dist_note}")
    mode = Mode.TRAIN if recorder.backwards or counter.total else Mode.INFERENCE
    trace = ModelTrace(
        target=f"script:{label}", mode=mode, device=device, ops=recorder.usages(mode),
        stand_ins=recorder.stand_in_list(), complete=not stopped, stopped_at=stopped,
        stop_hint=hint,
        seconds=round(time.perf_counter() - started, 3), supplied_fakes=tuple(sorted(recorder.supplied)),
        host_ops=recorder.host.usages(mode) if recorder.host is not None else (), steps=counter.total,
        compile=recorder.forecast(ended != "ran to its end"),
        compiled=compiles.regions(), replaced=tuple(standins.replaced) if standins is not None else (),
        built_model=built.model() if built is not None else ())
    return trace, tuple(notes)


@contextlib.contextmanager
def _run_rules(device: str, requests, profile, recorder: ScriptRecorder, compiles: compiled.Compiles,
               standins: standing.StandIns | None = None):
    """The fake mode, the answers and rules of NOTE [running a script] and the recorder, entered in
    this order (one ExitStack: Python allows 20 nested blocks in a function); torch.compile records
    its regions and their ops (NOTE [compiled regions])."""
    with contextlib.ExitStack() as stack:
        for manager in (run_mode.RunMode(allow_non_fake_inputs=True), redirects.answering(device, requests),
                        generators.imitated(device, requests.note),
                        compiled.compiling(compiles),
                        devices.sdpa_context(device, profile), fakes.fake_deepcopy(), fakes.packed_sequences(),
                        fakes.identity_conversions(),
                        fakes.fake_format(), fakes.real_one_hot(), _foreach_as_real(),
                        loaders.in_process(requests.note, real_data=standins is not None),
                        run_mode.host_reads(recorder), host_sequences.HostSequences(),
                        checkpoints.checkpoints(recorder), stand_in_hooks.installed(standins),
                        libraries.real_answers(device, requests.note), lazy.lazy(),
                        configured.loader_sites(recorder.finder),   # NOTE [sites the user can change]
                        signatures.tail_batches(recorder.compile_log, collect_tensors),
                        numbers.number_shapes(recorder.compile_log), recorder,
                        compiled.RegionOps(compiles)):
            stack.enter_context(manager)
        yield


def _name(script: str, module: bool, project_root: str | None) -> str:
    """The script as the report names it: a module name, else its path relative to the project."""
    if module:
        return script
    path = os.path.abspath(script)
    base = os.path.abspath(project_root or os.getcwd())
    rel = os.path.relpath(path, base)
    return path if rel.startswith("..") else rel.replace(os.sep, "/")


class _Steps:
    """Counts each torch.optim optimizer's steps; ends the run before step `limit` + 1."""

    def __init__(self, limit: int | None, recorder: ScriptRecorder) -> None:
        self.limit = limit
        self.recorder = recorder
        self.counts: dict[int, int] = {}
        self.total = 0

    def pre(self, optimizer, args, kwargs) -> None:
        if self.limit is not None and self.counts.get(id(optimizer), 0) >= self.limit:
            raise StepsDone
        self.recorder.phase = Phase.OPTIMIZER

    def post(self, optimizer, args, kwargs) -> None:
        self.counts[id(optimizer)] = self.counts.get(id(optimizer), 0) + 1
        self.total += 1
        self.recorder.end_step(optimizer)

    def describe(self) -> str:
        if not self.counts:
            return "no torch.optim optimizer stepped"
        return f"{self.total} optimizer step{'s' if self.total != 1 else ''} of {len(self.counts)} " \
               f"optimizer{'s' if len(self.counts) != 1 else ''}"


@contextlib.contextmanager
def _phases(recorder: ScriptRecorder, counter: _Steps):
    """Optimizer step hooks, module hooks and backward wrappers that set the recorder's phase."""
    from torch.optim.optimizer import (
        register_optimizer_step_post_hook,
        register_optimizer_step_pre_hook,
    )

    backward, grad = torch.autograd.backward, torch.autograd.grad

    def run_backward(*args, **kwargs):
        recorder.phase = Phase.BACKWARD
        recorder.backwards += 1
        try:
            return backward(*args, **kwargs)
        finally:
            recorder.phase = Phase.OPTIMIZER

    def run_grad(*args, **kwargs):
        previous, recorder.phase = recorder.phase, Phase.BACKWARD
        recorder.backwards += 1
        try:
            return grad(*args, **kwargs)
        finally:
            recorder.phase = previous

    hooks = (register_optimizer_step_pre_hook(counter.pre), register_optimizer_step_post_hook(counter.post),
             nn.modules.module.register_module_forward_pre_hook(recorder.enter_module),
             nn.modules.module.register_module_forward_hook(recorder.exit_module, always_call=True))
    try:
        with fakes.patched(torch.autograd, "backward", run_backward), fakes.patched(torch.autograd, "grad", run_grad):
            yield
    finally:
        for hook in hooks:
            hook.remove()


@contextlib.contextmanager
def _foreach_as_real():
    """torch.optim and clip_grad_norm_ choose foreach for fake tensors as for real ones."""
    from torch._subclasses.fake_tensor import FakeTensor
    from torch.optim import optimizer
    from torch.utils import _foreach_utils

    lists = (optimizer._foreach_supported_types, _foreach_utils._foreach_supported_types)
    added = [types for types in lists if FakeTensor not in types]
    for types in added:
        types.append(FakeTensor)
    try:
        yield
    finally:
        for types in added:
            types.remove(FakeTensor)


@contextlib.contextmanager
def _as_main(script: str, argv, module: bool, cwd: str | None, extra_paths: tuple[str, ...] = ()):
    """sys.argv, sys.path[0] and the working directory as `python SCRIPT ARGS` sets them (and
    `extra_paths` last on sys.path: NOTE [a script inside its package] and NOTE [an absolute import
    path of the author's machine] in package_root.py)."""
    saved = (list(sys.argv), list(sys.path), os.getcwd())
    if cwd:
        os.chdir(cwd)
    if not module:
        if not os.path.isfile(script):
            raise UsageError(f"no such script: {script}")
        sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    else:
        sys.path.insert(0, os.getcwd())
    for extra in extra_paths:
        if extra not in sys.path:
            sys.path.append(extra)
    sys.argv = [script, *argv]
    try:
        with contextlib.redirect_stdout(sys.stderr):   # the script's prints: stdout is the report's
            yield
    finally:
        sys.argv, sys.path[:] = saved[0], saved[1]
        os.chdir(saved[2])


@contextlib.contextmanager
def _environment(env: dict):
    """os.environ with `env` set inside (a launcher's variables), as it was after."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update({k: str(v) for k, v in env.items()})
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextlib.contextmanager
def _distributed(nproc: int | None, device: str):
    """A torchrun-like environment and a fake process group of `nproc` (NOTE [running a script])."""
    import torch.distributed as dist

    if not dist.is_available():
        yield ""
        return
    if device == "neuron":   # NOTE [imitated registrations] in neuron_package.py
        neuron_package.register_distributed()
    world = nproc or int(os.environ.get("WORLD_SIZE", "1"))
    env = {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": str(world), "LOCAL_WORLD_SIZE": str(world),
           "MASTER_ADDR": "localhost", "MASTER_PORT": "29500"} if nproc else {}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    used = []

    def init_process_group(*args, **kwargs):
        from torch.testing._internal.distributed.fake_pg import FakeStore

        from opscan.trace.fsdp import patch_device_module

        used.extend(patch_device_module(device))
        used.append("init")
        return original_init("fake", store=FakeStore(), rank=0, world_size=world)

    original_init = dist.init_process_group
    data_parallel = _PassThrough if device != "cpu" else torch.nn.DataParallel   # NOTE [DataParallel of one device]
    with fakes.patched(dist, "init_process_group", init_process_group), \
            fakes.patched(torch.nn.parallel, "DistributedDataParallel", _PassThrough), \
            fakes.patched(torch.nn.parallel.distributed, "DistributedDataParallel", _PassThrough), \
            fakes.patched(torch.nn, "DataParallel", data_parallel), \
            fakes.patched(torch.nn.parallel, "DataParallel", data_parallel):
        try:
            yield (f"rank 0 of {world} on a fake process group" if nproc else "")
        finally:
            if "init" in used and dist.is_initialized():
                dist.destroy_process_group()
            module = getattr(torch, device, None)
            for name in used:
                if name != "init" and module is not None and hasattr(module, name):
                    delattr(module, name)
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


# NOTE [a trainer's DistributedDataParallel]
# Lightning's DDP strategy (chosen for one device too, by `strategy="ddp"` or a 1.x default) imports
# DistributedDataParallel from `torch.nn.parallel.distributed` and wraps the model in it: the real
# class syncs the module's state by broadcast in its constructor, which fails on fake tensors ("its
# data is not allocated yet"). So the pass-through replaces it in that module too (Lightning is
# imported by the script inside the run, so it binds the pass-through), and answers what such a
# trainer reads of it: `static_graph`, `find_unused_parameters`, the sync flags, `register_comm_hook`,
# `_set_static_graph`, `_get_ddp_logging_data`, `join()`. One process has nothing to synchronise.


# NOTE [DataParallel of one device]
# `model = torch.nn.DataParallel(model).cuda()` (research code written for several GPUs) asks
# torch's CUDA device list and guards in its constructor, which the imitated device has not. The
# run imitates one device, and DataParallel over one device calls its module on the inputs as they
# are: so on the imitated device it is the same pass-through as DistributedDataParallel (`.module`,
# forward). On the CPU torch's own runs (it calls the module directly when no GPU is there).


class _PassThrough(nn.Module):
    """DistributedDataParallel (and DataParallel of one device) as seen by the script and by the
    trainers that wrap a model in it (Lightning's DDP strategy): `.module`, `no_sync()`, forward,
    and the flags and hooks they read (NOTE [a trainer's DistributedDataParallel])."""

    def __init__(self, module, *args, **kwargs) -> None:
        super().__init__()
        self.module = module
        self.static_graph = bool(kwargs.get("static_graph", False))
        self.find_unused_parameters = bool(kwargs.get("find_unused_parameters", False))
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.device_ids = kwargs.get("device_ids")

    def register_comm_hook(self, state, hook) -> None:
        """A gradient communication hook: nothing is communicated in one process."""

    def _set_static_graph(self) -> None:
        self.static_graph = True

    def _get_ddp_logging_data(self) -> dict:
        return {}

    @contextlib.contextmanager
    def join(self, *args, **kwargs):
        yield

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        yield


__all__ = ["RUN_DEVICES", "ScriptRecorder", "StepsDone", "run_script"]
