"""Lists the installed distributions that require torch, NVIDIA's wheels or triton, from their
metadata only (stdlib only).

Run as a script by another environment's interpreter (`PYTHON -I metadata_probe.py`, see
opscan/pipeline/environment.py): it imports nothing of that environment, reads `importlib.metadata` and
prints JSON `[[name, version, [requirements naming torch, nvidia-*, *-cu1x or triton]], ...]`.
"""

from __future__ import annotations

import importlib.metadata as metadata
import json
import re

_TORCH = re.compile(r"^\s*torch\s*(?:[<>=!~;\[(@ ]|$)")
# NVIDIA's runtime wheels, `*-cu12` builds and triton (NOTE [cuda by metadata] in opscan/scan/constraints.py)
_CUDA = re.compile(r"^\s*(?:nvidia[-_.][A-Za-z0-9_.-]+|[A-Za-z0-9_.-]+[-_.]cu1[0-9]+|triton)\s*(?:[<>=!~;\[(@ ]|$)",
                   re.I)


def rows() -> list[list]:
    """[[name, version, [Requires-Dist entries on torch, NVIDIA wheels or triton]], ...], sorted."""
    out = []
    for dist in metadata.distributions():
        try:
            name, version = dist.metadata["Name"], dist.version
            requires = [r for r in (dist.requires or []) if _TORCH.match(r) or _CUDA.match(r)]
        except Exception:  # noqa: BLE001 - a broken distribution's metadata: skipped
            continue
        if name and requires:
            out.append([name, version, requires])
    return sorted(out)


if __name__ == "__main__":
    print(json.dumps(rows()))
