"""`opscan REPO` traces the repository's whole model, not its parts, losses or activations, and a
variant's constructor gets the arguments it passes on to its base (NOTE [parts below models] in
opscan/targets/recipes.py, NOTE [forwarded arguments] in opscan/targets/construct.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from opscan.targets.discovery import candidates

pytest.importorskip("torch")

REPOS = Path(__file__).resolve().parent / "repos"
TRAIN = {"forward", "backward", "optimizer"}



@pytest.mark.slow
def test_the_model_is_tried_before_its_parts_losses_and_activations(repo_report):
    # Tower composes FeedForward (a CapWords function of its file) and layers/mlp.py's Mlp; Swish
    # holds no parameter, PairLoss is a loss; each is longer than Tower, which once put them first
    order = candidates(REPOS / "parts", construct=True).traced
    assert order == ("repo:partlib/tower.py:Tower", "repo:partlib/layers/mlp.py:Mlp",
                     "repo:partlib/activations.py:Swish", "repo:partlib/losses.py:PairLoss")
    report = repo_report(REPOS / "parts")
    traced = [t["target"] for t in report["traces"]]
    assert traced[0] == "repo:partlib/tower.py:Tower" and report["traces"][0]["complete"]
    assert not {"repo:partlib/tower.py:FeedForward", "repo:partlib/activations.py:Swish",
                "repo:partlib/losses.py:PairLoss"} & set(traced)
    assert TRAIN <= {p for op in report["ops"] for p in op["phases"]}
    assert report["notes"][0] == "traced with no configuration: repo:partlib/tower.py:Tower: Tower(depth, dim, " \
                                 "num_tokens): small values chosen by parameter name"


@pytest.mark.slow
def test_a_variant_ranks_below_its_base_and_gets_the_arguments_it_passes_on(repo_report):
    # SuperResModel(UNetModel).__init__(self, in_channels, *args, **kwargs): the base's required
    # model_channels, out_channels, num_res_blocks, attention_resolutions are filled by name too
    report = repo_report(REPOS / "variant")
    assert [t["target"] for t in report["traces"]] == ["repo:unetlib/unet.py:UNetModel",
                                                       "repo:unetlib/superres.py:SuperResModel"]
    assert all(t["complete"] for t in report["traces"])
    assert "traced with no configuration: repo:unetlib/superres.py:SuperResModel: SuperResModel(in_channels): " \
           "small values chosen by parameter name; the required arguments it passes on to UNetModel filled by " \
           "name too" in report["notes"]
    assert not [n for n in report["notes"] if n.startswith("not built")]
    ops = {op["op"] for op in report["ops"]}
    assert "aten::_softmax" in ops   # attention at the rates of attention_resolutions, a tuple by its name


def test_collections_and_block_counts_get_small_values_by_name():
    from opscan.targets.recipes import named_value

    assert named_value("attention_resolutions") == (16, 8)
    assert named_value("dim_mults") == (1, 2) and named_value("dilation_rates") == (1, 2)
    assert named_value("num_res_blocks") == 2
    assert named_value("resolution") == 32   # the single name keeps its value


def test_kwargs_passed_on_to_a_built_body_are_filled_by_name(monkeypatch):
    # UNetHolder(*, in_channels, **kwargs) builds UNetModel(in_channels, out_channels=..., **kwargs):
    # the body's other required arguments are filled; those the call gives are not
    import sys

    monkeypatch.syspath_prepend(str(REPOS / "variant"))
    try:
        from unetlib import superres
        from unetlib.examples import wrapped

        from opscan.targets import construct

        kwargs, how = construct.arguments(wrapped.UNetHolder, wrapped, None)
        assert kwargs == {"in_channels": 3, "model_channels": 3, "num_res_blocks": 2,
                          "attention_resolutions": (16, 8)}
        assert how == ["in_channels=3", "model_channels=3", "num_res_blocks=2", "attention_resolutions=(16, 8)"]
        assert wrapped.UNetHolder(**kwargs).unet.blocks
        kwargs, _ = construct.arguments(superres.SuperResModel, superres, None)
        assert set(kwargs) == {"in_channels", "model_channels", "out_channels", "num_res_blocks",
                               "attention_resolutions"}
    finally:
        for name in [n for n in sys.modules if n.split(".")[0] == "unetlib"]:
            del sys.modules[name]


def test_the_layer_stack_skips_a_module_list_holding_none():
    # nn.ModuleList accepts None (perceiver-pytorch keeps optional layers so); it is no layer stack
    from torch import nn

    from opscan.trace.tracer import layer_stack

    model = nn.Module()
    model.optional = nn.ModuleList([nn.Linear(2, 2), None])
    model.layers = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2)])
    _, count = layer_stack(model)
    assert count == 2


SCRIPT_AT_MODULE_LEVEL = """\
import torch
from torch import nn
try:
    import numpy as np
except ImportError:
    np = None
SIZES = dict(width=4)
WIDTH = SIZES["width"]


class Policy(nn.Module):
    def __init__(self, channels, actions):
        super().__init__()
        self.net = nn.Linear(channels, actions)

    def forward(self, x):
        return self.net(x)


Policy.default_width = WIDTH
ARRAYS = [np]
env = make_env()
env.max_steps = 500
agent = Agent(env)
agent.env = env
"""


def test_a_script_run_as_its_definitions_drops_assignments_reading_what_was_left_out():
    import ast

    from opscan.targets.recipes import definitions

    kept = definitions(ast.parse(SCRIPT_AT_MODULE_LEVEL))
    namespace: dict = {}
    exec(compile(kept, "script.py", "exec"), namespace)   # noqa: S102 - a test script: no NameError
    assert namespace["WIDTH"] == 4 and namespace["Policy"].default_width == 4 and "ARRAYS" in namespace
    assert "env" not in namespace and "agent" not in namespace
