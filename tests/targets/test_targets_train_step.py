"""The training step a project's script constructs, read statically and traced (issue 42, part B).

`opscan REPO` with no configuration traces its model with the loss, optimizer (class and
fused/foreach), AMP and clipping the training script builds, and records each part with the line
it came from (`traces[].step` in JSON); with no training script, the step is opscan's stand-in and
says so. Fixture: tests/targets/repos/scriptstep (model.py + a train.py that trains at import with
`AdamW(fused=True)`, `F.cross_entropy`, bf16 autocast and `clip_grad_norm_`).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from opscan.index import ProjectIndex
from opscan.index.resolver import Imports
from opscan.targets import train_scripts
from opscan.targets.train_step import read_step

REPOS = Path(__file__).resolve().parent / "repos"


def _step(source: str, rel: str = "train.py"):
    tree = ast.parse(source)
    imports = Imports(rel)
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.add(node)
    return read_step(tree, rel, imports)


def test_the_fixture_script_gives_every_part_with_its_line():
    index = ProjectIndex(REPOS / "scriptstep")
    found = train_scripts.scripts(index)
    assert [s.rel for s in found] == ["train.py"]
    plan = train_scripts.plans(index, ("repo:model.py:CharLM",), found)["repo:model.py:CharLM"]
    got = {p.part: (p.name, p.detail, p.source) for p in plan.parts}
    assert got == {"loss": ("cross_entropy", "", "train.py:23"), "optimizer": ("AdamW", "fused", "train.py:17"),
                   "amp": ("bfloat16", "", "train.py:21"), "clip": ("clip_grad_norm_", "max_norm=1.0", "train.py:25")}


def test_only_names_bound_by_torch_imports_count_and_non_literals_are_said():
    step = _step("import torch\nfrom torch import nn, optim\nfrom mylib import cross_entropy\n"
                 "crit = nn.CrossEntropyLoss(label_smoothing=0.1)\n"
                 "opt = optim.SGD(params, lr=0.1, foreach=use_foreach)\n"
                 "def step(x, y):\n    loss = cross_entropy(x, y)\n    loss.backward()\n")
    assert step.part("loss").name == "cross_entropy" and step.part("loss").source == "train.py:4"   # nn's, not mylib's
    assert "label_smoothing=0.1" in step.part("loss").detail
    assert step.part("optimizer").name == "SGD" and "no literal" in step.part("optimizer").detail
    scaled = _step("import torch\nscaler = torch.cuda.amp.GradScaler()\nwith torch.cuda.amp.autocast():\n    pass\n")
    amp = scaled.part("amp")
    assert (amp.name, amp.detail) == ("float16", "autocast's default dtype on CUDA; GradScaler (its unscale and "
                                      "update ops are not traced)")
    assert _step("import torch\nx = 1\n").parts == ()


def test_the_loss_in_the_function_that_calls_backward_wins():
    step = _step("import torch.nn.functional as F\n"
                 "def evaluate(x, y):\n    return F.mse_loss(x, y)\n"
                 "def train(x, y):\n    loss = F.nll_loss(x, y)\n    loss.backward()\n")
    assert step.part("loss").name == "nll_loss" and step.part("loss").source == "train.py:5"


def test_a_training_script_ranks_the_model_it_builds_first(tmp_path):
    (tmp_path / "nets.py").write_text(
        "from torch import nn\n"
        "class BigBaselineTransformerModel(nn.Module):\n" + "    x = 1\n" * 60 +
        "    def __init__(self):\n        super().__init__()\n        self.l = nn.Linear(4, 4)\n"
        "    def forward(self, x):\n        return self.l(x)\n"
        "class Small(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.l = nn.Linear(4, 4)\n"
        "    def forward(self, x):\n        return self.l(x)\n", encoding="utf-8")
    (tmp_path / "train.py").write_text("import torch\nfrom nets import Small\nmodel = Small()\n"
                                       "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                                       "loss = model(torch.zeros(2, 4)).sum()\nloss.backward()\nopt.step()\n",
                                       encoding="utf-8")
    from opscan.targets.discovery import candidates

    found = candidates(tmp_path, construct=True)
    assert found.traced[0] == "repo:nets.py:Small"   # built by train.py, though the other reads more like a model
    note = next(c.note for c in found.candidates if c.target == "repo:nets.py:Small")
    assert note.endswith("the training script train.py builds it (line 3)")


def test_the_script_loss_applies_to_the_logits_the_model_returns():
    torch = pytest.importorskip("torch")
    from opscan.records import StepPart, TrainStep
    from opscan.trace.step import planned_loss

    def plan(name):
        return TrainStep("train.py", (StepPart("loss", name, "", "train.py:9"),))

    logits = torch.randn(2, 5, 7, requires_grad=True)
    loss, part = planned_loss(logits, None, plan("cross_entropy"))
    assert loss.dim() == 0 and part.applied and part.source == "train.py:9"
    seg = torch.randn(2, 3, 4, 4, requires_grad=True)   # (B, C, H, W): the class dimension is the second
    assert planned_loss(seg, None, plan("cross_entropy"))[0].dim() == 0
    assert planned_loss((logits, torch.zeros(2)), None, plan("mse_loss"))[0].dim() == 0
    unreduced = TrainStep("train.py", (StepPart("loss", "mse_loss", "reduction='none'", "train.py:9"),))
    loss, part = planned_loss(logits, None, unreduced)   # the script reduces it itself: .mean()
    assert loss.dim() == 0 and part.detail == "reduction='none'; then .mean()"
    own = (logits, (logits ** 2).mean())            # `logits, loss = model(x, y)`: the model's own loss
    loss, part = planned_loss(own, None, TrainStep("train.py", plan("cross_entropy").parts, "train.py:12"))
    assert loss is own[1] and part.source == "train.py:12" and "cross_entropy (train.py:9) not applied" in part.detail
    loss, part = planned_loss(logits, None, None)    # no script: opscan's stand-in, said so
    assert part.name == "sum of the outputs" and part.source == ""


@pytest.mark.slow
def test_the_project_answers_with_the_fused_kernel_and_the_loss_ops_of_its_script(repo_report, report_phases):
    report = repo_report(REPOS / "scriptstep")
    assert [t["target"] for t in report["traces"]] == ["repo:model.py:CharLM"]
    trace = report["traces"][0]
    assert trace["complete"]
    ops = {op["op"] for op in report["ops"]}
    assert {"aten::_fused_adamw_", "aten::nll_loss_forward", "aten::linalg_vector_norm"} <= ops
    assert not any(op.startswith("aten::_foreach_addcdiv") for op in ops)   # no foreach AdamW beside it
    step = trace["step"]
    assert step["script"] == "train.py" and step["own"]
    assert {p["part"]: (p["source"], p["applied"]) for p in step["parts"]} == {
        "loss": ("train.py:23", True), "optimizer": ("train.py:17", True), "amp": ("train.py:21", True),
        "clip": ("train.py:25", True)}
    assert "torch.bfloat16" in {d for op in report["ops"] for d in op["dtypes"]}   # under the script's autocast
    verdict_step = report["verdict"]["step"]   # still a stand-in (the script did not run), named by its parts
    assert verdict_step["kind"] == "stand-in" and "AdamW (fused) from train.py:17" in verdict_step["text"]


def test_a_model_no_script_builds_takes_the_root_training_scripts_step_or_none(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "demo.py").write_text(   # a demo deep in the package that trains its own model
        "import torch\nfrom torch import nn\nif __name__ == '__main__':\n    m = nn.Linear(2, 2)\n"
        "    opt = torch.optim.SGD(m.parameters(), lr=0.1)\n    m(torch.zeros(1, 2)).sum().backward()\n"
        "    opt.step()\n", encoding="utf-8")
    index = ProjectIndex(tmp_path)
    found = train_scripts.scripts(index)
    assert [s.rel for s in found] == ["pkg/demo.py"]
    assert train_scripts.plans(index, ("repo:pkg/net.py:Net",), found) == {}
    (tmp_path / "train.py").write_text((tmp_path / "pkg" / "demo.py").read_text(encoding="utf-8"), encoding="utf-8")
    index = ProjectIndex(tmp_path)
    plan = train_scripts.plans(index, ("repo:pkg/net.py:Net",), train_scripts.scripts(index))
    assert plan["repo:pkg/net.py:Net"].script == "train.py"


@pytest.mark.slow
def test_a_model_that_computes_its_loss_keeps_it_as_the_scripts_own(repo_report):
    report = repo_report(REPOS / "gpt")   # `logits, loss = model(x, y); loss.backward()` in train.py
    step = report["traces"][0]["step"]
    assert step["own"] and step["backward"] == "train.py:10"
    parts = {p["part"]: p for p in step["parts"]}
    assert parts["loss"]["source"] == "train.py:10" and parts["loss"]["name"].startswith("the model's own loss")
    assert (parts["optimizer"]["name"], parts["optimizer"]["source"]) == ("AdamW", "train.py:6")


@pytest.mark.slow
def test_with_no_training_script_the_step_is_the_stand_in_and_says_so(repo_report):
    report = repo_report(REPOS / "constraint")
    step = report["traces"][0]["step"]
    assert step["script"] == "" and not step["own"]
    parts = {p["part"]: p for p in step["parts"]}
    assert parts["loss"]["source"] == "" and parts["optimizer"]["source"] == ""
    assert (parts["optimizer"]["name"], parts["optimizer"]["detail"]) == ("AdamW", "foreach")
