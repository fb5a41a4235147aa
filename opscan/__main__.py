"""`python -m opscan`."""

import os
import sys

# NOTE [no current folder on sys.path]
# `python -m opscan` puts the current folder first on sys.path. Run inside an untrusted checkout,
# its `yaml.py` or `torch.py` would then be imported instead of the real ones: code execution from
# a pull request. The console script never has the folder on sys.path; make `-m` behave the same.
# (Kept when the folder is opscan's own source checkout, run without installing it.)
if not sys.flags.safe_path and sys.path and sys.path[0] in ("", os.getcwd()):
    _own = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if os.path.abspath(sys.path[0] or ".") != _own:
        del sys.path[0]

from opscan.cli import main

raise SystemExit(main())
