"""The library catalog (opscan/plan/libraries.yaml): strict loading, coverage of the scan's libraries."""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest

from opscan.errors import CatalogError, OpscanError
from opscan.plan.libraries import CATALOG_PATH, SIZES, load_catalog, shipped
from opscan.scan.rules import load_rules

GOOD = """\
schema_version: 1
sizes: {small: "s", medium: "m", large: "l"}
libraries:
  - id: flash_attn
    packages: [flash_attn]
    size: small
    replacement: "SDPA"
    why: "CUDA kernels"
    hours: {low: 1, likely: 2, high: 4}
    call_site_minutes: 30
    sources: [https://github.com/Dao-AILab/flash-attention]
kernel_families:
  - id: triton
    rules: [OPS302]
    replacement: "NKI"
    why: "no Triton on Trainium"
    factor: {low: 0.5, likely: 1, high: 2}
    sources: [https://github.com/triton-lang/triton]
"""


def _load(tmp_path: Path, text: str):
    path = tmp_path / "libraries.yaml"
    path.write_text(text)
    return load_catalog(path)


def _error(tmp_path: Path, text: str) -> CatalogError:
    with pytest.raises(CatalogError) as info:
        _load(tmp_path, text)
    assert isinstance(info.value, OpscanError) and info.value.path.endswith("libraries.yaml")
    return info.value


def test_a_good_file_loads(tmp_path):
    book = _load(tmp_path, GOOD)
    lib = book.library("flash_attn")
    assert lib is not None and (lib.hours.low, lib.hours.likely, lib.hours.high) == (1, 2, 4)
    assert book.library("xformers") is None
    assert book.family("OPS302").id == "triton" and book.family("OPS301") is None


def test_duplicate_key_names_its_line(tmp_path):
    err = _error(tmp_path, GOOD.replace("    size: small\n", "    size: small\n    size: large\n"))
    assert err.line == 7 and "duplicate key 'size'" in err.message


def test_unknown_key_names_its_line(tmp_path):
    err = _error(tmp_path, GOOD.replace("    call_site_minutes: 30\n", "    call_site_minutes: 30\n    effort: 3\n"))
    assert err.line == 11 and "unknown key 'effort'" in err.message


@pytest.mark.parametrize("change,line", [
    (("hours: {low: 1, likely: 2, high: 4}", "hours: {low: 3, likely: 2, high: 4}"), 9),   # low > likely
    (("hours: {low: 1, likely: 2, high: 4}", "hours: {low: 1, likely: 2}"), 9),           # missing high
    (("size: small", "size: tiny"), 6),                                                     # not in SIZES
    (("[https://github.com/Dao-AILab/flash-attention]", "[../shared/facts.yaml]"), 11),    # not a public URL
    (("rules: [OPS302]", "rules: []"), 14),
])
def test_bad_values_are_errors_with_their_line(tmp_path, change, line):
    err = _error(tmp_path, GOOD.replace(*change))
    assert err.line == line


def test_a_package_in_two_entries_is_an_error(tmp_path):
    second = GOOD.split("kernel_families:")[0].split("libraries:\n")[1].replace("id: flash_attn", "id: other")
    text = GOOD.replace("kernel_families:", second + "kernel_families:")
    err = _error(tmp_path, text)
    assert "already covered by flash_attn" in err.message and err.line == 13


def test_the_shipped_catalog_loads_and_is_inside_the_package():
    book = shipped()
    assert CATALOG_PATH.parent.name == "plan" and CATALOG_PATH.parent.parent.name == "opscan"  # ships in the wheel
    assert len(book.libraries) >= 25
    for lib in book.libraries:
        assert lib.size in SIZES and lib.sources and all(u.startswith("https://") for u in lib.sources)
        assert "shared" not in " ".join(lib.sources)


def _library_packages() -> set[str]:
    rule = next(r for r in load_rules() if r.id == "OPS401")
    (matcher,) = rule.match
    patterns = dict(matcher.options)["import"]
    return {pattern.split(".")[0].rstrip("*") for pattern in patterns}


def test_catalog_covers_the_libraries_the_scan_reports():
    book = shipped()
    packages = _library_packages()
    covered = {p for lib in book.libraries for p in lib.packages}
    assert covered == packages   # every library OPS401 reports has an entry, and no entry is dead data
    for key in ("flash_attn", "xformers", "apex", "bitsandbytes", "transformer_engine", "deepspeed", "triton",
                "mamba_ssm", "liger_kernel"):
        assert book.library(key) is not None, key


def test_every_kernel_rule_has_a_family():
    book = shipped()
    kernel_rules = {r.id for r in load_rules() if r.task == "kernel"}
    assert kernel_rules and all(book.family(rule) is not None for rule in kernel_rules)


def test_api_parts_are_matched_by_name():
    apex = shipped().library("apex")
    assert apex.part_for("apex.optimizers.FusedAdam").names[0] == "apex.optimizers*"
    assert apex.part_for("apex.normalization.FusedRMSNorm").size == "small"
    assert apex.part_for("apex.something_else") is None
    assert fnmatch.fnmatchcase("flash_attn.flash_attn_varlen_func", "flash_attn.*varlen*")
