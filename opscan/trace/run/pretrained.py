"""Pretrained weights a run stands in for (NOTE [stand-ins for data and weights] in stand_ins.py): the
model keeps its own initialisation where a script would download or read weights it cannot have.

NOTE [absent weights]
Weights change values, never the ops of a step (their shapes are the model's own). A read of weights
that are absent, outside the project or remote answers `AbsentWeights`: an empty state dict that
`nn.Module.load_state_dict` and `Optimizer.load_state_dict` take as "keep what you have" (the
module's own initialisation; the optimizer's fresh state), and whose every key is another
AbsentWeights (`ckpt["model"]`, `ckpt["state_dict"]`). Reached through `torch.load` of a missing
or outside checkpoint, `torch.hub.load_state_dict_from_url` (what torchvision's `weights=` and
`pretrained=True` and many repositories call); timm's `create_model(pretrained=True)` builds the
model with `pretrained=False`; `torch.hub.load` of `pytorch/vision` builds torchvision's model with
no weights (other hub repositories' code is not here: the run stops at that line); transformers'
`from_pretrained` builds the model from its config when the config is here but the weights are not;
a hub name whose config is not here builds a concrete model class (`T5ForConditionalGeneration`)
from its own config class's defaults, said as assumed (the ops are the class's own, its sizes
those defaults'), and an Auto class from the defaults of the model type the name reads as
(`bert-base-uncased`: BertConfig's; NOTE [a type read from the name] in hub_names.py), said as
assumed, or stops the run when the name reads as no type (the architecture is not known); an
encoder-decoder config built from defaults gets a decoder start token (NOTE [decoder start of a
default config]). A script that
uses a value of the checkpoint itself (`ckpt["epoch"] + 1`) stops at that line.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from opscan.trace.run import hub_names
from opscan.trace.run.stand_ins import Patches, StandIns

OWN_INIT = "the model's own initialisation (no weights read)"


class AbsentWeights(dict):
    """Weights that are not here (NOTE [absent weights]): empty, every key another AbsentWeights."""

    def __missing__(self, key):
        return AbsentWeights()

    def __repr__(self) -> str:
        return "AbsentWeights()"


def install(stand_ins: StandIns, patches: Patches) -> dict[str, Callable]:
    """torch's readers patched now; timm's and transformers' when the script imports them."""
    _torch(stand_ins, patches)
    return {"timm": lambda module: _timm(module, stand_ins, patches),
            "transformers": lambda module: _transformers(module, stand_ins, patches)}


def _torch(stand_ins: StandIns, patches: Patches) -> None:
    import torch
    from torch import hub, nn

    load, hub_load = torch.load, hub.load
    module_load, optimizer_load = nn.Module.load_state_dict, torch.optim.Optimizer.load_state_dict

    def torch_load(f, *args, **kwargs):
        if isinstance(f, (str, os.PathLike)) and stand_ins.answers(f):
            stand_ins.record("pretrained", f"torch.load({os.fspath(f)!r})",
                             "absent or outside the project: " + OWN_INIT)
            return AbsentWeights()
        return load(f, *args, **kwargs)

    def load_state_dict_from_url(url, *args, **kwargs):
        stand_ins.record("pretrained", "load_state_dict_from_url", f"{url}: not downloaded; {OWN_INIT}")
        return AbsentWeights()

    def load_hub(repo_or_dir, model, *args, **kwargs):
        source = kwargs.get("source", "github")
        if source == "local" and not stand_ins.answers(repo_or_dir):
            kwargs = {k: (False if k in ("pretrained", "weights_only") and v is True else v) for k, v in kwargs.items()}
            return hub_load(repo_or_dir, model, *args, **kwargs)
        if str(repo_or_dir).split(":")[0].rstrip("/") == "pytorch/vision":
            import torchvision

            stand_ins.record("pretrained", f"torch.hub.load({repo_or_dir!r}, {model!r})",
                             f"torchvision.models.{model} built here, with {OWN_INIT}")
            return torchvision.models.get_model(model, weights=None)
        raise RuntimeError(f"torch.hub.load({repo_or_dir!r}, {model!r}): the hub repository's code is not here "
                           "and is not downloaded (opscan stands in for weights, not for code)")

    def module_load_state_dict(self, state_dict, *args, **kwargs):
        if isinstance(state_dict, AbsentWeights):
            from torch.nn.modules.module import _IncompatibleKeys

            return _IncompatibleKeys([], [])
        return module_load(self, state_dict, *args, **kwargs)

    def optimizer_load_state_dict(self, state_dict):
        if isinstance(state_dict, AbsentWeights):
            return None
        return optimizer_load(self, state_dict)

    patches.set(torch, "load", torch_load)
    patches.set(hub, "load_state_dict_from_url", load_state_dict_from_url)
    patches.set(hub, "load", load_hub)
    patches.set(nn.Module, "load_state_dict", module_load_state_dict)
    patches.set(torch.optim.Optimizer, "load_state_dict", optimizer_load_state_dict)
    try:
        import torch.utils.model_zoo as zoo
    except ImportError:
        return
    patches.set(zoo, "load_url", load_state_dict_from_url)


def _timm(module, stand_ins: StandIns, patches: Patches) -> None:
    original = module.create_model

    def create_model(model_name, pretrained=False, *args, **kwargs):
        if pretrained:
            stand_ins.record("pretrained", f"timm.create_model({model_name!r}, pretrained=True)",
                             "built with pretrained=False: " + OWN_INIT)
            kwargs.pop("pretrained_cfg_overlay", None)
        return original(model_name, False, *args, **kwargs)

    patches.set(module, "create_model", create_model)


def _transformers(module, stand_ins: StandIns, patches: Patches) -> None:
    """`from_pretrained` of a model whose weights are not here: built from its config (NOTE [absent weights])."""
    from transformers import modeling_utils
    from transformers.models.auto import auto_factory, modeling_auto

    # each Auto class holds its own copy of from_pretrained (transformers' auto_class_update)
    owners = [modeling_utils.PreTrainedModel, auto_factory._BaseAutoModelClass,
              *(c for c in vars(modeling_auto).values()
                if isinstance(c, type) and issubclass(c, auto_factory._BaseAutoModelClass))]
    for owner in owners:
        found = owner.__dict__.get("from_pretrained")
        if isinstance(found, classmethod):
            patches.set(owner, "from_pretrained", classmethod(_from_pretrained(found.__func__, module, stand_ins)))


def _from_pretrained(original: Callable, module, stand_ins: StandIns) -> Callable:
    def from_pretrained(cls, name, *args, **kwargs):
        local = isinstance(name, (str, os.PathLike)) and not stand_ins.answers(name)
        if local and _has_weights(os.fspath(name)):
            return original(cls, name, *args, **kwargs)
        built = f"built from its config: {OWN_INIT}"
        try:
            config = kwargs.pop("config", None) or module.AutoConfig.from_pretrained(
                name, local_files_only=True, trust_remote_code=kwargs.get("trust_remote_code", False))
        except (OSError, ValueError) as exc:
            found = _default_config(cls, module, name)
            if found is None:
                raise OSError(f"from_pretrained({name!r}): neither its weights nor its config are here, and nothing "
                              f"is downloaded: the architecture is not known ({exc.__class__.__name__})") from None
            config, said = found
            built = f"its config is not here: built from {type(config).__name__}'s defaults ({said}); {OWN_INIT}"
        stand_ins.record("pretrained", f"{cls.__name__}.from_pretrained({os.fspath(name)!r})", built)
        for key in ("local_files_only", "revision", "cache_dir", "token", "use_auth_token", "force_download",
                    "resume_download", "proxies", "subfolder", "low_cpu_mem_usage", "device_map", "use_safetensors",
                    "variant", "ignore_mismatched_sizes", "output_loading_info"):
            kwargs.pop(key, None)
        kwargs = {k: v for k, v in kwargs.items() if not k.startswith("_")}   # transformers' own (_from_auto)
        if hasattr(cls, "from_config"):   # an Auto class
            return cls.from_config(config, *args, **kwargs)
        return cls(config, *args, **{k: v for k, v in kwargs.items() if k not in ("trust_remote_code", "dtype",
                                                                                    "torch_dtype")})
    return from_pretrained


def _default_config(cls, module, name) -> tuple | None:
    """(a config built from defaults, what was assumed) for a model whose config is not here, or None
    (the architecture is not known): a concrete model class's own config class (NOTE [absent
    weights]), else, for an Auto class, the model type the name reads as (NOTE [a type read from the
    name] in hub_names.py); NOTE [decoder start of a default config]."""
    config_class = getattr(cls, "config_class", None)
    if isinstance(config_class, type) and not hasattr(cls, "from_config"):
        try:
            config = config_class()
        except Exception:   # noqa: BLE001 - a config class that needs arguments: the architecture stays unknown
            return None
        said = f"assumed: the ops are {cls.__name__}'s own, its sizes may differ from {os.fspath(name)!r}'s"
    elif hasattr(cls, "from_config") and isinstance(name, (str, os.PathLike)):
        found = hub_names.default_config(module, name)
        if found is None:
            return None
        config, kind = found
        said = (f"assumed: the model type {kind!r} read from the name {os.fspath(name)!r}, its sizes the config "
                "class's defaults, which may not be the checkpoint's")
    else:
        return None
    return config, said + _decoder_start(config)


# NOTE [decoder start of a default config]
# An encoder-decoder model shifts its labels right to make the decoder's inputs, starting them with
# `config.decoder_start_token_id`. A hub checkpoint's config sets it; some config classes' defaults do
# not (T5Config: T5's `_shift_right` then stops, "decoder_start_token_id has to be defined. In T5 it
# is usually set to the pad_token_id"). transformers' T5 documentation says T5 uses the pad token as
# the decoder's start token (model_doc/t5: "T5 uses the pad_token_id as the decoder_start_token_id";
# its T5Model example prepends "start token which is pad token"), so a config built from defaults
# that is an encoder-decoder's, with a pad token and no decoder start, starts the decoder with the
# pad token, said as assumed (the ops do not depend on which id it is). A config that sets its own
# (BartConfig's 2) is left as it is.
def _decoder_start(config) -> str:
    if not getattr(config, "is_encoder_decoder", False) or getattr(config, "decoder_start_token_id", None) is not None:
        return ""
    pad = getattr(config, "pad_token_id", None)
    if pad is None:
        return ""
    config.decoder_start_token_id = pad
    return f"; decoder_start_token_id unset in those defaults: the pad token's id, {pad} (assumed, T5's convention)"


def _has_weights(folder: str) -> bool:
    if not os.path.isdir(folder):
        return os.path.isfile(folder)
    return any(name.endswith((".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".index.json"))
               for name in os.listdir(folder))
