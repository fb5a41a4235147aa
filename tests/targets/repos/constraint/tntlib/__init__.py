from tntlib.tnt import TNT  # noqa: F401
