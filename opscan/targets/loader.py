"""Target strings -> a built model with its inputs, traced by the engine (opscan/trace/tracer.py).

`file.py:NAME` and `package.module:NAME` (python factories and classes) and `timm:NAME` (a timm
model by name, or a timm model folder) are built here, `hf:PATH` in opscan/targets/hf/; `pt2:FILE`
is loaded, never run (opscan/targets/export.py). Models are built with empty weights
(opscan/targets/empty.py). Nothing is downloaded.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
import os
import re
import sys
from pathlib import Path

import torch
from torch import nn

from opscan.errors import TargetError
from opscan.records import DeviceProfile, ModelTrace, TrainStep, TARGET_FORMS, Target, TargetKind
from opscan.targets.empty import build_empty, first_line
from opscan.targets import shrinking
from opscan.targets.folders import read_config
from opscan.trace import tracer
from opscan.trace.spec import Built, InputPlaceholder, InputSpec


def trace_target(target: str, *, mode: str = "train", device: str = "neuron",
                 profile: DeviceProfile | None = None, optimizer: str = "adamw",
                 optimizer_impl: str | None = None, amp: str | None = None, inputs=(),
                 batch: int | None = None, seq_len: int | None = None,
                 project_root: str | None = None, fsdp: int | None = None,
                 trust_remote_code: bool = False, gpu_only: tuple[str, ...] = (), steps: int = 1,
                 call_sites: tuple = (), step: TrainStep | None = None,
                 built_with: tuple[str, ...] = ()) -> ModelTrace:
    """Build `target` and trace it on fake tensors: the ops it dispatches (see docs/trace.md).
    `call_sites`: a `repo:` target's call sites as the parent read them (see `build`). `step`: the
    training step the project's script constructs (opscan/targets/train_step.py), traced in place
    of the stand-in parts. `built_with`: the model a run of the training command built, with its
    arguments (NOTE [the model the command built] in opscan/trace/run/built_models.py).

    A `pt2:FILE` target is an exported program: loaded and read, never run (opscan/targets/export.py).
    A string that is no target is a TargetError naming it (the child's edge: NOTE [targets parsed once]).
    """
    target = parse_target(target)
    if target.kind is TargetKind.EXPORT:
        from opscan.targets.export import trace_export

        return trace_export(target, profile=profile, project_root=project_root, device=device)

    notes: list[str] = []

    def make(specs: tuple[InputSpec, ...]) -> Built:
        built = build(target, batch=batch, seq_len=seq_len, inputs=specs, project_root=project_root,
                      trust_remote_code=trust_remote_code, gpu_only=gpu_only, call_sites=call_sites)
        notes.append(built.note)
        return built

    def run() -> ModelTrace:
        notes.clear()
        got = tracer.trace(target, make, mode=mode, device=device, profile=profile, optimizer=optimizer,
                           optimizer_impl=optimizer_impl, amp=amp, inputs=inputs, project_root=project_root,
                           fsdp=fsdp, steps=steps, step=step)
        if notes and notes[0]:   # what the builder did beyond building (a repository's setup call)
            got = dataclasses.replace(got, retried="; ".join(n for n in (notes[0], got.retried) if n))
        return got

    if built_with:   # NOTE [the model the command built] in opscan/trace/run/built_models.py
        from opscan.targets.built_arguments import given_arguments

        with given_arguments(built_with):
            given = _traced(run, target, device, project_root)
        if given.complete:
            return given
        try:   # NOTE [the command's arguments, then the model path's]
            other = _traced(run, target, device, project_root)
        except TargetError:
            return given
        if other.complete or len(other.ops) > len(given.ops):
            said = ("built as the model path builds it (with the command's arguments the step stopped: "
                    f"{given.stopped_at})")
            return dataclasses.replace(other, retried="; ".join(n for n in (said[:400], other.retried) if n))
        return given
    return _traced(run, target, device, project_root)


# NOTE [the command's arguments, then the model path's]
# The arguments a stopped command built its model with hold what its stood-in data gave it too: a
# sequence length read from a stood-in JSON file is a word, not a number. When the step of the model
# built with them stops, the class is built once more as the model path builds any class (its
# parsers' defaults, its config files, values chosen by name), and that trace is kept when it gets
# further; its `retried` says why.


def _traced(run, target: Target, device: str, project_root: str | None) -> ModelTrace:
    """`run()`, and once more unshrunk or with CUDA answered when its step stopped so (the NOTEs below)."""
    shrinking.reset()
    trace = run()
    cut = shrinking.cuts()
    if target.kind is TargetKind.REPO and not trace.complete and cut and shrinking.enabled():
        with shrinking.off():   # NOTE [retry unshrunk]
            retry = run()
        if retry.complete or len(retry.ops) > len(trace.ops):
            said = f"built unshrunk (shrunk: {', '.join(cut)}; the step stopped: {trace.stopped_at})"
            trace = dataclasses.replace(retry, retried="; ".join(n for n in (said, retry.retried) if n))
    if target.kind is TargetKind.REPO and not trace.complete and device != "cpu" and project_root \
            and _HOST_DEVICE.search(trace.stopped_at or ""):
        retry = _with_cuda_answered(run, device, project_root)   # NOTE [retry with CUDA answered]
        if retry is not None and (retry.complete or len(retry.ops) > len(trace.ops)):
            said = f"CUDA answered as on the device (alone, the step stopped: {trace.stopped_at})"
            trace = dataclasses.replace(retry, retried="; ".join(n for n in (trace.retried, said, retry.retried)
                                                                 if n))
    return trace


# NOTE [retry with CUDA answered]
# Research code picks its device once, at import: `DEVICE = torch.device("cuda" if
# torch.cuda.is_available() else "cpu")`, then makes tensors there inside the model (`torch.zeros(...,
# device=DEVICE)` for an RNN's first hidden state). The model path imports the module on a machine
# without CUDA, so DEVICE is the CPU, while the model is traced on the imitated device: the step
# stopped on tensors of two devices ("Input and hidden tensors are not at the same device"), which
# says nothing about the model's ops. When a `repo:` step stops so, the project's modules are
# imported again and the model built and traced once more with CUDA requests answered as `opscan
# run` answers them (opscan/trace/run/redirect.py, NOTE [answering CUDA requests]: CUDA available,
# "cuda" the imitated device), as on a machine where the code runs as written; that trace is kept
# when it gets further, and its `retried` says so. Only then: a step that traces without it keeps
# torch.cuda as this machine has it.
_HOST_DEVICE = re.compile(r"same device.*(neuron:0 and cpu|cpu and neuron:0|at cpu|at neuron:0)", re.S)


def _with_cuda_answered(run, device: str, project_root: str) -> ModelTrace | None:
    """`run()` again with the project's modules imported anew and CUDA answered on `device`."""
    from opscan.trace.run import cuda_answered

    root = os.path.realpath(project_root) + os.sep
    for name, module in list(sys.modules.items()):
        where = getattr(module, "__file__", None) or ""
        if where and os.path.realpath(where).startswith(root):
            del sys.modules[name]
    try:
        with cuda_answered(device, project_root):
            return run()
    except Exception:  # noqa: BLE001 - the first trace's stop stays the reason
        return None


# NOTE [retry unshrunk]
# opscan shrinks what it builds with no configuration (layer counts of a config to 2, repeated blocks
# of a built model to 2): the ops do not depend on depth, and a shallow model traces fast. Some
# models do not survive it: a staged model cut to fewer stages feeds its last stage's width to a
# norm sized for the full width, a constructor asserts its stage list matches its depth. Fake
# tensors hold no memory, so the full model can be traced too: when a shrunk `repo:` build fails
# (opscan/targets/repository.py) or its step stops, it is built and traced once more with nothing
# cut, and that is kept when it builds (or its step gets further). The trace's `retried` says so,
# naming what was cut and where the shrunk step stopped.


def parse_target(target: str) -> Target:
    """`target` parsed (a Target as it is); a string that is no target is a one-line TargetError."""
    try:
        return Target.parse(target)
    except ValueError as exc:
        raise TargetError(str(exc)) from None


def build(target: str, *, batch: int | None, seq_len: int | None, inputs: tuple[InputSpec, ...],
          project_root: str | None, trust_remote_code: bool = False, gpu_only: tuple[str, ...] = (),
          call_sites: tuple = ()) -> Built:
    """Import/construct the target with empty weights and gather its example inputs.

    `trust_remote_code` lets an hf: folder whose config.json has `auto_map` run its own modeling
    code (only ever inside the trace's child process); without it such a folder is refused.
    `gpu_only`: for a `repo:` target, the CUDA-only libraries (the parent's catalog) stood in when
    missing (NOTE [GPU-only kernel libraries] in opscan/targets/absent.py). `call_sites`: for a
    `repo:` target, how the repository calls its file's model classes, read by the parent
    (opscan/targets/discovery.py `call_site_table`): the child does not read the tree for them.
    """
    target = parse_target(target)
    if target.kind is TargetKind.HF:
        from opscan.targets.hf.builder import build_hf
        where = target.spec
        # A relative path is looked up like a file target: in the project first, then here.
        where = str(_in_project(Path(where), project_root))
        built = build_hf(where, batch=batch, seq_len=seq_len, trust_remote_code=trust_remote_code,
                         given=tuple(spec.name for spec in inputs))
    elif target.kind is TargetKind.REPO:   # a repository's model with no configuration (issue 24)
        from opscan.targets.repository import build_repo
        built = build_repo(target, batch=batch, seq_len=seq_len, project_root=project_root, gpu_only=gpu_only,
                           call_sites=call_sites)
    elif target.kind is TargetKind.TIMM:
        built = _build_timm(target.spec, batch=batch, project_root=project_root)
    else:
        built = _build_object(target, batch=batch, seq_len=seq_len, project_root=project_root)
    return _override(built, inputs, target)


def _split(target: str) -> tuple[str, str]:
    """(file or module, name) of a `where:NAME` target."""
    parsed = parse_target(target)
    if parsed.kind.prefixed:
        raise TargetError(f"bad target {target!r}: expected {TARGET_FORMS}")
    return parsed.where, parsed.name


def _import_file(path: Path, project_root: str | None):
    if not path.is_file():
        raise TargetError("no such file", path=str(path))
    name = "opscan_target_" + path.stem.replace("-", "_")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    added = [str(path.parent.resolve())]
    if project_root:
        added.append(str(Path(project_root).resolve()))
    package_root = path.resolve().parent
    while (package_root / "__init__.py").is_file():   # a module of a package: imported as one
        package_root = package_root.parent
    if package_root != path.resolve().parent:
        added.append(str(package_root))
    for entry in added:
        if entry not in sys.path:
            sys.path.insert(0, entry)
    sys.modules[name] = module
    if package_root != path.resolve().parent:   # relative imports work (NOTE [factories of a package])
        try:
            return importlib.import_module(".".join(path.resolve().relative_to(package_root).with_suffix("").parts))
        except Exception:  # noqa: BLE001, S110 - its package fails to import: the file alone, as before
            pass
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise TargetError(f"syntax error: {exc.msg}", path=str(path), line=exc.lineno) from None
    except Exception as exc:  # noqa: BLE001 - any failure of user code is reported as one line
        raise TargetError(f"importing it failed: {type(exc).__name__}: {first_line(exc)}".splitlines()[0],
                          path=str(path), line=_user_line(exc, str(path))) from None
    return module


def _user_line(exc: BaseException, filename: str) -> int | None:
    line = None
    tb = exc.__traceback__
    wanted = os.path.abspath(filename)
    while tb is not None:
        if os.path.abspath(tb.tb_frame.f_code.co_filename) == wanted:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _in_project(path: Path, project_root: str | None) -> Path:
    """Where a relative target path is: in the project when the project has it, whatever the
    current folder holds (a same-named file here is another model); else here."""
    if path.is_absolute() or not project_root:
        return path
    inside = Path(project_root) / path
    return inside if inside.exists() else path


def _resolve(target: str, project_root: str | None):
    where, name = _split(target)
    if where.endswith(".py") or "/" in where or os.sep in where:
        path = _in_project(Path(where), project_root)
        module = _import_file(path, project_root)
        label = str(path)
    else:
        module = None
        if project_root:   # the project's module, whatever the current folder or sys.path holds
            root = str(Path(project_root).resolve())
            if root in sys.path:
                sys.path.remove(root)
            sys.path.insert(0, root)   # for its own absolute imports of sibling modules
        try:
            if project_root:   # NOTE [the project's module first] in opscan/targets/project_modules.py
                from opscan.targets.project_modules import import_project_module

                module = import_project_module(where, Path(project_root))
            if module is None:
                module = importlib.import_module(where)
        except ImportError as exc:
            raise TargetError(f"cannot import module {where!r}: {first_line(exc)}".splitlines()[0]) from None
        except Exception as exc:  # noqa: BLE001
            raise TargetError(f"importing module {where!r} failed: {type(exc).__name__}: {first_line(exc)}"
                              .splitlines()[0]) from None
        label = where
    obj = module
    for part in name.split("."):
        if not hasattr(obj, part):
            public = sorted(n for n, v in vars(module).items()
                            if not n.startswith("_") and (callable(v)))
            hint = f" (it defines: {', '.join(public[:12])})" if public else ""
            raise TargetError(f"{label} has no {name!r}{hint}")
        obj = getattr(obj, part)
    return obj, label


def _build_object(target: str, *, batch, seq_len, project_root) -> Built:
    obj, label = _resolve(target, project_root)
    if isinstance(obj, nn.Module):
        raise TargetError(f"{target}: is a module instance, built at import time with real weights; "
                          "point opscan at its class or at a factory function instead")
    if not callable(obj):
        raise TargetError(f"{target}: is not an nn.Module class or a factory function")
    kwargs = {}
    if not (inspect.isclass(obj) and issubclass(obj, nn.Module)):
        params = _parameters(obj)
        if "batch" in params and batch is not None:
            kwargs["batch"] = batch
        if "seq_len" in params and seq_len is not None:
            kwargs["seq_len"] = seq_len
    try:
        result = build_empty(lambda: obj(**kwargs))
    except TypeError as exc:
        raise TargetError(f"{target}: calling it failed: {first_line(exc)}".splitlines()[0]) from None
    except Exception as exc:  # noqa: BLE001
        raise TargetError(f"{target}: building the model failed: {type(exc).__name__}: {first_line(exc)}"
                          .splitlines()[0]) from None
    if isinstance(result, nn.Module):
        return Built(result, description=label)
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], nn.Module):
        model, example = result
        if isinstance(example, dict):
            return Built(model, kwargs=dict(example), description=label)
        if isinstance(example, (tuple, list)):
            return Built(model, args=tuple(example), description=label)
        if isinstance(example, torch.Tensor):
            return Built(model, args=(example,), description=label)
        raise TargetError(f"{target}: example inputs must be a dict of keyword arguments or a tuple "
                          f"of positional ones, not {type(example).__name__}")
    raise TargetError(f"{target}: returned {type(result).__name__}; expected an nn.Module or "
                      "(module, example_inputs)")


def _parameters(fn) -> set[str]:
    try:
        return set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return set()


def _timm_folder(name: str, project_root: str | None) -> tuple[str, dict, dict] | None:
    """(architecture, create_model kwargs, pretrained_cfg) of a timm model folder's config.json."""
    if not any(sep in name for sep in ("/", os.sep)) and not name.endswith(".json") and name != ".":
        return None   # a timm model name, not a folder
    path = Path(name)
    if not path.is_absolute() and project_root and not path.exists():
        path = Path(project_root) / path
    if path.is_dir():
        path = path / "config.json"
    if not path.is_file():
        raise TargetError("no config.json here (timm: takes a model name or a folder holding a timm "
                          "config.json)", path=str(path))
    data = read_config(path).data
    arch = data.get("architecture")
    if not isinstance(arch, str) or not arch:
        raise TargetError("config has no 'architecture' (a timm config.json names its model there)",
                          path=str(path))
    kwargs = dict(data["model_args"]) if isinstance(data.get("model_args"), dict) else {}
    if isinstance(data.get("num_classes"), int) and not isinstance(data.get("num_classes"), bool):
        kwargs.setdefault("num_classes", data["num_classes"])
    cfg = data.get("pretrained_cfg") if isinstance(data.get("pretrained_cfg"), dict) else {}
    return arch, kwargs, cfg


def _build_timm(name: str, *, batch, project_root: str | None = None) -> Built:
    folder = _timm_folder(name, project_root)
    arch, extra, folder_cfg = folder if folder is not None else (name, {}, {})
    try:
        import timm
    except Exception as exc:  # noqa: BLE001 - timm raises various errors when torchvision is absent
        raise TargetError(f"timm:{name} needs timm and torchvision matching this torch "
                          f"({type(exc).__name__}: {first_line(exc)})".splitlines()[0]
                          + "; install them, e.g. pip install timm torchvision==<the matching version>"
                          ) from None
    if arch not in timm.list_models() and arch.split(".")[0] not in timm.list_models():
        raise TargetError(f"timm has no model {arch!r}")
    try:
        model = build_empty(lambda: timm.create_model(arch, pretrained=False, **extra))
    except Exception as exc:  # noqa: BLE001
        raise TargetError(f"timm:{name}: building the model failed: {first_line(exc)}".splitlines()[0]) from None
    cfg = folder_cfg if "input_size" in folder_cfg else \
        getattr(model, "pretrained_cfg", None) or getattr(model, "default_cfg", {}) or {}
    channels, height, width = cfg.get("input_size", (3, 224, 224))
    b = batch or 2
    pixels = torch.randn(b, channels, height, width)
    labels = torch.zeros(b, dtype=torch.long)
    return Built(model, args=(pixels,), labels=labels, description=f"timm:{name}")


def _override(built: Built, specs: tuple[InputSpec, ...], target: str) -> Built:
    """Apply --input specs: by keyword name, or by position for a numeric NAME."""
    if specs:
        built.resized = None   # given inputs are the user's: no other length of them to trace (NOTE [sizes by role])
    if not specs:
        if not built.args and not built.kwargs:
            raise TargetError(f"{target}: no example inputs; give --input NAME:DTYPE[SHAPE] "
                              "(e.g. --input x:float32[2,16]) or make NAME a factory returning "
                              "(module, example_inputs)")
        return built
    args = list(built.args)
    kwargs = dict(built.kwargs)
    for spec in specs:
        value = InputPlaceholder(spec)
        if spec.position is not None:
            if spec.position > len(args):
                raise TargetError(f"{target}: --input {spec.name}: only {len(args)} positional "
                                  "inputs before it")
            if spec.position == len(args):
                args.append(value)
            else:
                args[spec.position] = value
        else:
            old = kwargs.get(spec.name)
            kwargs[spec.name] = value
            labels = kwargs.get("labels")
            if spec.name == "input_ids" and isinstance(old, torch.Tensor) \
                    and isinstance(labels, torch.Tensor) and labels.shape == old.shape:
                # generated LM labels follow the ids they were made from
                kwargs["labels"] = InputPlaceholder(InputSpec("labels", "int64", spec.shape))
    built.args, built.kwargs = tuple(args), kwargs
    return built
