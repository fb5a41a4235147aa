"""`opscan trace` and `opscan zoo` run the pipeline's steps (opscan/pipeline/phases.py: `database`,
`trace`), as `opscan PATH` does, instead of rebuilding them; `opscan fix` plans with the rules its
scan step ran. The steps are replaced here, so no model is built."""

from __future__ import annotations

import json
from types import SimpleNamespace

from opscan.pipeline import phases
from opscan.records import ModelTrace, OpUsage
from tests.support.release import static_release

RELEASE = static_release({"aten::mm": "native"}, "torchneuron==2.33.0")


def _steps(monkeypatch):
    seen: dict[str, list] = {"database": [], "trace": []}

    def database(config):
        seen["database"].append((config.backend, config.db))
        return RELEASE

    def trace(model, root, profile, limits, **extra):
        seen["trace"].append((model.target, model.mode, model.batch, model.real_layers, extra))
        return ModelTrace(model.target, model.mode, "neuron", (OpUsage("aten::mm", 1, ("forward",)),))

    monkeypatch.setattr(phases, "database", database)
    monkeypatch.setattr(phases, "trace", trace)
    return seen


def test_opscan_trace_runs_the_database_and_trace_steps(run_cli, tmp_path, monkeypatch):
    seen = _steps(monkeypatch)
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("trace", "m.py:build", "--batch", "3", "--real-layers", "12", "--device", "cpu",
                             "--steps", "2", "--format", "json")
    assert code == 0, err
    assert seen["trace"] == [("m.py:build", "train", 3, 12, {"device": "cpu", "steps": 2})]
    assert seen["database"] == [("", None)]   # no flag, no [tool.opscan]: the newest release
    assert [o["op"] for o in json.loads(out)["ops"]] == ["aten::mm"]


def test_opscan_trace_takes_the_release_and_models_of_the_project_once(run_cli, tmp_path, monkeypatch):
    seen = _steps(monkeypatch)
    (tmp_path / "pyproject.toml").write_text('[tool.opscan]\nbackend = "torchneuron==2.33.0"\n'
                                             '[[tool.opscan.models]]\ntarget = "m.py:build"\nmode = "inference"\n')
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("trace", "--format", "json")
    assert code == 0, err
    assert seen["database"] == [("torchneuron==2.33.0", None)]
    assert [(target, mode) for target, mode, *_ in seen["trace"]] == [("m.py:build", "inference")]
    code, _, err = run_cli("trace", "--backend", "torchneuron==2.33.0", "--db", "other-db", "--format", "json")
    assert code == 0, err   # both flags given: the project's models are still read
    assert seen["database"][-1][0] == "torchneuron==2.33.0" and str(seen["database"][-1][1]) == "other-db"


def test_the_zoo_loads_its_release_through_the_database_step(tmp_path, monkeypatch):
    from opscan.commands import zoo

    seen = _steps(monkeypatch)
    monkeypatch.chdir(tmp_path)
    assert zoo._release(SimpleNamespace(backend="torchneuron==2.33.0", db=None)) is RELEASE
    assert seen["database"] == [("torchneuron==2.33.0", None)]


def test_opscan_fix_plans_with_the_rules_its_scan_ran(tmp_path, monkeypatch):
    from opscan.config import Config
    from opscan.fix import files
    from opscan.scan import rules

    (tmp_path / "t.py").write_text("import torch\nx = torch.zeros(2).cuda()\n", encoding="utf-8")
    loads = []
    real = rules.load_rules

    def counted(*args, **kwargs):
        loads.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(rules, "load_rules", counted)
    run = files.fix_paths([tmp_path], lambda target: Config(root=target), write=False, jobs=1)
    assert len(loads) == 1   # the scan step's load; the plan reuses its RuleSet
    assert [f.path for f in run.files] == ["t.py"] and any(o.status == "fixed" for o in run.files[0].outcomes)
