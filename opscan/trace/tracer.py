"""trace: build the model (a caller's `build`, opscan/targets/), make it fake, and record one step's ops."""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import os
import time
import traceback
from collections.abc import Callable

import torch
from torch import nn

from opscan.errors import TraceError, UsageError
from opscan.records import (
    CompileForecast, DeviceProfile, MODES, Mode, ModelTrace, OpSource, OpUsage, PHASES, Phase, STEP_PARTS, Shrink,
    StandIn, StepPart, StepPartKind, TrainStep)
from opscan.trace import compiled
from opscan.trace import device as devices
from opscan.trace import fakes
from opscan.trace import fsdp as fsdps
from opscan.trace import lazy, logs
from opscan.trace import forecast as compile_forecast
from opscan.trace import numbers, roles, signatures
from opscan.trace import step as steps
from opscan.trace.recorder import MAX_SOURCES, LayerShapes, Recorder
from opscan.trace.sources import SourceFinder
from opscan.trace.spec import Built, InputSpec, parse_input, placeholder_spec
from opscan.trace.step import planned_amp

# Register `neuron` before anything runs a backward in this process (see opscan.trace.prepare).
try:
    devices.ensure_neuron()
except TraceError:
    pass  # PrivateUse1 is taken by another backend: only --device neuron needs it, and says so


def trace(target: str, build: Callable[[tuple[InputSpec, ...]], Built], *, mode: str = Mode.TRAIN,
          device: str = "neuron", profile: DeviceProfile | None = None, optimizer: str = "adamw",
          optimizer_impl: str | None = None, amp: str | None = None, inputs=(),
          project_root: str | None = None, fsdp: int | None = None, steps: int = 1,
          step: TrainStep | None = None) -> ModelTrace:
    """Check the options, `build(specs)` the model, trace it on fake tensors and return the ops it
    dispatches as the ModelTrace of `target` (see docs/trace.md).

    `inputs` are `--input` specs (InputSpec or their text); `build` applies them to its inputs
    (opscan/targets/loader.py). The build runs under the trace's log capture and clock. `steps`:
    the step is run that many times, the later ones recording compile signatures only (the ops,
    counts and costs are the first step's; docs/trace.md, "Compile signatures"). `step`: the training
    step a project's script constructs (loss, optimizer, AMP, clipping; opscan/targets/train_step.py),
    applied in train mode in place of the stand-in parts; the trace's `step` says what ran.
    """
    if steps < 1:
        raise UsageError(f"--steps must be at least 1, not {steps}")
    if mode not in MODES:
        raise UsageError(f"unknown mode {mode!r} (known: {', '.join(MODES)})")
    if device not in devices.DEVICES:
        raise UsageError(f"unknown device {device!r} (known: {', '.join(devices.DEVICES)})")
    amp = amp or (planned_amp(step) if Mode(mode).trains and device != "meta" else None)
    if amp is not None and device == "meta":
        raise UsageError("--amp needs --device neuron, cpu or cuda (autocast has no meta device)")
    fsdp = fsdps.check_world_size(fsdp)
    if fsdp is not None and device not in ("neuron", "cpu"):
        raise UsageError("--fsdp needs --device neuron or cpu (FSDP2 shards onto a real device type)")
    specs = tuple(s if isinstance(s, InputSpec) else parse_input(s) for s in inputs)
    if device == "cuda" and not torch.backends.cuda.is_built():
        raise TraceError(f"--device cuda needs a CUDA build of PyTorch; this one ({torch.__version__}) "
                         "is CPU-only (no GPU is needed, only the build); use --device cpu or neuron")
    profile = profile or devices.DEFAULT_PROFILE
    if device == "neuron":
        devices.ensure_neuron()
        devices.apply_profile(profile)
        if amp is not None:
            devices.ensure_autocast()
    started = time.perf_counter()
    with logs.captured():   # torch's log records stay off the terminal (see opscan/trace/logs.py)
        result = _build_and_run(target, build, mode, device, profile, optimizer, optimizer_impl, amp,
                                specs, project_root, fsdp, steps, step)
    return ModelTrace(target=target, mode=mode, device=device, ops=result.ops,
                      stand_ins=result.stand_ins, complete=result.complete,
                      stopped_at=result.stopped_at, stop_hint=result.stop_hint,
                      seconds=round(time.perf_counter() - started, 3),
                      supplied_fakes=result.supplied, retried=result.retried, shrink=result.shrink,
                      compile=result.compile, compiled=result.compiled, step=result.step)


def _build_and_run(target, build, mode, device, profile, optimizer, optimizer_impl, amp, specs,
                   project_root, fsdp, steps=1, plan=None) -> _Result:
    compiles = compiled.Compiles(SourceFinder(project_root))   # NOTE [compiled regions]
    with compiled.compiling(compiles):
        built = build(specs)
        with _fsdp_group(fsdp, device) as mesh:
            tracer = _Tracer(built, device, profile, project_root, mesh)
            tracer.steps = steps
            tracer.compiles = compiles
            tracer.plan = plan
            if mode == Mode.BOTH:
                inference = tracer.run(Mode.INFERENCE, optimizer, optimizer_impl, amp)
                train = tracer.run(Mode.TRAIN, optimizer, optimizer_impl, amp)
                result = _merge(target, device, inference, train)
                result.calls = train.calls
            else:
                result = tracer.run(mode, optimizer, optimizer_impl, amp)
            if tracer.probe_len and Mode(mode).trains:   # NOTE [sizes by role]
                tracer.tell_roles(result, optimizer, optimizer_impl, amp)
    result.shrink = tracer.shrink
    result.compiled = compiles.regions()
    return result


def _fsdp_group(fsdp: int | None, device: str):
    """The fake process group an --fsdp trace runs in (nothing without --fsdp)."""
    return contextlib.nullcontext() if fsdp is None else fsdps.fake_process_group(fsdp, device)


class _Tracer:
    """Holds the fake model and inputs; runs one mode's step under the recorder."""

    def __init__(self, built: Built, device: str, profile: DeviceProfile, project_root, mesh=None) -> None:
        self.built = built
        self.device = device
        self.profile = profile
        self.finder = SourceFinder(project_root)
        self.finder.stop_code = _Tracer._step.__code__
        self.steps = 1   # steps to run (trace(steps=)): the later ones record compile signatures only
        self.plan: TrainStep | None = None   # the script's step (trace(step=)); self.parts: what ran of it
        self.parts: dict[str, StepPart] = {}
        self.fake_mode = devices.FakeMode(allow_non_fake_inputs=True) if device != "meta" else None
        self.model = built.model
        self.compiles: compiled.Compiles | None = None   # set by the caller: torch.compile regions
        self._materialize()
        if mesh is not None:
            with self._mode():
                fsdps.shard(self.model, mesh)   # parameters become DTensors of fake shards
        self.names = {}
        for name, module in self.model.named_modules(remove_duplicate=False):
            self.names.setdefault(id(module), name)
        wanted = built.shrink or Shrink()
        hidden = wanted.hidden or model_width(self.model)
        self.layers, found = layer_stack(self.model, wanted.layers, hidden=hidden, seq_len=wanted.seq_len)
        self.probe_len, told = roles.plan(self.model, self.built, wanted.seq_len, hidden)
        self.shrink = dataclasses.replace(wanted, layer_list=self.layers.prefix[:-1], layers=found,
                                          real_layers=wanted.real_layers if found == wanted.layers else 0,
                                          hidden=hidden, roles=told)

    def tell_roles(self, result: _Result, optimizer, optimizer_impl, amp) -> None:
        """Trace the training step once more at `probe_len` and set each op's bytes by role from the two
        traces (NOTE [sizes by role] in opscan/trace/roles.py); the ops, counts and signatures stay the
        first trace's."""
        resized, main = self.built.resized, result.calls
        if resized is None or main is None:
            return
        kwargs, compiles = self.kwargs, self.compiles
        try:
            self.kwargs = {k: self._convert_value(v) if k in self.built.values else self._convert(v)
                           for k, v in resized(self.probe_len).items()}
            self.compiles = None
            probe = self.run(Mode.TRAIN, optimizer, optimizer_impl, amp)
        finally:
            self.kwargs, self.compiles = kwargs, compiles
        result.ops, self.shrink = roles.told(result.ops, main, probe.calls or [], self.shrink, self.probe_len)

    # -- fake parameters, buffers and inputs --
    def _fake(self, shape, dtype, requires_grad=False):
        with self._mode():
            t = torch.empty(shape, dtype=dtype, device=self.device)
        return t.requires_grad_(requires_grad) if requires_grad else t

    def _convert(self, value):
        if isinstance(value, torch.Tensor):
            if self.fake_mode is None:
                return value.to("meta")
            if value.device.type == self.device:
                return self.fake_mode.from_tensor(value, static_shapes=True)
            # values do not matter to a fake tensor; make it directly on the device it imitates
            return self._fake(value.shape, value.dtype, value.requires_grad)
        spec = placeholder_spec(value)
        if spec is not None:
            return self._fake(spec.shape, getattr(torch, spec.dtype))
        return value

    def _convert_value(self, value):
        """An integer input whose values shape the step (an image grid): a fake tensor that keeps
        them (see NOTE [inputs with values] in opscan/trace/device.py)."""
        if not isinstance(value, torch.Tensor) or self.fake_mode is None or value.is_floating_point():
            return self._convert(value)
        self.fake_mode.keep_values = True
        fake = self._fake(value.shape, value.dtype)
        fake.constant = value.clone()
        return fake

    def _materialize(self) -> None:
        done: dict[int, nn.Parameter] = {}
        for module in self.model.modules():
            for name, param in list(module._parameters.items()):
                if param is None:
                    continue
                if lazy.is_placeholder(param):   # shaped by its first forward: _infer_lazy
                    lazy.lazy_to(param, self.device)
                    continue
                new = done.get(id(param))
                if new is None:
                    new = nn.Parameter(self._fake(param.shape, param.dtype),
                                       requires_grad=param.requires_grad)
                    done[id(param)] = new
                module._parameters[name] = new
            for name, buf in list(module._buffers.items()):
                if buf is not None and lazy.is_placeholder(buf):
                    lazy.lazy_to(buf, self.device)
                elif buf is not None:
                    module._buffers[name] = self._convert(buf)
            _follow_device(module, self.device)
        self.args = tuple(self._convert(a) for a in self.built.args)
        self.kwargs = {k: self._convert_value(v) if k in self.built.values else self._convert(v)
                       for k, v in self.built.kwargs.items()}
        self.labels = self._convert(self.built.labels) if self.built.labels is not None else None
        self._infer_lazy()

    def _infer_lazy(self) -> None:
        """A model with lazy modules gets its shapes from a forward of the inputs, on fake tensors
        and not recorded, as the dry run torch's documentation asks for before an optimizer is
        built (NOTE [lazy modules on fake tensors] in lazy.py). A forward that fails here fails
        again in the recorded step, which reports it."""
        if not any(lazy.is_placeholder(t) for t in (*self.model.parameters(), *self.model.buffers())):
            return
        with contextlib.suppress(Exception), self._mode(), lazy.lazy(), torch.no_grad():
            self.model(*self.args, **self.kwargs)

    def _mode(self):
        return self.fake_mode if self.fake_mode is not None else contextlib.nullcontext()

    # -- one step --
    def run(self, mode: str, optimizer: str, optimizer_impl: str | None, amp: str | None, extra=None):
        extra = extra or {}
        self.parts = {}
        recorder = Recorder(self.finder, self.device, self.names, self.layers)
        if self.probe_len and mode == Mode.TRAIN:
            recorder.calls = []   # NOTE [sizes by role]: each call's tensors, to compare with a second trace
        opt = None
        if mode == Mode.TRAIN:
            self.model.train()
            params = [p for p in self.model.parameters() if p.requires_grad]
            opt = None
            if params:
                opt, self.parts[StepPartKind.OPTIMIZER] = steps.planned_optimizer(self.plan, optimizer, optimizer_impl,
                                                                                  params)
        else:
            self.model.eval()
        hooks = (
            nn.modules.module.register_module_forward_pre_hook(recorder.enter_module),
            nn.modules.module.register_module_forward_hook(recorder.exit_module, always_call=True),
        )
        stopped, hint = "", ""
        try:
            with self._mode(), devices.sdpa_context(self.device, self.profile), fakes.fake_deepcopy(), \
                    fakes.packed_sequences(), fakes.identity_conversions(), fakes.fake_format(), fakes.real_one_hot(), \
                    _numbers(mode, recorder), recorder, \
                    (compiled.RegionOps(self.compiles) if self.compiles is not None else contextlib.nullcontext()):
                stopped, hint = self._step(mode, recorder, opt, amp, extra)
                recorder.compile_log.close("step")
                for _ in range(self.steps - 1):   # later steps: their compile signatures only
                    if stopped:
                        break
                    recorder.signatures_only = True
                    recorder.phase = Phase.FORWARD
                    stopped, hint = self._step(mode, recorder, opt, amp, extra)
                    recorder.compile_log.close("step")
        finally:
            for hook in hooks:
                hook.remove()
        result = _Result(recorder.usages(mode), recorder.stand_in_list(), not stopped, stopped,
                         tuple(sorted(recorder.supplied)), stop_hint=hint)
        result.calls = recorder.calls
        result.step = _step_parts(self, mode, amp)
        result.compile = compile_forecast.forecast(recorder.compile_log)
        result.compile_log = recorder.compile_log
        if stopped and not extra and "use_cache" not in self.kwargs and _accepts(self.model, "use_cache"):
            # NOTE [cache stops]: a training step never reads its KV cache, yet transformers builds one
            # by default, and its cache code is where many default configs fail: a config with no
            # attention layer (get_seq_length), a cache deep-copied in forward, a cache that cannot
            # be built for its config, a recurrent cache updated in place that breaks backward
            # (xlstm; the stop is then in the autograd engine, far from the cache code). So a step
            # that stops is traced once more without the cache, as training scripts run it
            # (`use_cache=False`); when that completes the trace says so, else both stops are given.
            retry = self.run(mode, optimizer, optimizer_impl, amp, {"use_cache": False})
            if retry.stopped_at == stopped:
                return result        # the same stop without the cache: the cache was not the problem
            retry.retried = f"use_cache=False (with its cache the step stopped: {stopped})"
            if not retry.complete:   # both stops are the answer; the ops: the step's without the cache
                retry.retried = "use_cache=False"
                retry.stopped_at = f"with its cache: {stopped}; with use_cache=False: {retry.stopped_at}"
            return retry
        return result

    def _step(self, mode, recorder, opt, amp, extra) -> tuple[str, str]:
        """("", "") when the step ran, else its stop and what to try (NOTE [stop and hint])."""
        try:
            if mode == Mode.INFERENCE:
                kwargs = {k: v for k, v in {**self.kwargs, **extra}.items() if k not in self.built.train_only}
                with torch.no_grad(), steps.autocast(self.device, amp):
                    self.model(*self.args, **kwargs)
                return "", ""
            with steps.autocast(self.device, amp):
                output = self.model(*self.args, **{**self.kwargs, **extra})
                recorder.phase = Phase.LOSS
                loss, self.parts[StepPartKind.LOSS] = steps.planned_loss(output, self.labels, self.plan)
            if loss is None:
                return ("loss: the model's output has no floating-point tensor that requires grad",
                        "return a scalar loss (or an output with .loss) from the model or factory")
            recorder.phase = Phase.BACKWARD
            loss.backward()
            recorder.phase = Phase.OPTIMIZER
            clip = steps.planned_clip(self.plan, [p for p in self.model.parameters() if p.grad is not None])
            if clip is not None:
                self.parts[StepPartKind.CLIP] = clip
            if opt is not None:
                opt.step()
                opt.zero_grad(set_to_none=True)
            return "", ""
        except (UsageError, TraceError):
            raise
        except Exception as exc:  # noqa: BLE001 - any failure of model code ends the trace, kept partial
            return stopped_reason(exc, recorder, self.finder)


# NOTE [a module's own device]
# A model that keeps its device (`self.device = torch.device("cuda" if ... else "cpu")`, then
# `x.to(self.device)` in forward) moves its inputs where it was built, not where its weights are
# traced; the port sets that device to Trainium's. So a `torch.device` a module holds as a plain
# attribute (CPU or CUDA) follows its parameters onto the traced device.

def _follow_device(module: nn.Module, device: str) -> None:
    if device == "meta":
        return
    for name, value in list(vars(module).items()):
        if isinstance(value, torch.device) and value.type in ("cpu", "cuda") and not name.startswith("_"):
            setattr(module, name, torch.device(device))


def _step_parts(tracer: _Tracer, mode: str, amp: str | None) -> TrainStep | None:
    """What ran of the training step: the parts traced, each with its source (the plan's) or none
    (opscan's stand-in); the plan's parts that never ran (the step stopped first) kept, not applied."""
    if mode == Mode.INFERENCE:
        return None
    parts = dict(tracer.parts)
    planned = tracer.plan.part(StepPartKind.AMP) if tracer.plan is not None else None
    if amp is not None:
        parts[StepPartKind.AMP] = planned if planned is not None and planned.name == amp else \
            StepPart(StepPartKind.AMP, amp, "--amp")
    for part in tracer.plan.parts if tracer.plan is not None else ():
        parts.setdefault(part.part, dataclasses.replace(part, detail="; ".join(
            d for d in (part.detail, "the step stopped before it") if d), applied=False))
    order = [p for p in STEP_PARTS if p in parts]
    plan = tracer.plan
    return TrainStep(plan.script if plan is not None else "", tuple(parts[p] for p in order),
                     plan.backward if plan is not None else "")


def _accepts(model, name: str) -> bool:
    """Whether model(..., name=...) is a keyword its forward (or, through **kwargs, its base model's) takes."""
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False
    if name in params:
        return True
    # a transformers head that passes **kwargs on to its base model (GraniteMoeHybridForCausalLM)
    base = getattr(model, "base_model", None)
    forwards_kwargs = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    return forwards_kwargs and isinstance(base, nn.Module) and base is not model and _accepts(base, name)


def _numbers(mode: str, recorder: Recorder):
    """NOTE [numbers that become shapes] in a training step only: its torch function mode makes
    `has_torch_function` true, which turns off inference fast paths (nn.TransformerEncoderLayer's)."""
    return numbers.number_shapes(recorder.compile_log) if mode == Mode.TRAIN else contextlib.nullcontext()


class _Result:
    def __init__(self, ops, stand_ins, complete, stopped_at, supplied=(), retried="", stop_hint=""):
        self.ops, self.stand_ins, self.complete, self.stopped_at = ops, stand_ins, complete, stopped_at
        self.stop_hint = stop_hint
        self.supplied, self.retried = supplied, retried
        self.shrink: Shrink | None = None
        self.compile: CompileForecast | None = None
        self.compile_log: signatures.CompileLog | None = None   # what `compile` was made from
        self.compiled: tuple = ()   # CompileRegion of the torch.compile calls met
        self.calls: list | None = None   # the train step's calls as classified (NOTE [sizes by role])
        self.step: TrainStep | None = None   # the training step's parts that ran (train mode)


def _sum_shaped(*parts) -> tuple[tuple[int, int, int, int], ...]:
    """OpUsage.step_shape_bytes of several parts, summed per (class, width dims, sequence dims)."""
    total: dict[tuple[int, int, int], int] = {}
    for part in parts:
        for kind, width, seq, count in part:
            total[(kind, width, seq)] = total.get((kind, width, seq), 0) + count
    return tuple((*key, n) for key, n in sorted(total.items()))


def model_width(model) -> int:
    """The traced model's width (hidden size) where its modules show it, else 0: the size most of
    its normalization layers normalize over (LayerNorm, RMSNorm, ...: a transformer's hidden size),
    else the input width most of its linear layers take. NOTE [fallback scaling] in opscan/assess/assessment.py."""
    from collections import Counter

    norms: Counter = Counter()
    linears: Counter = Counter()
    for module in model.modules():
        if "norm" in type(module).__name__.lower():
            weight = getattr(module, "weight", None)
            if isinstance(weight, torch.Tensor) and weight.dim() == 1 and weight.numel() > 1:
                norms[int(weight.numel())] += 1
        elif isinstance(module, nn.Linear):
            linears[int(module.in_features)] += 1
    found = norms or linears
    return max(found.items(), key=lambda kv: (kv[1], kv[0]))[0] if found else 0


def layer_stack(model, wanted: int = 0, hidden: int = 0, seq_len: int = 0) -> tuple[LayerShapes, int]:
    """The model's repeated layers (NOTE [fallback scaling] in opscan/assess/assessment.py) and their count:
    of the nn.ModuleLists not inside another one, whose elements all hold parameters, the one of
    `wanted` length (the layer count the builder set, when known) holding the most parameters."""
    lists: list[tuple[str, nn.ModuleList]] = []
    for name, module in model.named_modules():
        if isinstance(module, nn.ModuleList) and len(module) and name and \
                not any(name.startswith(outer + ".") for outer, _ in lists) and \
                all(child is not None and any(True for _ in child.parameters()) for child in module):
            lists.append((name, module))
    if wanted:
        lists = [item for item in lists if len(item[1]) == wanted] or lists
    if not lists:
        return LayerShapes(hidden=hidden, seq_len=seq_len), 0
    name, stack = max(lists, key=lambda item: sum(p.numel() for p in item[1].parameters()))
    inside = {id(p) for p in stack.parameters()}
    params = list(model.parameters())

    def shapes(keep) -> frozenset:   # a 2-D weight is also read transposed (a linear layer's `t`)
        return frozenset(s for p in params if keep(id(p)) for s in (tuple(p.shape), tuple(p.shape)[::-1]))
    return LayerShapes(name, shapes(inside.__contains__), shapes(lambda i: i not in inside), hidden=hidden,
                       seq_len=seq_len), len(stack)


_HINTS = (
    ("StandInLoop", "bound the loop by a Python count, or trace with the loop's data-dependent "
     "exit moved outside the model"),
    ("device_ready_queues_", "this process ran a backward pass before opscan registered the `neuron` "
     "device; trace in a fresh process, or call opscan.trace.prepare() first"),
    ("Expected inputs of BF16", "this op's fake kernel accepts only bf16/fp16 inputs, though real CPU "
     "kernels run it in fp32 too (a limit of fake tracing, not of the model): trace the model in bf16 "
     "(hf: targets: \"dtype\": \"bfloat16\" in config.json; opscan zoo: --dtype bfloat16)"),
    ("UnsupportedOperatorException", "register a fake kernel for this op (torch.library.register_fake) "
     "or run the op outside the traced model"),
    ("no fake impl", "register a fake kernel for this op with torch.library.register_fake"),
    ("GuardOnDataDependentSymNode", "avoid Python control flow on tensor values in the model"),
    ("data-dependent", "make the size static (e.g. torch.nonzero_static) or compute it outside the model"),
    ("DynamicOutputShape", "make the size static (e.g. torch.nonzero_static) or compute it outside the model"),
    # Lightning's device check: the imitated machine has one device (NOTE [Lightning on the imitated device])
    ("But your machine only has", "the Trainer with devices=1: the imitated machine has one device, and a "
     "multi-device run's other ranks would be new processes, which a run does not imitate"),
)


# Every hint follows "try: " where a report prints it (records.joined_stop), so none starts with "try" itself.
DEFAULT_HINT = ("--device cpu or --mode inference, to see whether the problem is device- or "
                "backward-specific; set OPSCAN_TRACE_DEBUG=1 for the full traceback")


def stopped_reason(exc: BaseException, recorder: Recorder, finder: SourceFinder,
                   default_hint: str = DEFAULT_HINT) -> tuple[str, str]:
    """(`<op> at <file>:<line>: <why>`, what to try) for an exception that ended the trace
    (`default_hint` names options of the command that traced: `opscan run` has no --mode)."""
    where = None
    for frame, line in traceback.walk_tb(exc.__traceback__):
        filename = frame.f_code.co_filename
        if finder.is_user(filename):
            where = f"{finder.name(filename)}:{line}"
    pending = recorder.pending
    op = pending[0] if pending else (recorder.last[0] if recorder.last else "(before any op)")
    if where is None and pending and pending[1] is not None and pending[1].path:
        where = f"{pending[1].path}:{pending[1].line}"
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    first = first.split(". ")[0].rstrip(".")
    why = f"{type(exc).__name__}: {first}"
    if len(why) > 200:
        why = why[:197] + "..."
    text = f"{type(exc).__name__} {exc}"
    hint = next((h for key, h in _HINTS if key in text), default_hint)
    if os.environ.get("OPSCAN_TRACE_DEBUG"):
        traceback.print_exception(exc)
    op = op[: -len(".default")] if op.endswith(".default") else op
    invented = sum(recorder.stand_ins.values())
    if invented:   # the stop may come from a branch a real run would not take
        why += f" (after {invented} stand-in value{'s' if invented > 1 else ''}: data-dependent control flow)"
    return f"{op} at {where or 'an unknown place'}: {why}", hint


def _union_by_dtype(a, b) -> tuple:
    """The per-dtype sources of two usages of one op (model.OpUsage.dtype_sources), joined."""
    joined: dict = {}
    for dtype, sources in (*a, *b):
        joined.setdefault(dtype, set()).update(sources)
    return tuple((dtype, tuple(sorted(found))[:MAX_SOURCES]) for dtype, found in sorted(joined.items()))


def _merge(target: str, device: str, inference: _Result, train: _Result) -> _Result:
    """Join the two modes: each op's modes say where it was seen."""
    by_name: dict[str, OpUsage] = {}
    for part in (inference, train):
        for usage in part.ops:
            prev = by_name.get(usage.op)
            if prev is None:
                by_name[usage.op] = usage
                continue
            sources = tuple(sorted(set(prev.sources) | set(usage.sources)))[:MAX_SOURCES]
            by_name[usage.op] = OpUsage(
                op=usage.op, count=prev.count + usage.count,
                phases=tuple(p for p in PHASES if p in prev.phases or p in usage.phases),
                dtypes=tuple(sorted(set(prev.dtypes) | set(usage.dtypes))),
                sources=sources, modes=tuple(sorted(set(prev.modes) | set(usage.modes))),
                custom=prev.custom or usage.custom, step_calls=prev.step_calls + usage.step_calls,
                step_bytes=prev.step_bytes + usage.step_bytes,
                step_layer_calls=prev.step_layer_calls + usage.step_layer_calls,
                step_layer_bytes=prev.step_layer_bytes + usage.step_layer_bytes,
                step_token_bytes=prev.step_token_bytes + usage.step_token_bytes,
                step_layer_token_bytes=prev.step_layer_token_bytes + usage.step_layer_token_bytes,
                step_shape_bytes=_sum_shaped(prev.step_shape_bytes, usage.step_shape_bytes),
                dtype_sources=_union_by_dtype(prev.dtype_sources, usage.dtype_sources))
    stand_ins: dict[tuple, StandIn] = {}
    for s in inference.stand_ins + train.stand_ins:
        key = (s.op, s.kind, s.value, s.source)
        old = stand_ins.get(key)
        stand_ins[key] = s if old is None else StandIn(s.op, s.kind, s.value, old.count + s.count, s.source)
    stopped = "; ".join(f"{m}: {r.stopped_at}" for m, r in ((Mode.INFERENCE, inference), (Mode.TRAIN, train))
                        if r.stopped_at)
    ordered = tuple(sorted(stand_ins.values(),
                           key=lambda s: (s.op, s.source or OpSource("", 0), s.kind, s.value)))
    supplied = tuple(sorted(set(inference.supplied) | set(train.supplied)))
    retried = "; ".join(f"{m}: {r.retried}" for m, r in ((Mode.INFERENCE, inference), (Mode.TRAIN, train))
                        if r.retried)
    hints = dict.fromkeys(r.stop_hint for r in (inference, train) if r.stopped_at and r.stop_hint)
    result = _Result(tuple(by_name[k] for k in sorted(by_name)), ordered, not stopped, stopped, supplied,
                     retried, "; ".join(hints))
    result.step = train.step
    if inference.compile_log is not None and train.compile_log is not None:   # distinct signatures per phase
        result.compile = compile_forecast.forecast(compile_forecast.merged(inference.compile_log, train.compile_log))
    else:
        result.compile = compile_forecast.joined(inference.compile, train.compile)
    return result

