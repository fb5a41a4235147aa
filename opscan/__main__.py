"""`python -m opscan`."""

from opscan.cli import main

raise SystemExit(main())
