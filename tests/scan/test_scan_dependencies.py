"""Dependency manifests: every kind read, judged against the release's torch pairing, bad ones located."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from opscan.config import Config
from opscan.pipeline.phases import dependency_context
from opscan.scan.dependencies import DependencyContext
from opscan.scan import scan_memory, scan_paths, scan_source
from opscan.scan.rules import load_rules

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "manifests"
RULES = load_rules()
DEPS = dependency_context(Config(HERE))


def _found(root: Path, deps=DEPS, **kw) -> set[str]:
    result = scan_paths(root, rules=RULES, check_fixes=False, deps=deps, **kw)
    return {f"{f.location.path}:{f.location.line} {f.rule}" for f in result.findings}


def _memory(files: dict[str, str], deps=DEPS) -> set[str]:
    return {f"{f.location.path}:{f.location.line} {f.rule}"
            for f in scan_memory(files, RULES, deps=deps).findings}


def test_uv_project_with_a_cuda_index_in_its_sources_and_its_lock():
    assert _found(FIXTURES / "uv-cuda") == {
        "pyproject.toml:6 OPS501",     # torch==2.4.1
        "pyproject.toml:9 OPS506",     # flash-attn (Linux marker: installed on Trainium)
        "pyproject.toml:10 OPS513",    # bitsandbytes>=0.43 admits 0.46.0 on, whose wheels run on CPU (a warning)
        "pyproject.toml:21 OPS504",    # [[tool.uv.index]] url; the lock's CUDA torch is not reported again
    }
    result = scan_paths(FIXTURES / "uv-cuda", rules=RULES, check_fixes=False, deps=DEPS)
    index = next(f for f in result.findings if f.rule == "OPS504")
    assert "[tool.uv.sources]" in index.message and "torch" in index.message
    pin = next(f for f in result.findings if f.rule == "OPS501")
    assert pin.subject == "torch 2.4 to 2.13/2.14" and pin.severity == "error" and pin.task == "torch-version"


def test_conda_environment_with_the_nvidia_channel_and_a_cuda_meta_package():
    assert _found(FIXTURES / "conda-env") == {
        "environment.yml:4 OPS507", "environment.yml:8 OPS501", "environment.yml:9 OPS502",
        "environment.yml:10 OPS507", "environment.yml:11 OPS507", "environment.yml:15 OPS504",
        "environment.yml:16 OPS506", "environment.yml:16 OPS509",   # xformers 0.0.23.post1 requires torch 2.1.2
    }


def test_dockerfile_on_a_cuda_base_with_a_nightly_torch_from_a_cuda_index():
    found = _found(FIXTURES / "docker-nightly")
    assert found == {
        "Dockerfile:1 OPS508", "Dockerfile:7 OPS504",   # the index on the RUN's second line
        "requirements.txt:1 OPS501", "requirements.txt:2 OPS502", "requirements.txt:3 OPS503",
        "requirements.txt:4 OPS506",
    }


def test_a_lock_that_disagrees_with_its_manifest_is_reported_once_at_the_lock():
    # poetry: ^2.2.0 admits 2.13, the lock resolves 2.2.2: the lock line is the one to change
    assert _found(FIXTURES / "poetry-cuda") == {
        "poetry.lock:5 OPS501", "pyproject.toml:10 OPS502", "pyproject.toml:19 OPS504"}
    assert _found(FIXTURES / "pdm-cuda") == {"pdm.lock:17 OPS501", "pdm.lock:23 OPS502", "pyproject.toml:13 OPS504"}


def test_a_lock_that_agrees_with_its_manifest_adds_nothing():
    # Pipfile pins torch==2.0.1 from a CUDA index; Pipfile.lock resolves the same: reported at the Pipfile only
    assert _found(FIXTURES / "pipenv-cuda") == {"Pipfile:7 OPS504", "Pipfile:12 OPS501", "Pipfile:13 OPS502"}


def test_setup_py_read_with_ast_and_setup_cfg_and_extras_are_guarded():
    result = scan_paths(FIXTURES / "setuptools-ssm", rules=RULES, check_fixes=False, deps=DEPS)
    found = {(f.location.path, f.location.line, f.rule, f.guarded) for f in result.findings}
    assert found == {
        ("setup.py", 4, "OPS501", False), ("setup.py", 6, "OPS506", False),
        ("setup.py", 14, "OPS506", True),    # extras_require: reported, never a blocker
        ("setup.cfg", 6, "OPS501", False),
        ("setup.cfg", 7, "OPS509", False),   # torchvision 0.14.1 requires torch 1.13.1 (its published metadata)
    }
    assert {f.subject for f in result.findings if f.location.line == 14} == {"causal_conv1d", "triton"}


def test_requirements_includes_are_followed_even_without_a_requirements_name():
    assert _found(FIXTURES / "requirements-includes") == {
        "requirements/base.txt:2 OPS501", "requirements/base.txt:2 OPS504", "constraints.txt:1 OPS502",
        "extra.txt:1 OPS506", "extra.txt:2 OPS506", "extra.txt:3 OPS506",
    }


def test_specifiers_that_admit_a_paired_torch_give_nothing():
    assert _found(FIXTURES / "clean") == set()
    assert _memory({"requirements.txt": "torch>=2.6\ntorch\ntorch~=2.13.0\ntorch<3\ntorch!=2.12.0\n"}) == set()


def test_the_release_decides_the_pairing_not_a_constant():
    files = {"requirements.txt": "torch==2.9.1\n"}
    assert _memory(files) == {"requirements.txt:1 OPS501"}
    xla = dependency_context(Config(HERE, backend="torch-neuronx-xla"))   # pairs with torch 2.9
    assert xla.torch == ("2.9",)
    assert _memory(files, xla) == set()
    assert _memory(files, DependencyContext()) == set()   # no release known: pins are not judged


def test_a_release_file_given_with_db_picks_the_pairing(tmp_path, run_cli):
    db = tmp_path / "mine.yaml"
    db.write_text('schema_version: 1\nbackend: torchneuron\nrelease: "9.9.0"\n'
                  'packages:\n  - {name: torch-neuronx, version: "2.4.0.0", torch: "2.4"}\n')
    project = tmp_path / "p"
    shutil.copytree(FIXTURES / "uv-cuda", project)
    code, out, _ = run_cli("scan", str(project), "--db", str(db), "--format", "json", "--no-cache")
    rules = {(f["path"], f["rule"]) for f in json.loads(out)["findings"]}
    assert ("pyproject.toml", "OPS501") not in rules and ("pyproject.toml", "OPS504") in rules


def test_pairing_heads_pick_the_release_the_database_picks():
    from opscan.db import load_release
    from opscan.pipeline.pairing import release_head

    for spec in (None, "2.33.0", "torchneuron", "torch-neuronx-xla", "torch-neuronx-xla==2.3.0",
                 "torch-neuronx==2.14.3.0"):
        head, release = release_head(spec), load_release(spec)
        assert head.spec == release.spec
        assert head.torch == tuple(sorted({p.torch for p in release.packages},
                                          key=lambda v: tuple(map(int, v.split(".")))))


@pytest.mark.parametrize("name, text, line, rule", [
    ("pyproject.toml", '[project]\ndependencies = ["torch==2.0.1"\n', 3, "OPS000"),
    ("environment.yml", "name: x\ndependencies:\n  - pytorch=2.0\n  - [unclosed\n", 5, "OPS000"),
    ("Pipfile.lock", '{"default": {"torch": {"version": "==2.0.1"}}\n', 2, "OPS000"),
    ("setup.cfg", "[options\ninstall_requires = torch\n", 1, "OPS000"),
    ("uv.lock", 'version = 1\n[[package]]\nname = "torch"\nversion = \n', 4, "OPS000"),
])
def test_a_bad_manifest_is_one_located_finding(name, text, line, rule):
    assert _memory({name: text}) == {f"{name}:{line} {rule}"}


def test_a_bad_requirement_line_is_located_and_the_rest_still_judged():
    found = _memory({"requirements.txt": "numpy\ntorch==2.0.1\n$$$ not a requirement\nflash-attn\n"})
    assert found == {"requirements.txt:2 OPS501", "requirements.txt:3 OPS000", "requirements.txt:4 OPS506"}


def test_undecodable_manifest_is_ops001_and_other_files_go_on():
    found = _memory({"requirements.txt": b"torch==2.0\n\xff\xfe\x00bad", "b/requirements.txt": "torch==2.0.1\n"})
    assert "b/requirements.txt:1 OPS501" in found
    assert any(f.startswith("requirements.txt:") and f.endswith("OPS001") for f in found)


def test_a_manifest_naming_no_torch_or_cuda_package_is_not_read():
    result = scan_source("requirements.txt", b"requests\nflask>=3\nnot a $$ requirement\n", RULES, deps=DEPS)
    assert result.findings == () and result.parsed is False and result.lines == 3


def test_suppression_comment_in_a_manifest():
    found = _memory({"requirements.txt": "torch==2.0.1  # opscan: ignore[OPS501]\ntorch==2.1\n"})
    assert found == {"requirements.txt:2 OPS501"}


def test_warm_cache_gives_the_same_findings(tmp_path):
    from opscan.scan.cache import ResultCache, rules_salt, scan_salt

    project = tmp_path / "p"
    shutil.copytree(FIXTURES / "docker-nightly", project)
    cache = ResultCache(tmp_path / "cache", scan_salt(rules_salt(RULES)))
    cold = scan_paths(project, rules=RULES, check_fixes=False, deps=DEPS, cache=cache)
    warm = scan_paths(project, rules=RULES, check_fixes=False, deps=DEPS, cache=cache)
    assert cold.findings == warm.findings and len(cold.findings) == 6
    other = scan_paths(project, rules=RULES, check_fixes=False, cache=cache,
                       deps=dependency_context(Config(HERE, backend="torch-neuronx-xla")))
    assert other.findings != cold.findings   # the pairing is in the cache's salt


def test_installed_metadata_replaces_the_tables(tmp_path, monkeypatch):
    site = tmp_path / "site"
    info = site / "xformers-0.0.28.post1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: xformers\nVersion: 0.0.28.post1\n"
                                   "Requires-Dist: numpy\nRequires-Dist: torch==2.5.0\n")
    other = site / "vision_helper-1.0.dist-info"
    other.mkdir()
    (other / "METADATA").write_text("Metadata-Version: 2.1\nName: vision-helper\nVersion: 1.0\n"
                                    "Requires-Dist: torch>=2.1\nRequires-Dist: torch==1.0; extra == 'old'\n")
    monkeypatch.syspath_prepend(str(site))
    from opscan.pipeline.environment import torch_requirements

    installed, where = torch_requirements("current")
    assert ("xformers", "0.0.28.post1", "==2.5.0") in installed
    assert ("vision-helper", "1.0", ">=2.1") in installed
    deps = dependency_context(Config(HERE), "current")
    found = _memory({"requirements.txt": "xformers==0.0.28.post1\nvision-helper\nxformers==0.0.20\n"}, deps)
    # line 1: its installed metadata pins torch 2.5 (OPS502) and it is a CUDA-only library (OPS506);
    # line 2 requires torch>=2.1 (admits 2.13); line 3 is not the installed version: the shipped table
    # decides (xformers 0.0.20 requires torch 2.0.1: OPS509)
    assert found == {"requirements.txt:1 OPS502", "requirements.txt:1 OPS506", "requirements.txt:3 OPS506",
                     "requirements.txt:3 OPS509"}


def test_environment_that_cannot_run_is_a_usage_error(tmp_path, run_cli):
    (tmp_path / "requirements.txt").write_text("torch==2.0.1\n")
    code, _, err = run_cli("scan", str(tmp_path), "--environment", str(tmp_path / "no-python"))
    assert code == 2 and "--environment" in err and len(err.strip().splitlines()) == 1


def test_installed_metadata_makes_a_package_cuda_only_by_what_it_requires(tmp_path, monkeypatch):
    site = tmp_path / "site"
    for name, version, requires in (
            ("fastkernels", "1.2", ["torch>=2.0", "nvidia-cublas-cu12==12.4.5.8",
                                    "triton>=3.0; sys_platform == 'linux'", "nvidia-nccl-cu12; extra == 'dist'"]),
            ("lmdeploy", "0.16.0", ["torch>=2.0"]),          # the table says CUDA; this build requires no NVIDIA wheel
            ("winonly", "1.0", ["torch", "nvidia-cudnn-cu12; sys_platform == 'win32'"])):
        info = site / f"{name}-{version}.dist-info"
        info.mkdir(parents=True)
        lines = "".join(f"Requires-Dist: {r}\n" for r in requires)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{lines}")
    monkeypatch.syspath_prepend(str(site))
    deps = dependency_context(Config(HERE), "current")
    assert ("fastkernels", "1.2", "nvidia-cublas-cu12, triton") in deps.installed_cuda
    found = _memory({"requirements.txt": "fastkernels\nlmdeploy==0.16.0\nwinonly\nfastkernels==1.0\n"}, deps)
    # line 1: the installed 1.2 requires NVIDIA's cuBLAS and triton (OPS510); line 2: the installed
    # lmdeploy requires none (the environment replaces the table); line 3: only on Windows; line 4
    # asks for another version than the installed one and no table knows the package
    assert found == {"requirements.txt:1 OPS510"}


@pytest.mark.parametrize("manifest, pinned", [
    # `[tool] uv = "..."`: uv_sources reached `.get` on the string and the whole file was lost (OPS002)
    ('[project]\nname = "a"\ndependencies = ["torch==2.1.0"]\n\n[tool]\nuv = "managed"\n', 3),
    # `[tool.poetry] group = "..."`: `.items()` on the string, the same loss
    ('[tool.poetry]\ngroup = "dev"\n\n[tool.poetry.dependencies]\ntorch = "2.1.0"\n', 5),
])
def test_a_table_written_as_a_value_costs_itself_only(manifest: str, pinned: int):
    # a key TOML allows but the tools read as a table: skipped, the rest of the manifest still judged
    assert _memory({"pyproject.toml": manifest}) == {f"pyproject.toml:{pinned} OPS501"}


def test_a_lock_whose_packages_are_no_array_of_tables_is_read_as_empty():
    # `package = 3` raised TypeError (iterating an int; the comment passes the pre-check): now no
    # entries and no OPS002, the manifest beside it still judged
    found = _memory({"uv.lock": "version = 1\npackage = 3   # torch\n", "requirements.txt": "torch==2.1.0\n"})
    assert found == {"requirements.txt:1 OPS501"}
