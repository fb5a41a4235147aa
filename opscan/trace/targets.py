"""Trace targets: `file.py:NAME`, `package.module:NAME`, `hf:PATH`, `timm:NAME` -> a built model.

Models are built with empty weights: every Parameter is moved to `meta` as it is registered, while
buffers and init-time helpers stay real (see ../shared/notes/tracing.md); tensor factories of
LARGE_BYTES or more are made on `meta` outright. Nothing is downloaded.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import json
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from opscan.errors import TargetError
from opscan.trace.spec import InputSpec


@dataclass
class Built:
    """A model with empty weights, its example inputs, and how to get a loss from its output."""

    model: nn.Module
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    labels: object = None          # for a cross-entropy loss on the output (timm targets)
    description: str = ""
    train_only: tuple[str, ...] = ()  # keyword inputs not passed in inference (generated labels)
    values: tuple[str, ...] = ()      # integer keyword inputs traced with their values (image grids)


# NOTE [large tensors at build time]
# Moving a Parameter to `meta` when it is registered comes after its constructor allocated it for
# real: `nn.Embedding(256000, 8192)` asks 7.8 GiB, DeepSeek-V3's stacked experts 28 GiB, before
# the module ever sees them. So while a model is built, factory calls (torch.empty, zeros, ...)
# for LARGE_BYTES or more on the CPU are made on `meta`; smaller tensors (init-time helpers such as
# drop-path schedules that call `.item()`) stay real. Should init code then mix a big meta tensor
# with real ones (an error), the model is built once more without this (build_empty).
LARGE_BYTES = 64 * 2**20


def first_line(exc: BaseException) -> str:
    """The first non-blank line of an exception's message (transformers' ImportErrors start with a newline)."""
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), "")


class LargeOnMeta(TorchFunctionMode):
    """Makes tensor factory calls of LARGE_BYTES or more on the CPU allocate on `meta` instead."""

    def __init__(self) -> None:
        super().__init__()
        self.redirected = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _factories() and "out" not in kwargs and _on_cpu(kwargs.get("device")) \
                and _nbytes(func, args, kwargs) >= LARGE_BYTES:
            kwargs = {**kwargs, "device": torch.device("meta")}
            self.redirected += 1
        return func(*args, **kwargs)


def _factories() -> dict:
    """Factory -> True when its size is the first argument (else sizes are *ints or a sequence)."""
    return {torch.empty: False, torch.zeros: False, torch.ones: False, torch.rand: False,
            torch.randn: False, torch.full: True, torch.empty_strided: True}


def _on_cpu(device) -> bool:
    return device is None or torch.device(device).type == "cpu"


def _nbytes(func, args, kwargs) -> int:
    size = kwargs.get("size")
    if size is None and args:
        first = _factories()[func] or (len(args) == 1 and isinstance(args[0], (tuple, list)))
        size = args[0] if first else args
    try:
        numel = math.prod(int(s) for s in size or ())
    except (TypeError, ValueError):
        return 0
    dtype = kwargs.get("dtype") or torch.get_default_dtype()
    return numel * dtype.itemsize if isinstance(dtype, torch.dtype) else 0


def build_empty(make):
    """`make()` under empty_weights(), big factory tensors on `meta`; retried without if that broke it."""
    mode = LargeOnMeta()
    try:
        with empty_weights(), mode:
            return make()
    except Exception as exc:  # noqa: BLE001 - init code that cannot take meta tensors: build as before
        if not mode.redirected or "meta" not in str(exc).lower():
            raise  # an error of its own (a bad config, ...): a real build would only add an OOM
    with empty_weights():
        return make()


@contextlib.contextmanager
def empty_weights():
    """Register every new Parameter on `meta` (no memory, no init cost); buffers stay real."""
    original = nn.Module.register_parameter

    def register(module, name, param):
        original(module, name, param)
        if param is not None and param.device.type != "meta":
            extra = dict(param.__dict__)
            extra["requires_grad"] = param.requires_grad
            module._parameters[name] = type(param)(param.to("meta"), **extra)

    nn.Module.register_parameter = register
    try:
        yield
    finally:
        nn.Module.register_parameter = original


def build(target: str, *, batch: int | None, seq_len: int | None, inputs: tuple[InputSpec, ...],
          project_root: str | None, trust_remote_code: bool = False) -> Built:
    """Import/construct the target with empty weights and gather its example inputs.

    `trust_remote_code` lets an hf: folder whose config.json has `auto_map` run its own modeling
    code (only ever inside the trace's child process); without it such a folder is refused.
    """
    if target.startswith("hf:"):
        from opscan.trace.hf import build_hf
        where = target[3:]
        # A relative path is looked up like a file target: here first, then in the project.
        here = Path(where) / "config.json" if Path(where).is_dir() else Path(where)
        if not Path(where).is_absolute() and project_root and not here.is_file():   # "hf:." in a config
            where = str(Path(project_root) / where)
        built = build_hf(where, batch=batch, seq_len=seq_len, trust_remote_code=trust_remote_code,
                         given=tuple(spec.name for spec in inputs))
    elif target.startswith("timm:"):
        built = _build_timm(target[5:], batch=batch, project_root=project_root)
    else:
        built = _build_object(target, batch=batch, seq_len=seq_len, project_root=project_root)
    return _override(built, inputs, target)


def _split(target: str) -> tuple[str, str]:
    where, sep, name = target.rpartition(":")
    if not sep or not where or not name:
        raise TargetError(f"bad target {target!r}: expected path/to/file.py:NAME, package.module:NAME, "
                          "hf:PATH, timm:NAME or pt2:FILE")
    return where, name


def _import_file(path: Path, project_root: str | None):
    if not path.is_file():
        raise TargetError("no such file", path=str(path))
    name = "opscan_target_" + path.stem.replace("-", "_")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    added = [str(path.parent.resolve())]
    if project_root:
        added.append(str(Path(project_root).resolve()))
    for entry in added:
        if entry not in sys.path:
            sys.path.insert(0, entry)
    sys.modules[name] = module
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


def _resolve(target: str, project_root: str | None):
    where, name = _split(target)
    if where.endswith(".py") or "/" in where or os.sep in where:
        path = Path(where)
        if not path.is_absolute() and project_root and not path.exists():
            path = Path(project_root) / path
        module = _import_file(path, project_root)
        label = str(path)
    else:
        if project_root and project_root not in sys.path:
            sys.path.insert(0, str(Path(project_root).resolve()))
        try:
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
    data = read_json(path)
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
    if not specs:
        if not built.args and not built.kwargs:
            raise TargetError(f"{target}: no example inputs; give --input NAME:DTYPE[SHAPE] "
                              "(e.g. --input x:float32[2,16]) or make NAME a factory returning "
                              "(module, example_inputs)")
        return built
    args = list(built.args)
    kwargs = dict(built.kwargs)
    for spec in specs:
        value = _InputPlaceholder(spec)
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
                kwargs["labels"] = _InputPlaceholder(InputSpec("labels", "int64", spec.shape))
    built.args, built.kwargs = tuple(args), kwargs
    return built


@dataclass(frozen=True)
class _InputPlaceholder:
    """An input given by --input: created directly as a fake tensor by the runner."""

    spec: InputSpec


def placeholder_spec(value) -> InputSpec | None:
    """The InputSpec behind an --input placeholder, else None."""
    return value.spec if isinstance(value, _InputPlaceholder) else None


def read_json(path: Path) -> dict:
    """Read a JSON file as a dict, with one-line errors."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TargetError(f"cannot read: {exc.strerror}", path=str(path)) from None
    except json.JSONDecodeError as exc:
        raise TargetError(f"not valid JSON: {exc.msg} (column {exc.colno})",
                          path=str(path), line=exc.lineno) from None
    except UnicodeDecodeError as exc:
        raise TargetError(f"not valid JSON: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset "
                          f"{exc.start})", path=str(path)) from None
    if not isinstance(data, dict):
        raise TargetError("not a JSON object", path=str(path))
    return data
