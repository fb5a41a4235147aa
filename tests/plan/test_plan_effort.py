"""Effort ranges: the arithmetic from what the code shows, the catalog and the cost model."""

from __future__ import annotations

from pathlib import Path

from opscan.config import CostConfig
from opscan.records import Finding, Location
from opscan.plan import build_tasks
from opscan.plan.measure import kernel_sources, usage
from opscan.scan import scan_paths


def _scan(root: Path, files: dict[str, str]):
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    result = scan_paths(root)
    findings = tuple(result.findings)
    return findings, kernel_sources(root, findings, result.facts), usage(findings, result.facts)


def _tasks(root, files, cost=None):
    findings, sources, used = _scan(root, files)
    return {t.id: t for t in build_tasks(findings, (), (), cost or CostConfig(), sources, used)}


def test_one_flash_attn_call_is_not_a_transformer_engine_stack(tmp_path):
    tasks = _tasks(tmp_path, {
        "attn.py": "from flash_attn import flash_attn_func\n\ndef f(q, k, v):\n    return flash_attn_func(q, k, v)\n",
        "te_model.py": ("import transformer_engine.pytorch as te\n\nclass M:\n    def __init__(self):\n"
                        "        self.a = te.TransformerLayer(8, 8, 2)\n        self.b = te.Linear(8, 8)\n"
                        "    def forward(self, x):\n        with te.fp8_autocast(enabled=True):\n"
                        "            return self.b(self.a(x))\n"),
    })
    flash, te = tasks["library:flash_attn"], tasks["library:transformer_engine"]
    # flash_attn: core API 2/4/12 h + 1 call site x 30 min + (1 edit x 15 min + 1 unflagged edit
    # around it x 10 min + 2 h)
    edits = 15 / 60 + 10 / 60 + 2 + 0.5
    assert flash.effort_range == (round(2 + edits * 0.75, 2), round(4 + edits, 2), round(12 + edits * 2, 2))
    assert "catalog `flash_attn` (small)" in flash.effort_basis and "1 call site(s) x 30 min" in flash.effort_basis
    # transformer_engine: TransformerLayer/fp8_autocast are the core (FP8) API, Linear is its own part
    assert "core API 40/80/200 h" in te.effort_basis
    assert "`transformer_engine.pytorch.Linear` 8/16/40 h" in te.effort_basis
    assert "3 call site(s) x 45 min" in te.effort_basis
    assert te.effort_hours > 10 * flash.effort_hours
    assert "SDPA" in flash.action or "scaled_dot_product_attention" in flash.action
    assert "FP8" in te.action and flash.action != te.action   # each library its own advice


def test_api_part_used_sizes_the_task(tmp_path):
    tasks = _tasks(tmp_path, {"opt.py": "from apex.optimizers import FusedAdam\nopt = FusedAdam([])\n"})
    apex = tasks["library:apex"]
    assert "`apex.optimizers*` 1/2/6 h" in apex.effort_basis and "core API" not in apex.effort_basis
    cheap = _tasks(tmp_path, {"opt.py": "from apex.optimizers import FusedAdam\nopt = FusedAdam([])\n"},
                   CostConfig(library_factor=0.5))["library:apex"]
    assert "x library-factor 0.5" in cheap.effort_basis and cheap.effort_hours == round(apex.effort_hours - 1, 2)


def test_a_plain_submodule_import_counts_as_that_part(tmp_path):
    tasks = _tasks(tmp_path, {"opt.py": "import apex.optimizers\nopt = apex.optimizers.FusedLAMB([])\n"})
    basis = tasks["library:apex"].effort_basis
    assert "`apex.optimizers*` 1/2/6 h" in basis and "core API" not in basis and "1 call site(s)" in basis


def _lib(subject: str, line: int = 1) -> Finding:
    return Finding("OPS900", "my-lib", "cuda-only-lib", "error", "m", Location("x.py", line),
                   task="library", subject=subject)


def test_a_library_without_catalog_entry_is_not_sized():
    (task,) = build_tasks((_lib("mycudalib"),), (), ())
    assert not task.sized and task.effort_range == (0, 0, 0)
    assert task.effort_basis.startswith("no catalog entry for `mycudalib`: not sized")
    assert "no catalog entry" in task.why
    (assumed,) = build_tasks((_lib("mycudalib"),), (), (), CostConfig(library_hours=6))
    assert assumed.sized and assumed.effort_hours == round(6 + 15 / 60 + 10 / 60 + 2, 2)
    assert "library-hours 6 h (assumed)" in assumed.effort_basis


def test_kernel_with_pytorch_reference_path_is_cheaper_but_keeps_the_full_port_as_high(tmp_path):
    kernel = ("import triton\n\n@triton.jit\ndef rms_kernel(x):\n" + "    a = 1\n" * 20 + "\n"
              "def rms(x):\n    return rms_kernel(x)\n")
    plain = _tasks(tmp_path / "a", {"k.py": kernel})["kernel:rms_kernel"]
    with_ref = _tasks(tmp_path / "b", {"k.py": kernel + "\ndef rms_reference(x):\n    return x\n"})["kernel:rms_kernel"]
    # (3 d x 1 kernel + 1 d per 100 lines x 22 lines) x 8 h = 25.76 h; triton factor 0.4/0.8/1.5
    port = (3 + 22 / 100) * 8
    calls = len(plain.sites) * 15 / 60
    assert plain.effort_range == (round(port * 0.4 + calls, 2), round(port * 0.8 + calls, 2),
                                  round(port * 1.5 + calls, 2))
    assert with_ref.effort_range == (round(calls, 2), round(port * 0.8 * 0.25 + calls, 2), round(port * 1.5 + calls, 2))
    assert "already has a PyTorch path" in with_ref.effort_basis
    assert "triton factor 0.4/0.8/1.5" in plain.effort_basis


def test_cost_config_overrides_every_coefficient(tmp_path):
    files = {"k.py": "import triton\n\n@triton.jit\ndef k(x):\n    pass\n"}
    base = _tasks(tmp_path, files)["kernel:k"]
    dear = _tasks(tmp_path, files, CostConfig(kernel_days=6, kernel_call_site_minutes=0))["kernel:k"]
    assert dear.effort_hours > base.effort_hours and "6 d x 1 kernel(s)" in dear.effort_basis
