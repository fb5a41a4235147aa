"""Ops belong to the step (issue 44): a library's import-time version check is no op of the model, a
known library's custom op is that library's question (never an NKI port), and every task's site is a
line the user can change, with the library's line as its cause (NOTE [ops of the step] in
opscan/trace/recorder.py, NOTE [library ops] in opscan/assess/library_ops.py, NOTE [sites the user
can change] in opscan/trace/sources.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from opscan.plan import build_tasks
from opscan.plan.grouping import KnownLibrary
from opscan.records import Coverage, ModelTrace, OpSource, OpUsage
from opscan.trace.run.configured import collate_line

# A stand-in for torchvision (the real one does not import beside torch 2.13 here): it registers its ops
# and, as torchvision/extension.py does, asks one of them at import.
FAKE_VISION = '''import torch

lib = torch.library.Library("torchvision", "DEF")
lib.define("_cuda_version() -> int")
lib.define("roi_like(Tensor x) -> Tensor")
lib.impl("_cuda_version", lambda: -1, "CompositeExplicitAutograd")
lib.impl("roi_like", lambda x: x * 2, "CPU")
torch.library.register_fake("torchvision::roi_like", lambda x: torch.empty_like(x), lib=lib)

if torch.ops.torchvision._cuda_version() == -1:    # the import-time version check
    pass
'''
TRAIN = '''import torch
from torch import nn

import torchvision  # noqa: F401


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return torch.ops.torchvision.roi_like(self.fc(x)).sum()


device = torch.accelerator.current_accelerator() or torch.device("cpu")
model = Net().to(device)
opt = torch.optim.AdamW(model.parameters())
for _ in range(3):
    loss = model(torch.ones(4, 8, device=device))
    loss.backward()
    opt.step()
    opt.zero_grad()
'''


def test_the_configuring_call_is_the_collate_fn_argument_or_its_assignment(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("from torch.utils.data import DataLoader\n"
                      "collator = make()\n"                                           # 2
                      "a = DataLoader(data, batch_size=4,\n"                          # 3
                      "               collate_fn=Collator(tok))\n"                    # 4
                      "b = DataLoader(data, collate_fn=collator)\n"                   # 5
                      "c = DataLoader(data)\n", encoding="utf-8")                     # 6
    assert collate_line(str(script), 3) == 4
    assert collate_line(str(script), 5) == 2
    assert collate_line(str(script), 6) == 6


def _usage(op: str, path: str, line: int, site: tuple[str, int] = ("", 0)) -> OpUsage:
    return OpUsage(op, 1, ("forward",), ("torch.float32",), (OpSource(path, line, "", *site),), custom=True)


def test_a_known_librarys_op_is_its_task_and_an_unknown_namespace_a_kernel():
    vision = _usage("torchvision::nms", "detect.py", 9)
    own = _usage("mylib::fused", "model.py", 4)
    trace = ModelTrace("m", "train", "neuron", (vision, own))
    coverage = (Coverage("torchvision::nms", "unknown"), Coverage("mylib::fused", "unknown"))
    known = {"torchvision::nms": KnownLibrary("torchvision", "torchvision 0.28 (torch 2.13)", "https://x")}
    tasks = {t.id: t for t in build_tasks((), (trace,), coverage, known=known)}
    assert set(tasks) == {"library:torchvision", "kernel:fused"}
    library = tasks["library:torchvision"]
    assert library.ops == ("torchvision::nms",) and not library.sized and library.effort_hours == 0
    assert "torchvision 0.28 (torch 2.13)" in library.action and "NKI" not in library.action


def test_a_task_site_is_the_projects_line_with_the_librarys_as_the_cause():
    usage = _usage("aten::sort", "transformers/x.py", 7, ("train.py", 12))
    trace = ModelTrace("m", "train", "neuron", (usage,))
    (task,) = build_tasks((), (trace,), (Coverage("aten::sort", "unknown"),))
    (site,) = task.sites
    assert (site.path, site.line, site.cause) == ("train.py", 12, "transformers/x.py:7")


def test_the_scan_gives_a_known_librarys_op_call_to_its_library(run_cli, tmp_path):
    (tmp_path / "m.py").write_text("import torch\nkeep = torch.ops.torchvision.nms(b, s, 0.5)\n"
                                   "y = torch.ops.mylib.fused_gelu(x)\n", encoding="utf-8")
    code, out, err = run_cli("scan", str(tmp_path), "--format", "json")
    tasks = {t["id"]: t for t in json.loads(out)["tasks"]}
    assert "library:torchvision" in tasks and "kernel:fused_gelu" in tasks
    assert "kernel:nms" not in tasks


@pytest.mark.slow
def test_a_librarys_import_time_check_is_no_op_and_its_op_is_its_task(run_cli, tmp_path, monkeypatch):
    pytest.importorskip("torch")
    vision = tmp_path / "site" / "torchvision"
    vision.mkdir(parents=True)
    (vision / "__init__.py").write_text(FAKE_VISION, encoding="utf-8")
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(TRAIN, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    out = tmp_path / "r.json"
    run_cli("run", "--steps", "1", "--format", "json", "--output", str(out), "--pass-env", "PYTHONPATH",
            "--", "python", str(project / "train.py"))
    data = json.loads(out.read_text(encoding="utf-8"))
    ops = {o["op"]: o for o in data["ops"]}
    assert "torchvision::_cuda_version" not in ops                 # the import-time version check
    assert ops["torchvision::roi_like"]["status"] == "unknown"
    tasks = {t["id"]: t for t in data["tasks"]}
    assert not [t for t in tasks if t.startswith("kernel:")]
    library = tasks["library:torchvision"]
    assert library["ops"] == ["torchvision::roi_like"] and not library["sized"]
    assert "torchvision 0.28 (torch 2.13) or 0.29 (torch 2.14)" in library["action"]


BERT_TRAIN = '''import torch
from torch.utils.data import DataLoader
from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast, DataCollatorWithPadding

tok = BertTokenizerFast(vocab_file="vocab.txt")
texts = ["the cat sat on the mat", "a good movie", "the dog was very bad", "not a good movie is was",
         "the movie", "a cat", "the dog sat", "very very good movie the cat sat on a mat"] * 4
data = [dict(tok(t), labels=i % 2) for i, t in enumerate(texts)]
loader = DataLoader(data, batch_size=4, shuffle=False,   # batches of 8, 12, 8 tokens
                    collate_fn=DataCollatorWithPadding(tok))
model = BertForSequenceClassification(BertConfig.from_pretrained("."))
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model.to(device)
for step, batch in enumerate(loader):
    batch = {k: v.to(device) for k, v in batch.items()}
    loss = model(**batch).loss
    loss.backward()
    opt.step()
    opt.zero_grad()
'''


@pytest.mark.slow
def test_a_bert_fine_tuning_script_has_no_kernel_task_and_its_shape_task_points_at_the_collator(run_cli, tmp_path,
                                                                                               monkeypatch):
    pytest.importorskip("transformers")
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "cat", "dog", "sat", "on", "mat", "good",
             "bad", "movie", "is", "was", "very", "not"]
    (tmp_path / "vocab.txt").write_text("\n".join(words) + "\n", encoding="utf-8")
    (tmp_path / "config.json").write_text(json.dumps({
        "model_type": "bert", "architectures": ["BertForSequenceClassification"], "hidden_size": 32,
        "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "vocab_size": len(words),
        "max_position_embeddings": 64, "num_labels": 2}), encoding="utf-8")
    (tmp_path / "train.py").write_text(BERT_TRAIN, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "r.json"
    run_cli("run", "--steps", "3", "--format", "json", "--output", str(out), "--", "python", "train.py")
    data = json.loads(out.read_text(encoding="utf-8"))
    tasks = {t["id"]: t for t in data["tasks"]}
    assert not [t for t in tasks if t.startswith("kernel:")]
    shapes = tasks["static-shapes"]
    assert [(s["path"], s["line"]) for s in shapes["sites"]] == [("train.py", 10)]   # collate_fn=...
    assert shapes["sites"][0]["cause"].startswith("transformers/")
    for task in data["tasks"]:
        assert all(not Path(s["path"]).parts[0] == "transformers" for s in task["sites"]), task["id"]
