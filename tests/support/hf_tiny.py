"""Helpers of the hf input tests: a tiny config written to a folder, the op names of a trace."""

from __future__ import annotations

import json

# The text part of most tiny configs in these tests.
TEXT = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
        "vocab_size": 100, "max_position_embeddings": 16}


def write_config(folder, config: dict) -> str:
    """Write `config` as folder/config.json; the folder, as `hf:` takes it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    return str(folder)


def op_names(trace) -> set[str]:
    return {u.op for u in trace.ops}
