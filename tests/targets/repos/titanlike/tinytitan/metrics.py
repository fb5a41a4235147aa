"""A `build_*` helper that builds no model (torchtitan's `build_device_memory_monitor`)."""


def build_device_memory_monitor():
    raise RuntimeError("needs a GPU")
