"""Selection -> targets: turns `hf:causal-lm`, `hf:*`, a list or a file of targets into ZooTargets."""

from __future__ import annotations

import hashlib
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from opscan.errors import InputError, UsageError
from opscan.targets.folders import config_path
from opscan.records import Target, TargetKind


@dataclass(frozen=True)
class ZooTarget:
    """One model of a zoo run: its row name, the tracer target, and what identifies its config."""

    name: str                 # row name, e.g. "llama" or "file.py:Net"
    target: str               # what the tracer receives, e.g. "hf:/cache/configs/causal-lm/llama"
    family: str = ""          # e.g. "causal-lm"
    config_hash: str = ""     # sha256 of what defines the model (config.json bytes, source file)
    note: str = ""            # e.g. "layers 32 -> 2"
    error: str = ""           # the model could not even be prepared (e.g. no default config)
    model_type: str = ""      # a transformers default config's model_type (the sub-config's for a text config)


def hash_bytes(data: bytes) -> str:
    """A short stable content hash."""
    return hashlib.sha256(data).hexdigest()[:16]


def family_names() -> dict[str, str]:
    """hf family name -> transformers mapping attribute, e.g. "causal-lm" -> MODEL_FOR_CAUSAL_LM_MAPPING_NAMES."""
    from transformers.models.auto import modeling_auto

    out = {"*": "MODEL_MAPPING_NAMES", "base": "MODEL_MAPPING_NAMES"}
    for attr in dir(modeling_auto):
        if attr.startswith("MODEL_FOR_") and attr.endswith("_MAPPING_NAMES"):
            out[attr[len("MODEL_FOR_"):-len("_MAPPING_NAMES")].lower().replace("_", "-")] = attr
    return out


def family_models(family: str) -> dict[str, str]:
    """model_type -> class name for an hf family ("causal-lm", "base" / "*", ...), sorted."""
    return dict(sorted(_mapping("base" if family == "*" else family).items()))


def _mapping(family: str) -> dict[str, str]:
    from transformers.models.auto import modeling_auto

    names = family_names()
    if family not in names:
        known = ", ".join(sorted(k for k in names if k != "*"))
        raise UsageError(f"unknown hf family 'hf:{family}'; known: *, {known}")
    mapping = dict(getattr(modeling_auto, names[family]))
    return {k: (v[0] if isinstance(v, (tuple, list)) else v) for k, v in mapping.items()}


def _default(model_type: str, class_name: str, family: str, config_dir: Path, layers: int | None,
             dtype: str | None) -> ZooTarget:
    """The row of `model_type`'s default config, written for tracing (opscan/targets/hf/defaults.py)."""
    from opscan.targets.hf.defaults import write_default_config

    written = write_default_config(model_type, class_name, family, config_dir, layers, dtype)
    if written.error:
        return ZooTarget(name=model_type, target=written.target, family=family, error=written.error,
                         model_type=written.model_type)
    return ZooTarget(name=model_type, target=written.target, family=family,
                     config_hash=hash_bytes(written.text.encode()), note=written.note,
                     model_type=written.model_type)


def _hf_spec(spec: str, config_dir: Path, layers: int | None, dtype: str | None) -> list[ZooTarget]:
    try:
        import transformers  # noqa: F401
    except ImportError as exc:
        raise UsageError("hf: selections need transformers: pip install 'opscan-neuron[hf]'") from exc
    rest = spec[len("hf:"):]
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    if rest in family_names():
        family = "base" if rest == "*" else rest
        with _quiet_transformers():
            return [_default(model_type, cls, family, config_dir, layers, dtype)
                    for model_type, cls in family_models(family).items()]
    family, _, model_type = rest.partition("/")
    if model_type and family in family_names() and not Path(rest).exists():
        family = "base" if family == "*" else family
        classes = family_models(family)
        if model_type not in classes:
            raise UsageError(f"hf:{family} has no model type '{model_type}' (hf:{family} lists "
                             f"{len(classes)}; e.g. {', '.join(list(classes)[:3])})")
        with _quiet_transformers():
            return [_default(model_type, classes[model_type], family, config_dir, layers, dtype)]
    if rest in CONFIG_MAPPING_NAMES:  # one model type, built with its base class
        cls = _mapping("base").get(rest, "")
        return [_default(rest, cls, "base", config_dir, layers, dtype)]
    path = Path(rest)
    if path.exists():  # an explicit config.json or folder: passed through as is
        config = config_path(path)
        data = config.read_bytes() if config.is_file() else spec.encode()
        return [ZooTarget(name=spec, target=spec, family="file", config_hash=hash_bytes(data))]
    raise UsageError(f"'{spec}' is neither an hf family (try hf:causal-lm, hf:*), "
                     "a transformers model type (e.g. hf:llama), nor an existing config path")


@contextmanager
def _quiet_transformers():
    """Silence transformers' config warnings while hundreds of default configs are written."""
    from transformers.utils import logging

    level = logging.get_verbosity()
    logging.set_verbosity_error()
    try:
        yield
    finally:
        logging.set_verbosity(level)


def _plain(spec: str) -> ZooTarget:
    """A target the tracer understands directly (file.py:NAME, pkg.mod:NAME, hf:PATH)."""
    target = Target.parse(spec)
    path = Path(target.where)
    data = path.read_bytes() if target.is_file and path.is_file() else spec.encode()
    return ZooTarget(name=spec, target=spec, family="explicit", config_hash=hash_bytes(spec.encode() + data))


def read_target_file(path: Path) -> list[str]:
    """A file of targets: one per line; blank lines and `#` comments ignored."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read target file: {exc}", path=str(path)) from exc
    specs = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            specs.append(line)
    if not specs:
        raise InputError("target file lists no targets", path=str(path))
    return specs


def resolve(selection: list[str], config_dir: Path, layers: int | None = None,
            dtype: str | None = None) -> list[ZooTarget]:
    """Expand every selection item into targets, in order, without duplicates (by target).

    `layers` and `dtype` change the hf default configs written (see docs/zoo.md).
    """
    out: dict[str, ZooTarget] = {}
    for item in selection:
        for spec in (s.strip() for s in item.split(",")):
            if not spec:
                continue
            parsed = Target.of(spec)   # a target, or a family of the zoo's (hf:causal-lm, hf:*, timm:*)
            kind = parsed.kind if parsed is not None else None
            if spec.startswith("@") or spec.endswith((".txt", ".targets")):
                targets = resolve(read_target_file(Path(spec.lstrip("@"))), config_dir, layers, dtype)
            elif kind is TargetKind.TIMM:
                targets = _timm(spec)
            elif kind is TargetKind.HF:
                targets = _hf_spec(spec, config_dir, layers, dtype)
            elif parsed is not None:   # file.py:NAME, pkg.mod:NAME, pt2:FILE, ...: as given
                targets = [_plain(spec)]
            else:
                raise UsageError(f"cannot understand selection '{spec}': use hf:causal-lm, hf:*, "
                                 "hf:MODEL_TYPE, timm:*, file.py:NAME, pkg.mod:NAME or @targets.txt")
            for target in targets:
                out.setdefault(target.target, target)
    if not out:
        raise UsageError("the selection names no models")
    names = Counter(t.name for t in out.values())
    # the same model type from two families (hf:* and hf:causal-lm) gets the family in its row name
    return [replace(t, name=f"{t.name} ({t.family})") if names[t.name] > 1 else t for t in out.values()]


def _timm(spec: str) -> list[ZooTarget]:
    try:
        import timm
    except Exception as exc:  # timm raises more than ImportError when torchvision is missing
        raise UsageError(f"timm: selections need an importable timm ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0] if str(exc) else 'import failed'}); "
                         "timm needs torchvision matching your torch") from exc
    pattern = spec[len("timm:"):] or "*"
    names = timm.list_models(pattern)
    if not names:
        raise UsageError(f"no timm model matches '{pattern}'")
    return [ZooTarget(name=f"timm:{n}", target=f"timm:{n}", family="timm",
                      config_hash=hash_bytes(f"timm:{n}:{timm.__version__}".encode())) for n in names]
