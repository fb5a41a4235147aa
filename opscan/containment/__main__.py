"""`python -m opscan.containment SPEC -- COMMAND...`: run a command contained (`opscan parity run`,
through supervisor.command_prefix)."""

from __future__ import annotations

import os
import sys

from opscan.containment.policy import Policy
from opscan.containment.supervisor import enter


def _main(argv: list[str]) -> None:
    import json

    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m opscan.containment SPEC -- COMMAND ...", file=sys.stderr)
        os._exit(2)
    spec = json.loads(argv[0])
    policy = Policy(pass_env=tuple(spec["pass_env"]), require=spec["require"], writable=tuple(spec["writable"]),
                    overlays=tuple(spec["overlays"]), set_env=tuple(spec["set_env"].items()),
                    scratch_size=spec["scratch_size"], readable=tuple(spec["readable"]),
                    max_processes=spec["max_processes"])
    held = enter(policy, spec["scratch"], then_exec=argv[2:])
    raise AssertionError(f"not reached: {held}")


if __name__ == "__main__":
    _main(sys.argv[1:])
