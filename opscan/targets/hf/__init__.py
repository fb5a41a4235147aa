"""`hf:` targets: transformers models built from a local config.json, with inputs for their task.

builder (config -> model class -> empty-weights model) -> inputs (the main input, then a call
completed from the forward signature: NOTE [hf inputs]) with shapes (sizes from the config and the
first layers) and architectures (the one per-architecture table, keyed on model_type: NOTE
[one architecture table]), whose layouts are in layouts. For the zoo's default configs: defaults
(transformers' default config of a model type, written as config.json), repair (unset fields
filled: NOTE [unset fields]) and upstream (known transformers bugs, each with a reproduction).
Nothing here is imported before an `hf:` target is built or a default config written.
"""
