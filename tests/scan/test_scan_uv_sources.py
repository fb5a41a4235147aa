"""`[tool.uv.sources]` read as a table or a list of tables (NOTE [uv sources] in
opscan/scan/toml_manifests.py): url and path wheels judged as the pins they install, markers honoured,
git sources judged as locations, index sources naming only the packages pinned to them on Linux."""

from __future__ import annotations

from pathlib import Path

from opscan.config import Config
from opscan.pipeline.phases import dependency_context
from opscan.scan import scan_memory
from opscan.scan.rules import load_rules

HERE = Path(__file__).resolve().parent
RULES = load_rules()
DEPS = dependency_context(Config(HERE))

PROJECT = """\
[project]
name = "tts"
dependencies = ["vllm>=0.20", "torch", "fish-speech", "mykernels"]

[tool.uv.sources]
vllm = [{ url = "https://w.example/vllm-0.21.0%2Bcu129-py3-none-any.whl", marker = "sys_platform == 'linux'" }]
torch = { url = "https://download.pytorch.org/whl/cu121/torch-2.1.0%2Bcu121-cp310-cp310-linux_x86_64.whl" }
fish-speech = { git = "https://github.com/fishaudio/fish-speech", rev = "e5e2926" }
mykernels = [
    { url = "https://w.example/mykernels-1.0%2Bcu121-cp310-cp310-win_amd64.whl", marker = "sys_platform == 'win32'" },
    { path = "wheels/mykernels-1.0%2Bcu121-cp310-cp310-linux_x86_64.whl", marker = "sys_platform == 'linux'" },
]
"""


def _findings(files: dict[str, str]):
    return scan_memory(files, RULES, deps=DEPS).findings


def _at(findings, line: int) -> set[str]:
    return {f.rule for f in findings if f.location.line == line}


def test_url_and_path_wheels_in_uv_sources_are_judged_as_the_pins_they_install():
    findings = _findings({"pyproject.toml": PROJECT})
    assert "OPS504" in _at(findings, 6)                     # vllm's +cu129 wheel (a list of tables, Linux marker)
    assert {"OPS501", "OPS504"} <= _at(findings, 7)         # torch 2.1.0+cu121 from a CUDA index
    assert _at(findings, 8) == set()                        # a git source names no version, no CUDA location
    assert _at(findings, 10) == set()                       # a Windows-only source is not installed on Trainium
    assert "OPS504" in _at(findings, 11)                    # a local +cu121 wheel by path
    pin = next(f for f in findings if f.location.line == 7 and f.rule == "OPS501")
    assert pin.subject == "torch 2.1 to 2.13/2.14"
    label = next(f for f in findings if f.location.line == 6 and f.rule == "OPS504")
    assert "cu129" in label.message and label.subject == "vllm"


def test_a_source_whose_marker_excludes_linux_is_skipped_everywhere():
    text = PROJECT.replace("sys_platform == 'linux'", "sys_platform == 'darwin'")
    findings = _findings({"pyproject.toml": text})
    assert _at(findings, 6) == set() and _at(findings, 11) == set()


def test_index_sources_name_only_the_packages_pinned_to_that_index_on_linux():
    text = """\
[project]
name = "x"
dependencies = ["torch>=2.4", "torchvision"]

[tool.uv.sources]
torch = [{ index = "cpu", marker = "sys_platform == 'linux'" }, { index = "cu121", marker = "sys_platform == 'win32'" }]
torchvision = [{ index = "cu121" }]

[[tool.uv.index]]
name = "cu121"
url = "https://download.pytorch.org/whl/cu121"
explicit = true
"""
    index = next(f for f in _findings({"pyproject.toml": text}) if f.rule == "OPS504")
    assert index.location.line == 11
    named = index.message.rsplit("index of ", 1)[1].rstrip(")").split(", ")
    assert named == ["torchvision"]   # torch comes from that index on Windows only


def test_sources_of_another_shape_are_skipped_and_the_rest_is_still_read():
    text = """\
[project]
name = "x"
dependencies = ["torch==2.1.0"]

[tool.uv.sources]
odd = "not a table"
other = [1, 2, { url = 3 }]
bad-marker = { url = "https://example.org/bad_marker-1.0%2Bcu121-py3-none-any.whl", marker = "not a marker" }
"""
    findings = _findings({"pyproject.toml": text})
    assert "OPS501" in _at(findings, 3)
    assert "OPS504" in _at(findings, 8)   # an unreadable marker keeps the source (as for a requirement)
