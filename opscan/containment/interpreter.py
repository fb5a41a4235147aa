"""The command line of every interpreter opscan starts for a child: isolated from its first import.

`isolated_argv(module, *args)` is `python -I -c BOOT ROOT MODULE ARGS...`: no PYTHON* variable, no
user site, neither the working folder nor a script's folder on sys.path; opscan itself is loaded
from ROOT, the folder the parent's opscan came from (found by that folder, not put on sys.path, so
its neighbours shadow nothing), and BOOT calls `MODULE.main(ARGS)`: containment/child.py for a call,
supervisor.py for `opscan parity run`'s launcher, forkserver.py for the zoo's fork server. The
interpreter is started in NEUTRAL_FOLDER. NOTE [opscan's interpreter until contained].
"""

from __future__ import annotations

import os
import sys

# NOTE [opscan's interpreter until contained]
# A child that starts with the working folder (or the project) on sys.path imports that folder's
# `keyword.py`, `signal.py`, `socket.py` ... instead of Python's own while it is still uncontained
# (multiprocessing's children did: `python -c` puts "" first, and their start-up imports a dozen
# modules). `-I` keeps the working folder, PYTHONPATH and the user site out of sys.path from the
# interpreter's first import; the child starts in "/", and takes the parent's sys.path (the project,
# the allow-listed PYTHONPATH) only once it is contained. `python -m opscan` itself cannot be helped
# the same way: Python puts the working folder first and imports from it before opscan's first line
# (docs/reliability.md: run `opscan`, or `python -P -m opscan`).
BOOT = ("import sys\n"
        "from importlib import import_module\n"
        "from importlib.machinery import PathFinder\n"
        "from importlib.util import module_from_spec\n"
        "spec = PathFinder.find_spec('opscan', [sys.argv[1]])\n"
        "module = sys.modules['opscan'] = module_from_spec(spec)\n"
        "spec.loader.exec_module(module)\n"
        "import_module(sys.argv[2]).main(sys.argv[3:])\n")
NEUTRAL_FOLDER = "/"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # holds opscan/


def isolated_argv(module: str, *args: str) -> list[str]:
    """The command line of an isolated interpreter that runs `module.main(list(args))` (an opscan module)."""
    return [sys.executable, "-I", *_flags(), "-c", BOOT, ROOT, module, *args]


def _flags() -> list[str]:
    """This interpreter's settings that `-I` would drop with their variables (PYTHONUTF8,
    PYTHONDONTWRITEBYTECODE, PYTHONWARNINGS, PYTHONOPTIMIZE), as flags."""
    flags = ["-X", "utf8"] if sys.flags.utf8_mode else []
    flags += ["-B"] if sys.flags.dont_write_bytecode else []
    flags += ["-O"] * sys.flags.optimize
    return flags + [f"-W{option}" for option in sys.warnoptions]
