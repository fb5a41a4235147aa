"""The default configuration, ml_collections style: get_config() returns a nested config object."""


class Config(dict):
    """Attribute access to the keys (a small stand-in for ml_collections.ConfigDict)."""

    __getattr__ = dict.__getitem__
    __setattr__ = dict.__setitem__


def get_config():
    config = Config()
    config.model = Config(vocab_size=512, width=64, depth=6, num_heads=4, mlp_ratio=4)
    config.training = Config(learning_rate=3e-4, batch_size=32, warmup_steps=1000)
    return config
