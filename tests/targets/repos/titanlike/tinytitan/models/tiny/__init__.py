"""Named variants of TinyModel: functions returning its config (torchtitan's llama3_configs)."""

from tinytitan.base import LayerConfig
from tinytitan.models.tiny.model import TinyModel


def _debugmodel(attn_backend: str) -> TinyModel.Config:
    assert attn_backend == "sdpa"
    return TinyModel.Config(dim=32, vocab_size=128, layers=[LayerConfig(dim=32, hidden=64) for _ in range(4)])


def _8b(attn_backend: str) -> TinyModel.Config:
    return TinyModel.Config(dim=4096, vocab_size=128256,
                            layers=[LayerConfig(dim=4096, hidden=14336) for _ in range(32)])


tiny_configs = {"8B": _8b, "debugmodel": _debugmodel}


def model_registry(flavor: str, attn_backend: str = "sdpa"):
    return tiny_configs[flavor](attn_backend=attn_backend)
