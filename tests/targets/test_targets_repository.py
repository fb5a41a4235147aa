"""`opscan REPO` with no configuration builds the repository's own model (issue 24, point 1).

The fixture repositories under tests/targets/repos/ are tiny; each run traces in the contained child
as a user's run does. Asserted: what the JSON report shows (traced ops with their phases, how the
model was found, the one-line reason of each candidate that could not be built) and what
`opscan init` writes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from opscan.config import load_config
from opscan.targets.discovery import candidates

pytest.importorskip("torch")

REPOS = Path(__file__).resolve().parent / "repos"
TRAIN = {"forward", "backward", "optimizer"}




@pytest.mark.slow
def test_gpt_with_a_defaults_dataclass_is_traced_in_train_mode(repo_report, report_phases):
    report = repo_report(REPOS / "gpt")
    assert [t["target"] for t in report["traces"]] == ["repo:model.py:GPT"]
    assert report["traces"][0]["complete"] and report["traces"][0]["mode"] == "train"
    assert TRAIN <= report_phases(report)
    assert "aten::embedding" in {op["op"] for op in report["ops"]}
    # the command built GPT(GPTConfig()) before it stopped: the model path builds that class first, with the
    # config's values as the command had them (NOTE [the model the command built])
    assert "traced with no configuration: repo:model.py:GPT: the model `python train.py` built before it " \
           "stopped, with the arguments it was built with" in report["notes"]
    assert "GPT(config): arguments as the training script builds it, read from the run of its training command" \
        in report["traces"][0]["retried"]
    # train.py trains at import: run first as the training command (contained), it stops where the
    # missing train.bin, loaded with torch.load, is used as a tensor; the model path follows, said so
    assert any(n.startswith("training command `python train.py` was not a training step") for n in report["notes"])
    assert report["verdict"]["step"]["kind"] == "stand-in"


@pytest.mark.slow
def test_registry_variant_and_hubconf_entry(repo_report, report_phases):
    registry = repo_report(REPOS / "registry")
    assert [t["target"] for t in registry["traces"]] == ["repo:nets.py:create_model"]
    assert TRAIN <= report_phases(registry)
    assert any("a variant name from the registry VARIANTS" in n for n in registry["notes"])
    hub = repo_report(REPOS / "hub")
    assert hub["traces"][0]["target"] == "repo:hubconf.py:convnet_small"   # pretrained=False: nothing fetched
    assert TRAIN <= report_phases(hub) and "aten::convolution" in {op["op"] for op in hub["ops"]}
    assert any("torch.hub entry point convnet_small(pretrained=False)" in n for n in hub["notes"])


@pytest.mark.slow
def test_readme_example_is_run_to_its_model_call_and_unbuildable_classes_say_why(repo_report, report_phases):
    report = repo_report(REPOS / "readme")
    assert [t["target"] for t in report["traces"]] == ["repo:README.md#1"]
    assert TRAIN <= report_phases(report)
    assert any(n.startswith("traced with no configuration: repo:README.md#1: the fenced example 1 of README.md")
               for n in report["notes"])
    # the class alone cannot be built (a tokenizer name has no default): one line, why
    assert "not built: repo:tinyattn/net.py:AttnNet: cannot choose a value for the required argument " \
           "'tokenizer_name'" in report["notes"]


@pytest.mark.slow
def test_script_that_trains_at_import_is_built_from_its_definitions(repo_report, report_phases):
    report = repo_report(REPOS / "script")
    assert [t["target"] for t in report["traces"]] == ["repo:train.py:CharModel"]
    assert TRAIN <= report_phases(report)
    assert any("(definitions of train.py only: it runs code at import)" in n for n in report["notes"])


def test_discovery_is_static_and_ranked():
    found = candidates(REPOS / "readme", construct=True)
    assert found.traced == ("repo:README.md#1", "repo:tinyattn/net.py:AttnNet")
    script = candidates(REPOS / "script", construct=True)
    kinds = {c.target: c.kind for c in script.candidates}
    assert kinds["repo:train.py:CharModel"] == "repo-class"
    assert "train.py:31" in {c.target for c in script.candidates if c.kind == "inline"}


@pytest.mark.slow
def test_init_writes_the_model_that_was_built(tmp_path, run_cli, repo_report, report_phases):
    project = tmp_path / "gpt"
    shutil.copytree(REPOS / "gpt", project)
    code, out, err = run_cli("init", str(project))
    assert code == 0, err
    assert [m.target for m in load_config(project).models] == ["repo:model.py:GPT"]
    assert "# GPT(GPTConfig()): a dataclass with a default for every field" in out
    assert "opscan init" not in err              # the advice no longer loops back to init itself
    report = repo_report(project)           # the written config traces the same model
    assert [t["target"] for t in report["traces"]] == ["repo:model.py:GPT"] and TRAIN <= report_phases(report)


# --- patterns of larger repositories (docs/repositories.md) -------------------------------------------

def _traced(report: dict) -> list[str]:
    return [t["target"] for t in report["traces"] if t["complete"]]


@pytest.mark.slow
def test_layers_of_raw_parameters_are_sized_from_what_they_declare(repo_report, report_phases):
    report = repo_report(REPOS / "siren")   # F.linear on raw Parameters: no nn.Linear to size from
    assert _traced(report) == ["repo:sirenlib/siren.py:SineNet"]
    assert TRAIN <= report_phases(report)
    assert {"aten::sin", "aten::linear"} <= {op["op"] for op in report["ops"]}


@pytest.mark.slow
def test_wrapper_is_built_around_its_model_argument_with_the_inputs_its_forward_needs(repo_report, report_phases):
    report = repo_report(REPOS / "wrapper")
    # TransformerWrapper is built inside Seq2Seq, yet it is the model: it takes AttentionLayers
    assert _traced(report) == ["repo:layers.py:TransformerWrapper"]
    assert TRAIN <= report_phases(report)
    assert any(n.startswith("traced with no configuration: repo:layers.py:TransformerWrapper: ")
               and "a wrapper: its model argument built from its class" in n for n in report["notes"])
    # its forward fails on image_tokens=None: the optional input was supplied, so the mean ran
    assert "aten::mean.dim" in {op["op"] for op in report["ops"]}


@pytest.mark.slow
def test_config_from_name_takes_the_smallest_registry_variant(repo_report, report_phases):
    # Config() (n_head 7 for n_embd 4096) and the 7b variant fail the model's assert; tinylm-1m builds
    report = repo_report(REPOS / "registryname")
    assert _traced(report) == ["repo:tinylm/model.py:GPT"]
    assert TRAIN <= report_phases(report)
    assert any("GPT(Config): a config built from its class (a registry variant by from_name" in n
               for n in report["notes"])


@pytest.mark.slow
def test_builder_function_with_no_arguments_smallest_size_first(repo_report, report_phases):
    # tiny_70b() fails (96 % 5 heads); tiny_1m() is tried first as the smaller size its name spells
    report = repo_report(REPOS / "builders")
    assert _traced(report)[0] == "repo:zoo/tiny/_model_builders.py:tiny_1m"
    assert TRAIN <= report_phases(report)
    assert any("tiny_1m() -> TransformerDecoder: a builder with no required argument" in n for n in report["notes"])
    assert "not built: repo:zoo/modules.py:TransformerDecoder: cannot choose a value for the required argument " \
           "'tok_embeddings'" in report["notes"]


def test_builders_rank_by_the_size_their_name_spells():
    found = candidates(REPOS / "builders", construct=True)
    builders = [c.target for c in found.candidates if c.path == "zoo/tiny/_model_builders.py"]
    assert builders == ["repo:zoo/tiny/_model_builders.py:tiny_1m", "repo:zoo/tiny/_model_builders.py:tiny_70b"]
    assert "repo:zoo/tiny/_model_builders.py:tiny_70b" not in found.traced   # one per file


@pytest.mark.slow
def test_defaults_from_the_model_class_own_get_default_config(repo_report, report_phases):
    report = repo_report(REPOS / "owndefaults")
    assert [t["target"] for t in report["traces"]] == ["repo:tinygpt/model.py:GPT"]
    assert report["traces"][0]["complete"] and TRAIN <= report_phases(report)
    assert "aten::embedding" in {op["op"] for op in report["ops"]}
    assert "traced with no configuration: repo:tinygpt/model.py:GPT: GPT(GPT.get_default_config()): the model's " \
           "own default config, unset sizes filled by name" in report["notes"]


@pytest.mark.slow
def test_a_constraint_between_sizes_is_retried_with_other_small_values(repo_report, report_phases):
    report = repo_report(REPOS / "constraint")
    assert [t["target"] for t in report["traces"]] == ["repo:tntlib/tnt.py:TNT"]
    assert report["traces"][0]["complete"] and TRAIN <= report_phases(report)
    assert "aten::convolution" in {op["op"] for op in report["ops"]}
    assert not any(n.startswith("not built: repo:tntlib/tnt.py:TNT") for n in report["notes"])


@pytest.mark.slow
def test_model_with_inherited_constructor_built_from_a_registry_of_config_functions(repo_report, report_phases):
    # TinyModel(Decoder) in another file than its base; its config from `tiny_configs` (functions
    # returning TinyModel.Config, "debugmodel" first, attn_backend from model_registry's default);
    # the base module imports triton (absent here): stood in, never called
    report = repo_report(REPOS / "titanlike")
    assert report["traces"][0]["target"] == "repo:tinytitan/models/tiny/model.py:TinyModel"
    assert report["traces"][0]["complete"] and TRAIN <= report_phases(report)
    assert "traced with no configuration: repo:tinytitan/models/tiny/model.py:TinyModel: TinyModel(config): the " \
           "constructor of Decoder, its config built from the class (a registry of named variants, its defaults, " \
           "or fields by name)" in report["notes"]
    # a `build_*` helper that builds no model is tried after the model classes, not first
    # (and, base.py's BaseModel holding no parameter, its Decoder is the second model traced before it)
    order = candidates(REPOS / "titanlike", construct=True).traced
    assert order == ("repo:tinytitan/models/tiny/model.py:TinyModel", "repo:tinytitan/base.py:Decoder",
                     "tinytitan/metrics.py:build_device_memory_monitor")


def test_registry_config_takes_the_debug_variant_and_cuts_layer_lists(monkeypatch):
    import sys
    monkeypatch.syspath_prepend(str(REPOS / "titanlike"))
    sys.modules.pop("triton", None)
    try:
        from opscan.pipeline.phases import cuda_only_packages
        from opscan.targets import absent, construct, repository
        with absent.gpu_only(cuda_only_packages()):   # what the parent passes the child
            repository.load(REPOS / "titanlike" / "tinytitan/models/tiny/model.py", REPOS / "titanlike")
        model_module = sys.modules["tinytitan.models.tiny.model"]
        config, words = construct.registry_config(model_module.TinyModel.Config)
        assert words == "TinyModel.Config from the registry tiny_configs['debugmodel']"
        assert config.dim == 32 and len(config.layers) == 2   # 4 layer configs cut to 2
    finally:
        for name in [n for n in sys.modules if n.split(".")[0] in ("tinytitan", "triton")]:
            del sys.modules[name]


def test_gpu_only_libraries_come_from_the_catalog_in_the_childs_options():
    # one list: the catalog's CUDA-only packages (opscan/plan/libraries.yaml), passed to the child
    from opscan.config import ModelConfig
    from opscan.pipeline.phases import cuda_only_packages, tracer_options
    from opscan.plan.libraries import shipped

    packages = cuda_only_packages()
    assert {"triton", "fla", "flash_attn", "xformers", "apex", "mamba_ssm"} <= set(packages)
    assert set(packages) == {p for lib in shipped().libraries for p in lib.packages}
    assert tracer_options(ModelConfig(target="repo:model.py:GPT"), REPOS, None)["gpu_only"] == packages
    assert "gpu_only" not in tracer_options(ModelConfig(target="model.py:build"), REPOS, None)


@pytest.mark.slow
def test_repository_tests_build_the_model_opscan_cannot_guess(repo_report, report_phases):
    # tabnet's Net(categories=(3, 4), num_continuous=2) has no value opscan can name; its tests build it
    report = repo_report(REPOS / "tested")
    assert [t["target"] for t in report["traces"]] == ["repo:tests/test_net.py::test_forward_shape"]
    assert report["traces"][0]["complete"] and report["traces"][0]["mode"] == "train"
    assert TRAIN <= report_phases(report)
    ops = {op["op"] for op in report["ops"]}
    assert "aten::gelu" in ops and "aten::relu" not in ops   # the first parametrize set: ("gelu", 8)
    notes = report["notes"]
    assert "traced with no configuration: repo:tests/test_net.py::test_forward_shape: the test " \
           "tests/test_net.py::test_forward_shape (line 7), stopped at its model call; its first parameter set" in notes
    # a test that fails before its model call (it downloads weights: the contained child has no
    # network, opscan/containment/), in one line
    assert any(n.startswith("not built: repo:tests/test_pretrained.py::test_pretrained_matches: the test failed "
                            "before its model call: URLError:") for n in notes)
    # a fixture of conftest.py (never run): skipped, in one line
    assert "not built: repo:tests/test_config.py::test_from_config: skipped: it takes the fixture 'net_config', " \
           "which opscan cannot give (conftest.py is not run; fixtures: tmp_path, monkeypatch, those of its own " \
           "file)" in notes
    # the guessed construction comes after the tests, and says why it cannot be built
    assert notes.index("not built: repo:tabnet/net.py:Net: cannot choose a value for the required argument "
                       "'categories'") > notes.index(next(n for n in notes if "test_pretrained.py" in n))
    assert not (REPOS / "tested" / "tabnet.pt").exists()   # the test ran in a temporary folder


def test_repository_test_discovery_is_static_one_per_file_and_capped(tmp_path):
    from opscan.targets.repo_tests import MAX_TEST_TARGETS

    found = candidates(REPOS / "tested", construct=True)
    # a test that fetches weights cannot reach its model call (the network is refused): after the others
    assert found.traced == ("repo:tests/test_net.py::test_forward_shape", "repo:tests/test_config.py::test_from_config",
                            "repo:tests/test_pretrained.py::test_pretrained_matches", "repo:tabnet/net.py:Net")
    project = tmp_path / "many"
    shutil.copytree(REPOS / "tested", project)
    for index in range(MAX_TEST_TARGETS + 2):
        shutil.copy(project / "tests" / "test_net.py", project / "tests" / f"test_more_{index}.py")
    tests = [t for t in candidates(project, construct=True).traced if "::" in t]
    assert len(tests) == MAX_TEST_TARGETS and len({t.split("::")[0] for t in tests}) == MAX_TEST_TARGETS


def test_repository_test_module_needing_missing_pytest_says_so(monkeypatch):
    import sys

    from opscan.errors import TargetError
    from opscan.targets.repository import build_repo

    monkeypatch.setitem(sys.modules, "pytest", None)   # as if pytest were not installed
    monkeypatch.setattr(sys, "path", list(sys.path))
    with pytest.raises(TargetError) as info:
        build_repo("repo:tests/test_net.py::test_forward_shape", batch=None, seq_len=None,
                   project_root=str(REPOS / "tested"))
    assert str(info.value) == "repo:tests/test_net.py::test_forward_shape: its module imports pytest, which is " \
                              "not installed here"
    for name in [n for n in sys.modules if n.split(".")[0] == "tabnet"]:
        monkeypatch.delitem(sys.modules, name)


_TESTED_ELSEWHERE = '''
import unittest

import pytest
import torch

from tabnet import Net


@pytest.fixture
def model(tmp_path):
    (tmp_path / "seen").write_text("x")
    yield Net(categories=(5,), num_continuous=3)


def test_with_own_fixture(model, tmp_path):
    assert (tmp_path / "seen").exists()
    model(torch.randint(0, 5, (4, 1)), torch.randn(4, 3))


class TestNet(unittest.TestCase):
    def setUp(self):
        self.net = Net(categories=(2, 2, 2), num_continuous=1)

    def test_sample(self):
        self.net.eval()
        self.net(torch.zeros(3, 3, dtype=torch.long), torch.zeros(3, 1))
'''


def test_repository_test_fixtures_of_its_file_and_unittest_classes(tmp_path, monkeypatch):
    import sys

    from opscan.targets import repo_tests
    from opscan.targets.repository import build_repo

    shutil.copytree(REPOS / "tested" / "tabnet", tmp_path / "tabnet")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "more_test.py").write_text(_TESTED_ELSEWHERE)
    import ast
    tree = ast.parse(_TESTED_ELSEWHERE)
    (found,) = repo_tests.test_recipes(tree, "tests/more_test.py", frozenset({"Net"}))
    assert found.target == "repo:tests/more_test.py::test_with_own_fixture"   # its fixture builds Net
    monkeypatch.setattr(sys, "path", list(sys.path))
    try:
        built = build_repo(found.target, batch=None, seq_len=None, project_root=str(tmp_path))
        assert [e.num_embeddings for e in built.model.embeds] == [5] and built.args[1].shape == (4, 3)
        built = build_repo("repo:tests/more_test.py::TestNet::test_sample", batch=None, seq_len=None,
                           project_root=str(tmp_path))
        assert [e.num_embeddings for e in built.model.embeds] == [2, 2, 2]   # built in setUp
    finally:
        for name in [n for n in sys.modules if n.split(".")[0] == "tabnet"]:
            del sys.modules[name]


def test_repository_test_selection_reads_how_the_model_is_run():
    import ast

    from opscan.targets.repo_tests import test_recipes

    def picked(code: str) -> list[str]:
        return [r.target for r in test_recipes(ast.parse(code), "test_x.py", frozenset({"GPT"}))]

    # a method that runs the model counts; plumbing (eval, to, load_state_dict) does not
    assert picked("def test_a():\n    m = GPT(cfg)\n    m.eval()\n    m.generate(x)\n") == ["repo:test_x.py::test_a"]
    assert picked("def test_a():\n    m = GPT(cfg)\n    m.eval()\n    m.load_state_dict(sd)\n") == []
    # a class method building the repository's class, and a helper of the file that builds one
    assert picked("def test_b():\n    m = GPT.from_pretrained('gpt2')\n    m(x)\n") == ["repo:test_x.py::test_b"]
    assert picked("def make():\n    return GPT(cfg)\n\ndef test_c():\n    m = make()\n    m(x)\n") == \
        ["repo:test_x.py::test_c"]
    # a unittest.TestCase of any name, its model built in setUp
    code = "import unittest\n\nclass ImportCheck(unittest.TestCase):\n    def setUp(self):\n" \
           "        self.m = GPT(cfg)\n\n    def test_f(self):\n        self.m(x)\n"
    assert picked(code) == ["repo:test_x.py::ImportCheck::test_f"]
    # nothing of the repository built: not a test of its model
    assert picked("import torch\n\ndef test_d():\n    m = torch.nn.Linear(2, 2)\n    m(x)\n") == []
    # an unreadable parametrize set is a one-line reason in the child, the test still found
    code = "import pytest\n\n@pytest.mark.parametrize('n', SIZES)\ndef test_e(n):\n    GPT(n)(x)\n"
    assert picked(code) == ["repo:test_x.py::test_e"]
