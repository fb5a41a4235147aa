"""A config dataclass with `from_name` and a registry of named variants (as litgpt's Config)."""

from dataclasses import dataclass
from typing import Any

configs = [
    dict(name="tinylm-7b", n_embd=4096, n_head=7, n_layer=32, vocab_size=32000),   # n_head does not divide n_embd
    dict(name="tinylm-1m", n_embd=32, n_head=2, n_layer=24, vocab_size=128),
]
name_to_config = {c["name"]: c for c in configs}


@dataclass
class Config:
    name: str = ""
    n_embd: int = 4096
    n_head: int = 7
    n_layer: int = 32
    vocab_size: int = 32000
    block_size: int = 16

    @classmethod
    def from_name(cls, name: str, **kwargs: Any) -> "Config":
        return cls(**{**name_to_config[name], **kwargs})
