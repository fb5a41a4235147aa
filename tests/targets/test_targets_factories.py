"""`opscan REPO` on factories of a package, hubconf entry points imported from the package, and
model classes whose constructor arguments a config file beside them holds (docs/repositories.md).

Asserted: what `opscan REPO --format json` shows (traces[].target, phases, notes).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

REPOS = Path(__file__).resolve().parent / "repos"
TRAIN = {"forward", "backward", "optimizer"}


def test_the_factories_and_the_hub_entries_are_found_statically_in_order():
    """The quick loop's part of the tests below (which trace them): what discovery tries, and in
    which order, read without building anything."""
    from opscan.targets.discovery import candidates

    assert candidates(REPOS / "pkgfactory", construct=True).traced[:2] == (
        "repo:zoo/model_factory.py:create_model", "repo:zoo/script_util.py:create_model_and_schedule")
    hub = candidates(REPOS / "hubimports", construct=True)
    assert [c.target for c in hub.candidates if c.kind == "hubconf"] == [
        "repo:hubconf.py:tinyvit_vits8", "repo:hubconf.py:tinyvit_vitb8", "repo:hubconf.py:tinyvit_vitl8",
        "repo:hubconf.py:tinyvit_vits8_lc"]
    assert hub.traced[0] == "repo:hubconf.py:tinyvit_vits8"


@pytest.mark.slow
def test_factories_of_a_package_import_relatively_and_take_a_defaults_function(repo_report, report_phases):
    report = repo_report(REPOS / "pkgfactory")
    assert [t["target"] for t in report["traces"]] == ["repo:zoo/model_factory.py:create_model",
                                                       "repo:zoo/script_util.py:create_model_and_schedule"]
    assert all(t["complete"] and t["mode"] == "train" for t in report["traces"])
    assert TRAIN <= report_phases(report) and "aten::convolution" in {op["op"] for op in report["ops"]}
    assert "traced with no configuration: repo:zoo/model_factory.py:create_model: a factory whose " \
           "arguments have defaults" in report["notes"]
    assert any(n.startswith("traced with no configuration: repo:zoo/script_util.py:create_model_and_schedule: "
                            "create_model_and_schedule(**model_and_schedule_defaults())") for n in report["notes"])
    assert not any("relative import" in n for n in report["notes"])


@pytest.mark.slow
def test_hubconf_entry_points_imported_from_the_package(repo_report, report_phases):
    report = repo_report(REPOS / "hubimports")
    # imported entries count; the smallest backbone first (vits before vitb/vitl, backbones before
    # heads); `tokenize` and the imported module `backbones` are no entries
    hub = [c["target"] for c in report["discovery"]["candidates"] if c["kind"] == "hubconf"]
    assert hub == ["repo:hubconf.py:tinyvit_vits8", "repo:hubconf.py:tinyvit_vitb8",
                   "repo:hubconf.py:tinyvit_vitl8", "repo:hubconf.py:tinyvit_vits8_lc"]
    first = report["traces"][0]
    assert first["target"] == "repo:hubconf.py:tinyvit_vits8" and first["complete"]   # 56x56: its patch embedder's size
    assert TRAIN <= report_phases(report) and "aten::convolution" in {op["op"] for op in report["ops"]}
    assert "traced with no configuration: repo:hubconf.py:tinyvit_vits8: torch.hub entry point " \
           "tinyvit_vits8(pretrained=False), imported from vitzoo.hub.backbones" in report["notes"]


@pytest.mark.slow
def test_model_class_arguments_from_a_nested_table_of_a_config_file_beside_it(repo_report, report_phases):
    report = repo_report(REPOS / "shippedcfg")
    first = report["traces"][0]
    # not FlowLoss (it needs nothing), not flow_old.py (a superseded file, with a longer definition)
    assert first["target"] == "repo:flow.py:Flow" and first["complete"]
    assert TRAIN <= report_phases(report) and "aten::convolution" in {op["op"] for op in report["ops"]}
    assert "traced with no configuration: repo:flow.py:Flow: Flow(**config.json[\"flow_config\"]): constructor " \
           "arguments from a config file beside it (n_flows 12 -> 2, WN_config.n_layers 8 -> 2)" in report["notes"]


@pytest.mark.slow
def test_a_file_target_of_a_package_is_imported_as_its_package_imports_it(run_cli):
    target = f"{REPOS / 'pkgfactory' / 'zoo' / 'model_factory.py'}:create_model"
    code, out, err = run_cli("trace", target, "--input", "0:float32[2,3,16,16]", "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    (trace,) = report["traces"]
    assert trace["complete"] and "aten::convolution" in {op["op"] for op in report["ops"]}
