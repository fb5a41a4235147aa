"""`opscan run` tests: register the imitated `neuron` device before any test runs a real backward."""

import importlib.util

if importlib.util.find_spec("torch") is not None:
    from opscan.trace import prepare

    prepare()
