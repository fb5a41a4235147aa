"""`opscan REPO` with no configuration: registries of model functions, and setup calls learned from the
repository's own call sites (issue 24, point 1; docs/repositories.md).

Fixture repositories under tests/targets/repos/ (tiny; traced in the contained child as a user's run is):
- modelfns: a DiT-style class built only by size functions gathered in a dict registry;
- registered: timm-style model functions registered by a decorator, building through a helper;
- setupcall: a gpt-fast-style KV-cache model whose forward asserts `setup_caches` ran (generate.py
  calls it, then `model(x, input_pos)`), and a litgpt-style model whose cache is optional.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from opscan.targets.discovery import candidates
from opscan.targets import call_sites
from opscan.targets.registries import variant_rank

pytest.importorskip("torch")

REPOS = Path(__file__).resolve().parent / "repos"
TRAIN = {"forward", "loss", "backward", "optimizer"}




def _ops(report: dict) -> set[str]:
    return {op["op"] for op in report["ops"]}


@pytest.mark.slow
def test_registry_of_model_functions_builds_the_smallest_variant(repo_report, report_phases):
    report = repo_report(REPOS / "modelfns")
    assert [t["target"] for t in report["traces"]] == ["repo:tinydit/models.py:TinyDiT_S_2"]
    assert report["traces"][0]["complete"] and TRAIN <= report_phases(report)
    # forward(x, t, y): latent images sized by the patch embedder's img_size (16, not the 64 default:
    # its assert would stop the step), timesteps, class labels through the label embedding
    assert {"aten::convolution", "aten::embedding", "aten::cos"} <= _ops(report)
    assert "traced with no configuration: repo:tinydit/models.py:TinyDiT_S_2: TinyDiT_S_2(): the smallest variant " \
           "of the registry TinyDiT_models['TinyDiT-S/2'] of 3 model functions (repeated blocks cut to 2)" \
           in report["notes"]
    # TinyDiT itself is built by those functions: no class recipe for it
    assert not any(c["target"].endswith(":TinyDiT") for c in report["discovery"]["candidates"])


@pytest.mark.slow
def test_decorator_registered_model_functions(repo_report, report_phases):
    report = repo_report(REPOS / "registered")
    assert report["traces"][0]["target"] == "repo:zoo.py:mixer_tiny_16"   # pretrained=False: no weights asked
    assert report["traces"][0]["complete"] and TRAIN <= report_phases(report)
    assert "traced with no configuration: repo:zoo.py:mixer_tiny_16: mixer_tiny_16(pretrained=False): the smallest " \
           "of 3 model functions registered by @register_model (repeated blocks cut to 2)" in report["notes"]


def test_variant_order():
    names = ["DiT-XL/2", "DiT-L/4", "DiT-B/8", "DiT-S/8", "DiT-S/2", "vit_base_patch16", "vit_tiny_patch16",
             "llama-7b", "pythia-14m", "debug", "model"]
    assert sorted(names, key=variant_rank) == ["pythia-14m", "llama-7b", "debug", "vit_tiny_patch16", "DiT-S/2",
                                               "DiT-S/8", "DiT-B/8", "vit_base_patch16", "model", "DiT-L/4",
                                               "DiT-XL/2"]


@pytest.mark.slow
def test_setup_call_from_the_repository_is_made_before_the_forward(repo_report, report_phases):
    report = repo_report(REPOS / "setupcall")
    traces = {t["target"]: t for t in report["traces"]}
    cached = traces["repo:model.py:Transformer"]
    # without setup_caches the forward asserts before any op; with it, a full training step
    assert cached["complete"] and TRAIN <= report_phases(report)
    assert {"aten::index_put_", "aten::embedding"} <= _ops(report)     # the KV-cache update, the token ids
    assert cached["retried"] == "setup call .setup_caches(max_batch_size=2, max_seq_length=32) from generate.py:15; " \
                                "input_pos passed as generate.py:10 passes it; tensors it set kept as buffers " \
                                "(causal_mask)"
    note = next(n for n in report["notes"] if n.startswith("traced with no configuration: repo:model.py:Transformer"))
    assert note.endswith("if its forward fails without it: setup call .setup_caches(max_batch_size, max_seq_length) "
                         "from generate.py:15; inputs as (x, input_pos) at generate.py:10")
    # a model whose forward runs without its cache is traced as it is: no setup made
    assert traces["repo:lm.py:CachedLM"]["complete"] and traces["repo:lm.py:CachedLM"]["retried"] == ""


def test_call_sites_are_read_statically():
    usage = call_sites.usage(REPOS / "setupcall", "model.py", "Transformer")
    assert usage.setups == (call_sites.Setup("setup_caches", ("max_batch_size", "max_seq_length"), 0,
                                             "generate.py:15"),)
    assert usage.call == call_sites.Call(("x", "input_pos"), (), "generate.py:10")
    assert dict(usage.kinds) == {"input_pos": "arange"}
    # set_cache sets what the forward reads (None in __init__): a setup method; the others are not
    assert call_sites.usage(REPOS / "setupcall", "lm.py", "CachedLM").setups[0].method == "set_cache"
    # discovery imports nothing: the fixture's generate.py (which loads a checkpoint in __main__) never ran
    found = candidates(REPOS / "setupcall", construct=True)
    assert found.traced[:2] == ("repo:model.py:Transformer", "repo:lm.py:CachedLM")


def test_setup_calls_follow_the_import_of_the_class_file(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    model = (REPOS / "setupcall" / "model.py").read_text(encoding="utf-8")
    (tmp_path / "a" / "model.py").write_text(model, encoding="utf-8")
    (tmp_path / "b" / "model.py").write_text(model, encoding="utf-8")
    (tmp_path / "b" / "run.py").write_text(
        "from model import Transformer as T\n\ndef go(m: T, x, p):\n    m.setup_caches(4, 8)\n    return m(x, p)\n",
        encoding="utf-8")
    # b/run.py imports its sibling b/model.py, not a/model.py
    assert call_sites.usage(tmp_path, "a/model.py", "Transformer") is None
    usage = call_sites.usage(tmp_path, "b/model.py", "Transformer")
    assert usage.setups == (call_sites.Setup("setup_caches", (), 2, "b/run.py:4"),)
    assert usage.call.args == ("x", "p")
