"""A source-only run finds the same model at PATH as before it stopped importing discovery for it
(NOTE [a source scan imports no targets] in opscan/pipeline/analyse.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from opscan.config import Config
from opscan.pipeline.analyse import RunOptions, find_models, relative_root, start
from opscan.targets.discovery import direct

HF = json.dumps({"model_type": "llama", "architectures": ["LlamaForCausalLM"]})
LAYOUTS = {
    "source only": {"m.py": "import torch\n"},
    "hf folder": {"config.json": HF},
    "hf folder with code": {"config.json": HF, "m.py": "x = 1\n"},
    "broken config": {"config.json": "{not json"},
    "not a model config": {"config.json": json.dumps({"lr": 0.1}), "m.py": "x = 1\n"},
    "exports": {"a.pt2": "", "b.pt2": ""},
    "exports beside code": {"a.pt2": "", "m.py": "x = 1\n"},
    "config.json folder": {"config.json/x.txt": ""},
}


def _found(target: Path):
    options = RunOptions(trace=False)
    found = find_models(start(target, options), Config(root=target.parent), options)
    return found.discovery, tuple(str(m.target) for m in found.models)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_source_only_run_finds_what_direct_finds(tmp_path: Path, layout: str) -> None:
    root = tmp_path / "p"
    for name, text in LAYOUTS[layout].items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    targets = [root] + [p for p in root.iterdir() if p.is_file() and (p.suffix == ".pt2" or p.name == "config.json")]
    for target in targets:
        discovery, models = _found(target)
        expected = direct(target, relative_root(target))
        assert (discovery is None) == (expected is None), target
        if expected is not None:
            assert discovery.traced == expected.traced and discovery.refused == expected.refused
            assert models == expected.traced
