"""The torch move: one task listing what moves with torch, sized by the distance to the pairing, first in line."""

from __future__ import annotations

from pathlib import Path

from opscan.config import Config
from opscan.pipeline.phases import dependency_context
from opscan.plan import build_tasks
from opscan.records import Coverage, ModelTrace, OpUsage
from opscan.scan.tree import scan_memory
from opscan.scan.rules import load_rules

DEPS = dependency_context(Config(Path(__file__).parent))
RULES = load_rules()


def _tasks(files: dict[str, str], traces=(), coverage=()):
    findings = scan_memory(files, RULES, deps=DEPS).findings
    return {t.id: t for t in build_tasks(findings, traces, coverage)}, findings


def test_one_task_lists_torch_and_what_moves_with_it():
    tasks, _ = _tasks({"requirements.txt": "--extra-index-url https://download.pytorch.org/whl/cu117\n"
                                           "torch==2.0.1\ntorchvision==0.15.2\ntorchtext==0.15.2\nnumpy\n"})
    move = tasks["torch-version"]
    assert move.title.startswith("upgrade to torch 2.13/2.14 and the packages built for it")
    assert [s.line for s in move.sites] == [1, 2, 3, 4]
    assert move.priority == 1 and move.kind == "torch-version"
    assert "2.0 -> 2.13: 13 minor version(s)" in move.effort_basis


def test_size_follows_the_distance_to_the_pairing():
    far, _ = _tasks({"requirements.txt": "torch==2.0.1\n"})
    near, _ = _tasks({"requirements.txt": "torch==2.12.0\n"})
    older, _ = _tasks({"requirements.txt": "torch==1.13.1\n"})
    assert near["torch-version"].effort_hours < far["torch-version"].effort_hours < older["torch-version"].effort_hours
    assert "1 minor version(s)" in near["torch-version"].effort_basis
    assert "14 minor version(s)" in older["torch-version"].effort_basis   # 1.13 -> 2.0 is one step


def test_packages_only_are_a_small_task():
    tasks, _ = _tasks({"requirements.txt": "torch>=2.0\ntorchvision==0.15.2\n"})
    move = tasks["torch-version"]
    assert "no torch pin to move" in move.effort_basis and move.effort_hours < 4


def test_the_torch_move_comes_before_the_op_tasks_and_libraries_it_unblocks():
    usage = OpUsage("aten::foo", 1)
    trace = ModelTrace("m", "train", "neuron", ops=(usage,))
    coverage = (Coverage("aten::foo", "cpu-fallback"),)
    tasks, _ = _tasks({"requirements.txt": "torch==2.0.1\nflash-attn==2.3.3\n",
                       "model.py": "from flash_attn import flash_attn_func\n"}, (trace,), coverage)
    order = list(tasks)
    assert order.index("torch-version") < order.index("library:flash_attn") < order.index("cpu-fallback")
    assert "torch-version" in tasks["cpu-fallback"].depends_on
    # the manifest's CUDA-only library and the code's import are one library task
    assert {s.path for s in tasks["library:flash_attn"].sites} == {"requirements.txt", "model.py"}


def test_cuda_builds_are_their_own_mechanical_task():
    tasks, _ = _tasks({"Dockerfile": "FROM nvidia/cuda:12.1.0-runtime-ubuntu22.04\n",
                       "requirements.txt": "nvidia-nccl-cu12\n"})
    assert tasks["cuda-packages"].priority == 3 and len(tasks["cuda-packages"].sites) == 2


def test_a_library_only_a_manifest_names_is_dropped_with_the_cuda_builds():
    tasks, _ = _tasks({"pyproject.toml": '[project]\nname = "x"\ndependencies = ["torch>=2.13"]\n'
                                         '[project.optional-dependencies]\nkernels = ["triton>=3.0"]\n',
                       "k.py": "import triton\n\n@triton.jit\ndef k(x):\n    pass\n"})
    assert not any(t.startswith("library:") for t in tasks)    # triton is the kernel's language here
    assert [s.path for s in tasks["cuda-packages"].sites] == ["pyproject.toml"]


def test_a_library_requirement_with_cpu_wheels_is_no_drop_task_but_its_imports_stay_a_port():
    alone, findings = _tasks({"requirements.txt": "bitsandbytes>=0.46\neetq\n"})
    assert {f.rule for f in findings} == {"OPS513", "OPS506"}
    assert [s.path + ":" + str(s.line) for s in alone["cuda-packages"].sites] == ["requirements.txt:2"]   # eetq only
    used, _ = _tasks({"requirements.txt": "bitsandbytes>=0.46\n",
                      "train.py": "import bitsandbytes as bnb\nopt = bnb.optim.AdamW8bit([])\n"})
    assert "cuda-packages" not in used
    assert {s.path for s in used["library:bitsandbytes"].sites} == {"requirements.txt", "train.py"}


def _doubled(title: str) -> list[str]:
    words = title.lower().replace("(", " ").split()
    return [a for a, b in zip(words, words[1:]) if a == b]


def test_the_title_reads_well_in_every_form():
    cases = [{"requirements.txt": "torch==2.0.1\n"},                              # an upgrade
             {"requirements.txt": "torch>=2.0\ntorchvision==0.15.2\n"},           # packages only, no pairing named
             {"requirements.txt": "--extra-index-url https://download.pytorch.org/whl/cu121\n"},
             {"pyproject.toml": '[project]\nname = "x"\ndependencies = ["torch>=2.4"]\n'
                                '[project.optional-dependencies]\ntest = ["torch==2.4.0"]\n'}]
    for files in cases:
        title = _tasks(files)[0]["torch-version"].title
        assert not _doubled(title), title
        assert "torch the torch" not in title and "with with" not in title


def test_pins_outside_the_installed_package_are_edits_not_an_upgrade():
    tasks, _ = _tasks({"pyproject.toml": '[project]\nname = "x"\ndependencies = ["torch>=2.4"]\n'
                                         '[project.optional-dependencies]\ntest = ["torch==2.4.0"]\n',
                       "examples/old/Dockerfile": "FROM python:3.10\nRUN pip install torch==1.10.0\n",
                       "docs/requirements.txt": "torch==2.1.0\n",
                       "model.py": "import torch\nx = torch.zeros(1).cuda()\n"})
    move = tasks["torch-version"]
    assert len(move.sites) == 3 and "minor version(s)" not in move.effort_basis   # listed, not sized
    assert move.effort_hours < 4
    assert "torch-version" not in tasks["device-agnostic"].depends_on   # no upgrade: nothing waits for it
    assert "then install" not in move.action


def test_an_upgrade_comes_first_names_what_moves_with_it_and_ends_with_the_install_lines():
    tasks, _ = _tasks({"requirements.txt": "torch==2.4.0\ntorchvision==0.19.0\n",
                       "train.py": "import torch\nmodel = model.cuda()\ntorch.backends.cudnn.benchmark = True\n"})
    order = list(tasks)
    assert order[0] == "torch-version", order
    for task in list(tasks.values())[1:]:
        assert "torch-version" in task.depends_on and task.reason_for("torch-version")
    move = tasks["torch-version"]
    assert "torchvision" in move.action.split("move with it:", 1)[1]
    install = move.action.split("then install the release:", 1)[1]
    assert "torch-neuronx==2.14.*" in install and "https://download.pytorch.org/whl/cpu" in install
    assert "2.13.3.0" in install and "unknown" in install   # the 2.13 line no page gives is said to be unknown
    assert any("update-manual" in s for s in move.sources)
    assert "9 minor version(s)" in move.effort_basis   # 2.4 -> 2.13, from the governing pin


def test_the_install_facts_cite_a_source_for_every_pair():
    from opscan.plan.torch_move import install_facts

    facts = install_facts()
    assert set(facts.pairs) >= {"2.13", "2.14"}
    for version, line, source in facts.pairs.values():
        assert version and source.startswith("https://")
        assert not line or ("torch-neuronx==" in line and "--extra-index-url" in line)
