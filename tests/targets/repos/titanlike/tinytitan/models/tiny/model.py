"""The model: its constructor is its base's, its config a nested subclass."""

from dataclasses import dataclass

from tinytitan.base import Decoder


class TinyModel(Decoder):
    @dataclass(kw_only=True)
    class Config(Decoder.Config):
        dim: int = 4096
        vocab_size: int = 128256
