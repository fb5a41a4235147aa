"""Default configs that leave a required field unset: traced again with the field filled.

NOTE [unset fields]
Some of transformers' default configs leave a field None (or out) that their own model code needs:
dots1 builds `torch.empty(None, ...)` experts (n_routed_experts None), deepseek_v2 routes with
`topk(k=None)` (num_experts_per_tok None), dbrx reads a `rope_theta` its attention sub-config does
not have. Those are transformers bugs (opscan/targets/hf/upstream.py reproduces them), but the
architecture is still worth judging, so a zoo default config that fails this way is traced again
with the field filled (in the child process, only for configs the zoo wrote; never a user's):

- which field: the config reads of this trace are recorded (PreTrainedConfig.__getattribute__
  patched for the trace's duration). A failed build is blamed on the last unset field read before
  it; a step that stopped after some ops (without stand-ins: those are data-dependent stops; a
  stop before any op is an input problem) on one of the unset fields the model read, tried one at
  a time, the most recently read first (at most MAX_STEP_ATTEMPTS).
- RoPE parameters: a build that fails looking up the RoPE parameters of a layer type the config
  lists but gives none (KeyError 'full_attention': cohere_compass) gets transformers' documented
  default for it (rope_type default, rope_theta the config's default_theta).
- which value: a documented default first (`rope_theta`: the config's `default_theta`, which
  transformers' RoPE utilities document as the value used when it is omitted), else the value most
  of transformers' own default configs give the field (ties: the smaller). Ids and indexes
  (`pad_token_id`, `*_index`) are never filled: None means "none" there.
- a fill is kept only if it moves the failure (another exception or place, or a step that stops
  elsewhere), and the fills only if the trace then completes: else the unfilled outcome is the
  row's answer (and its known-bug classification stands); at most MAX_ATTEMPTS traces per model.
  What was filled, from where, and what stopped the unfilled trace go into the trace's `retried`
  text, so the row says it.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import tempfile
import traceback
from collections import Counter
from functools import lru_cache
from pathlib import Path

from opscan.errors import TargetError
from opscan.records import ModelTrace

MAX_ATTEMPTS = 6
MAX_STEP_ATTEMPTS = 3    # fills tried for one stopped step (each is a whole trace)
_NEVER = ("_id", "_ids", "_index", "_idx", "_token", "_path", "_name", "_dir", "_file")
# field -> documented default (see NOTE [unset fields])
THETA_FALLBACK = 10_000.0   # RotaryEmbeddingConfigMixin.default_theta in transformers 5.x


@dataclasses.dataclass(frozen=True)
class Read:
    """One read of an unset config field: the config class, the field (attribute_map resolved)."""

    owner: str
    key: str
    missing: bool        # the attribute does not exist (AttributeError), rather than being None


@dataclasses.dataclass(frozen=True)
class Fill:
    owner: str
    key: str
    value: object
    source: str          # where the value comes from, for the row
    label: str = ""      # what was set, when not the whole field's value ("rope_parameters['full_attention']")

    def text(self) -> str:
        if self.label:
            return f"{self.owner}.{self.label} ({self.source})"
        value = f"{self.value:g}" if isinstance(self.value, float) else str(self.value)
        return f"{self.owner}.{self.key} -> {value} ({self.source})"


class ConfigReads:
    """Records reads of None-valued or missing fields on any transformers config, in order."""

    def __init__(self):
        self.reads: list[Read] = []

    def __enter__(self):
        from transformers import PreTrainedConfig

        self._cls = PreTrainedConfig
        self._original = original = PreTrainedConfig.__getattribute__
        reads = self.reads

        def getattribute(config, key):
            try:
                value = original(config, key)
            except AttributeError:
                if not key.startswith("_"):
                    reads.append(Read(type(config).__name__, key, True))
                raise
            if value is None and not key.startswith("_"):
                aliases = type(config).__dict__.get("attribute_map") or {}
                reads.append(Read(type(config).__name__, aliases.get(key, key), False))
            return value

        PreTrainedConfig.__getattribute__ = getattribute
        return self

    def __exit__(self, *exc):
        self._cls.__getattribute__ = self._original
        return False


def _fillable(key: str) -> bool:
    return not key.endswith(_NEVER) and not key.startswith("_")


@lru_cache(maxsize=None)
def _default_values() -> dict[str, tuple[int, ...]]:
    """Every int value transformers' default configs give each field (sub-configs included)."""
    import logging
    import warnings

    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    values: dict[str, list[int]] = {}

    def walk(data: dict) -> None:
        for key, value in data.items():
            if isinstance(value, dict):
                walk(value)
            elif isinstance(value, int) and not isinstance(value, bool):
                values.setdefault(key, []).append(value)

    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for model_type in sorted(CONFIG_MAPPING.keys()):
                try:
                    walk(CONFIG_MAPPING[model_type]().to_dict())
                except Exception:  # noqa: BLE001 - a default config that cannot be built gives nothing
                    continue
    finally:
        logging.disable(previous)
    return {k: tuple(v) for k, v in values.items()}


def _default_theta(config_or_class) -> float:
    """The RoPE base a config uses when rope_theta is omitted (its `default_theta`)."""
    theta = getattr(config_or_class, "default_theta", None)
    return float(theta) if isinstance(theta, (int, float)) else THETA_FALLBACK


def donor(read: Read) -> Fill | None:
    """The value to fill an unset field with, and where it comes from; None when nothing is known."""
    if not _fillable(read.key):
        return None
    if read.key == "rope_theta":
        import transformers

        theta = _default_theta(getattr(transformers, read.owner, None))
        return Fill(read.owner, read.key, theta, "transformers' documented RoPE default")
    if read.missing:
        return None
    seen = _default_values().get(read.key, ())
    if not seen:
        return None
    counts = Counter(seen)
    value, count = min(counts.items(), key=lambda item: (-item[1], item[0]))
    return Fill(read.owner, read.key, value,
                f"the most common value, in {count} of transformers' {len(seen)} default configs that set it")


def rope_fill(failure: BaseException, config) -> Fill | None:
    """A build that failed looking up the RoPE parameters of a layer type the config lists but
    gives none (KeyError 'full_attention'): that type gets transformers' documented defaults."""
    if not isinstance(failure, KeyError) or not failure.args or not isinstance(failure.args[0], str):
        return None
    layer_type = failure.args[0]
    rope = getattr(config, "rope_parameters", None)
    if layer_type not in (getattr(config, "layer_types", None) or ()) or not isinstance(rope, dict) \
            or layer_type in rope:
        subs = (v for _, v in sorted(vars(config).items()) if hasattr(v, "to_dict") and v is not config)
        return next((f for f in (rope_fill(failure, sub) for sub in subs) if f), None)
    theta = _default_theta(config)
    value = {k: v for k, v in rope.items() if isinstance(v, dict)}
    value[layer_type] = {"rope_type": "default", "rope_theta": theta}
    return Fill(type(config).__name__, "rope_parameters", value, "transformers' documented RoPE default",
                label=f"rope_parameters[{layer_type!r}] -> default RoPE, rope_theta {theta:g}")


def _place(data: dict, config, fill: Fill) -> None:
    """Write `fill` into the config dict: at the top, or in every sub-config of the fill's class."""
    if type(config).__name__ == fill.owner:
        data[fill.key] = fill.value
    for key, value in sorted(vars(config).items()):
        sub = data.get(key)
        if isinstance(sub, dict) and hasattr(value, "to_dict") and value is not config:
            _place(sub, value, fill)


def _failure(exc: BaseException) -> tuple[str, str]:
    """(exception class, innermost place) of a build failure: what a fill must change."""
    cause = exc.__context__ or exc
    frames = traceback.extract_tb(cause.__traceback__)
    where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return type(cause).__name__, where


def _blamed(reads: list[Read]) -> Fill | None:
    """The fill for the last unset field read before a build failed, if it has a known value.

    Reads that cannot be the cause are passed over: ids (`padding_idx=config.pad_token_id` is read
    right after the vocabulary size it goes with) and probes of attributes that do not exist
    (`hasattr(config, "gradient_checkpointing")`) unless a documented default covers them.
    """
    for read in reversed(reads):
        if not _fillable(read.key):
            continue
        fill = donor(read)
        if read.missing and fill is None:
            continue
        return fill
    return None


def _stop(trace: ModelTrace) -> str:
    """Where a step stopped (op, source line, exception), without the hint: what a fill must change."""
    return trace.stopped_at


def _config(folder: Path):
    from opscan.targets.hf.builder import load_config

    return load_config(str(folder))[0]


def _is_build_failure(exc: TargetError) -> bool:
    return not isinstance(exc.__context__, ImportError)


def trace_repaired(trace, target: str, options: dict) -> ModelTrace:
    """Trace `target` (hf:FOLDER of a zoo default config), filling unset fields it fails on."""
    folder = Path(target[3:])
    if folder.is_file():
        folder = folder.parent
    base = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config = None          # the unfilled config, loaded once when a fill is first needed
    fills: list[Fill] = []
    first_stop = ""
    tried: set[tuple[str, str]] = set()

    with tempfile.TemporaryDirectory(prefix="opscan-fill-") as scratch:
        def attempt(extra: list[Fill]):
            """(trace or None, build failure or None, reads) with `fills + extra` written in."""
            current = target
            if fills or extra:
                data = copy.deepcopy(base)
                for fill in (*fills, *extra):
                    _place(data, config, fill)
                (Path(scratch) / "config.json").write_text(json.dumps(data, indent=2, sort_keys=True),
                                                           encoding="utf-8")
                current = f"hf:{scratch}"
            reads = ConfigReads()
            try:
                with reads:
                    result = trace(current, **options)
            except TargetError as exc:
                if not _is_build_failure(exc):
                    raise
                return None, exc, reads.reads
            return result, None, reads.reads

        result, failed, reads = attempt([])
        attempts = 1
        original_failed, original_result = failed, result
        while attempts < MAX_ATTEMPTS:
            if failed is None and (result is None or result.complete or result.stand_ins or not result.ops):
                break        # complete, data-dependent, or stopped before any op (its inputs, not a field)
            config = config or _config(folder)
            if failed is not None:
                # the build: blame the last unset field read before it failed
                fill = rope_fill(failed.__context__, config) or _blamed(reads)
                fill = fill if fill and (fill.owner, fill.key) not in tried else None
                if fill is None:
                    break
                tried.add((fill.owner, fill.key))
                new_result, new_failed, new_reads = attempt([fill])
                attempts += 1
                if new_failed is not None and _failure(new_failed) == _failure(failed):
                    break        # the fill changed nothing: not the cause
                first_stop = first_stop or f"the build failed: {failed.message}"
                fills.append(fill)
                result, failed, reads = new_result, new_failed, new_reads
                continue
            # the step stopped: try the unset fields it read, one at a time, the latest first
            order = []
            for read in reversed(reads):
                fill = donor(read)
                if fill and (fill.owner, fill.key) not in tried and fill not in order:
                    order.append(fill)
            if not order:
                break
            progressed = False
            for fill in order[:MAX_STEP_ATTEMPTS]:
                if attempts >= MAX_ATTEMPTS:
                    break
                tried.add((fill.owner, fill.key))
                new_result, new_failed, new_reads = attempt([fill])
                attempts += 1
                if new_failed is None and new_result is not None and (
                        new_result.complete or _stop(new_result) != _stop(result)):
                    first_stop = first_stop or f"the step stopped: {_stop(result)}"
                    fills.append(fill)
                    result, failed, reads = new_result, None, new_reads
                    progressed = True
                    break
            if not progressed:
                break

    if not fills or failed is not None or not result.complete:
        # only a fill that completes the trace is kept: else the unfilled outcome is the answer
        if original_failed is not None:
            raise original_failed
        return original_result
    what = ", ".join(f.text() for f in fills)
    retried = f"fields the default config leaves unset filled: {what}; unfilled, {first_stop}"
    if result.retried:
        retried = f"{retried}; {result.retried}"
    return dataclasses.replace(result, target=target, retried=retried)

