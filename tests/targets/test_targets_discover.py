"""Discovery without execution (opscan/targets/discovery.py): model folders, exported programs, factories.

Nothing here needs torch: discovery reads JSON and Python source (ast) only.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path


from opscan.targets.discovery import FACTORY_HINT, candidates, direct, toml_lines

ROOT = Path(__file__).resolve().parents[2]
LLAMA = ROOT / "examples" / "models" / "hf" / "llama-tiny"


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def _remote_config(**extra) -> str:
    return json.dumps({"model_type": "tiny-remote", "architectures": ["TinyModel"],
                       "auto_map": {"AutoConfig": "configuration_tiny.TinyConfig",
                                    "AutoModel": "modeling_tiny.TinyModel"}, **extra})


def test_a_transformers_folder_is_itself_the_model():
    found = direct(LLAMA, "examples/models/hf/llama-tiny")
    assert found.traced == ("hf:examples/models/hf/llama-tiny",) and found.refused == ()
    # its config.json names the same model
    assert direct(LLAMA / "config.json", "examples/models/hf/llama-tiny/config.json").traced == \
        ("hf:examples/models/hf/llama-tiny",)


def test_remote_code_is_refused_unless_trusted(tmp_path):
    _write(tmp_path, {"config.json": _remote_config()})
    refused = direct(tmp_path, "m")
    assert refused.traced == ()
    (cand,) = refused.refused
    assert cand.target == "hf:m" and not cand.ready
    assert "auto_map" in cand.note and "configuration_tiny.py" in cand.note and "modeling_tiny.py" in cand.note
    assert "--trust-remote-code" in cand.note
    assert direct(tmp_path, "m", trust_remote_code=True).traced == ("hf:m",)


def test_architectures_without_model_type_is_refused_with_the_reason(tmp_path):
    _write(tmp_path, {"config.json": json.dumps({"architectures": ["LlamaForCausalLM"]})})
    (cand,) = direct(tmp_path, "m").refused
    assert "model_type" in cand.note


def test_timm_folder_and_exported_programs(tmp_path):
    _write(tmp_path / "timm", {"config.json": json.dumps({"architecture": "resnet18", "num_classes": 10})})
    assert direct(tmp_path / "timm", "timm").traced == ("timm:timm",)
    exports = tmp_path / "exports"
    _write(exports, {"b.pt2": "x", "a.pt2": "x"})
    assert direct(exports / "a.pt2", "exports/a.pt2").traced == ("pt2:exports/a.pt2",)
    assert direct(exports, "exports").traced == ("pt2:exports/a.pt2", "pt2:exports/b.pt2")
    # a folder of code that happens to hold a .pt2 is a project, not a model
    _write(exports, {"serve.py": "import torch\n"})
    assert direct(exports, "exports") is None


def test_other_json_and_plain_folders_are_not_models(tmp_path):
    _write(tmp_path, {"config.json": json.dumps({"learning_rate": 0.1}), "x.py": "pass\n"})
    assert direct(tmp_path, ".") is None
    assert direct(tmp_path / "x.py", "x.py") is None


def test_nanogpt_without_its_config_proposes_model_build(tmp_path):
    project = tmp_path / "nanogpt"
    shutil.copytree(ROOT / "examples" / "nanogpt", project)
    found = candidates(project)
    first = found.candidates[0]
    assert (first.target, first.kind, first.ready, first.path) == ("model.py:build", "factory", True, "model.py")
    assert [c.target for c in found.candidates if c.ready] == ["model.py:build"]
    # train.py builds GPT inline at import: named, but not traceable without a factory
    inline = [c for c in found.candidates if c.kind == "inline"]
    assert [c.path for c in inline] == ["train.py"] and "factory" in inline[0].note
    assert toml_lines(first) == '[[tool.opscan.models]]\ntarget = "model.py:build"\n'


def test_python_candidates(tmp_path):
    _write(tmp_path, {
        "nets.py": (
            "import torch\nfrom torch import nn\n\n"
            "class Block(nn.Module):\n    def __init__(self, width):\n        super().__init__()\n\n"
            "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.block = Block(4)\n\n"
            "def create_model(batch=2, seq_len=8):\n    return Net()\n\n"
            "def get_model(path):\n    return Net()\n\n"
            "def get_batch():\n    return None\n\n"
            "class Head(torch.nn.Module):\n    def forward(self, x):\n        return x\n"),
        "serve.py": "from transformers import AutoModel\nmodel = AutoModel.from_pretrained('weights/llama')\n",
        "weights/llama/config.json": LLAMA.joinpath("config.json").read_text(),
        "script.py": "import torch\nfrom nets import Net\ntorch.manual_seed(0)\nmodel = Net()\n",
        "nb.ipynb": json.dumps({"cells": [{"cell_type": "code", "source": ["%matplotlib inline\n",
                                                                        "net = Net()\n"]}]}),
        "broken.py": "def build(:\n",
        ".venv/lib/site.py": "def build():\n    pass\n",
    })
    by_target = {c.target: c for c in candidates(tmp_path).candidates}
    assert by_target["nets.py:create_model"].ready                    # batch/seq_len are passed by opscan
    assert not by_target["nets.py:get_model"].ready and "path" in by_target["nets.py:get_model"].note
    assert "nets.py:get_batch" not in by_target                        # not a model factory name
    assert "nets.py:Block" not in by_target                            # built by Net: a submodule
    assert "nets.py:Net" not in by_target                              # built by the factory
    head = by_target["nets.py:Head"]                                   # built by nothing: a class to trace
    assert head.kind == "module-class" and not head.ready and "inputs" in head.note
    pretrained = [c for c in by_target.values() if c.kind == "from-pretrained"]
    assert [(c.target, c.path) for c in pretrained] == [("hf:weights/llama", "serve.py")]
    assert by_target["hf:weights/llama"].kind in ("hf-folder", "from-pretrained")
    assert by_target["script.py:4"].kind == "inline"
    assert [c.kind for c in by_target.values() if c.path == "nb.ipynb"] == ["inline"]
    assert not any(".venv" in c.path or c.path == "broken.py" for c in by_target.values())
    ready = [c.target for c in candidates(tmp_path).candidates if c.ready]
    assert ready[0] == "nets.py:create_model"                          # factories first


def test_nothing_found(tmp_path):
    _write(tmp_path, {"util.py": "def add(a, b):\n    return a + b\n"})
    assert candidates(tmp_path).candidates == ()
    assert "def build():" in FACTORY_HINT and "target =" in FACTORY_HINT


def test_discovery_reads_but_never_runs_the_code(tmp_path):
    marker = tmp_path / "RAN"
    payload = f"open({str(marker)!r}, 'w').write('x')\n"
    _write(tmp_path / "p", {"model.py": payload + "def build():\n    return None\n",
                            "__init__.py": payload, "nb.ipynb": json.dumps(
                                {"cells": [{"cell_type": "code", "source": payload}]})})
    assert [c.target for c in candidates(tmp_path / "p").candidates if c.ready] == []   # runs at import
    assert not marker.exists()


def test_search_is_breadth_first_and_bounded(tmp_path, monkeypatch):
    import opscan.targets.discovery as discover

    _write(tmp_path, {"a/b/c/deep.py": "def build():\n    return None\n",
                      "z_model.py": "def build():\n    return None\n",
                      "m/config.json": LLAMA.joinpath("config.json").read_text()})
    assert [c.target for c in candidates(tmp_path).candidates] == ["a/b/c/deep.py:build", "z_model.py:build", "hf:m"]
    monkeypatch.setattr(discover, "MAX_FILES", 2)     # the shallowest files are read first
    assert [c.target for c in candidates(tmp_path).candidates] == ["z_model.py:build", "hf:m"]


def test_the_report_carries_what_the_terminal_prints_of_discovery(tmp_path):
    """The app puts each candidate's [[tool.opscan.models]] block and the factory hint into the
    report (Discovery.config_blocks / factory_hint); the terminal reporter prints them from there."""
    import io

    from opscan.pipeline.analyse import RunOptions, analyse
    from opscan.config import Config
    from opscan.reporters.terminal import make_console, render

    project = tmp_path / "nanogpt"
    shutil.copytree(ROOT / "examples" / "nanogpt", project, ignore=shutil.ignore_patterns("pyproject.toml"))
    report = analyse(project, Config(root=project), RunOptions(project_code=False))   # found, none run
    found = report.discovery
    assert found.traced == () and found.factory_hint == FACTORY_HINT
    assert found.config_blocks == tuple(toml_lines(c) for c in found.candidates)
    out = io.StringIO()
    render(report, out, make_console(out))
    text = out.getvalue()
    assert '[[tool.opscan.models]]  # model.py:' in text and 'target = "model.py:build"' in text
    assert "To trace those, write a factory opscan can call" in text   # train.py builds its model inline


AGENT = """\
import torch
from torch import nn


class Policy(nn.Module):
    def __init__(self, channels, actions):
        super().__init__()
        self.net = nn.Linear(channels, actions)

    def forward(self, x):
        return self.net(x).softmax(-1)


class Part(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.lin = nn.Linear(width, width)

    def forward(self, x):
        return self.lin(x)


class Whole(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.part = Part(width)

    def forward(self, x):
        return self.part(x)


class Agent:
    def __init__(self, channels, actions):
        self.policy = Policy(channels, actions)
        self.optimizer = torch.optim.Adam(self.policy.parameters())
"""


def test_a_model_an_agent_class_builds_is_a_root_and_a_part_a_model_builds_is_not(tmp_path):
    root = _write(tmp_path, {"agent.py": AGENT})
    found = [c.target for c in candidates(root, construct=True).candidates if c.target.startswith("repo:")]
    assert "repo:agent.py:Policy" in found and "repo:agent.py:Whole" in found
    assert "repo:agent.py:Part" not in found
