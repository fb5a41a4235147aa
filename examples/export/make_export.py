"""Regenerate tiny_classifier.pt2: `python examples/export/make_export.py` (about 80 KB).

The exported program is the model's forward in eval mode (what a serving stack loads). Stack
traces in the file name files relative to the repository (`examples/export/tiny_classifier.py`,
`site-packages/torch/...`) instead of this machine's absolute paths.
"""

import re
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

from tiny_classifier import build  # noqa: E402


def _relative(trace: str) -> str:
    """Absolute paths in a stack trace -> repository- or site-packages-relative ones."""
    def fix(match: re.Match) -> str:
        path = match[1].replace("\\", "/")
        if "-packages/" in path:
            path = "site-packages/" + path.split("-packages/", 1)[1]
        elif path.startswith(REPO.as_posix() + "/"):
            path = path[len(REPO.as_posix()) + 1:]
        return f'File "{path}"'
    return re.sub(r'File "([^"]+)"', fix, trace)


def main(out: Path = HERE / "tiny_classifier.pt2") -> Path:
    torch.manual_seed(0)
    model, inputs = build()
    model.eval()
    program = torch.export.export(model, (), inputs)
    for node in program.graph.nodes:
        if node.meta.get("stack_trace"):
            node.meta["stack_trace"] = _relative(node.meta["stack_trace"])
    torch.export.save(program, str(out))
    return out


if __name__ == "__main__":
    print(main())
