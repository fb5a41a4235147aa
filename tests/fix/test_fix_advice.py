"""After `opscan fix`, the scan's advice and the fixer's reasons agree line by line
(NOTE [the scan's advice and the fixer agree] in opscan/fix/module.py)."""

from __future__ import annotations

from pathlib import Path

from opscan.config import Config
from opscan.fix.files import fix_paths
from opscan.scan import load_rules, scan_paths

RULES = {r.id: r for r in load_rules()}

TRAIN = '''\
import torch

dtype = "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float16"
use_amp = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 8
if torch.cuda.is_available():
    torch.cuda.synchronize()
if torch.cuda.is_available():
    torch.backends.cudnn.benchmark = True
model = torch.nn.Linear(2, 2).cuda()
'''


def test_no_finding_left_after_the_fix_advises_against_the_reason_it_was_kept(tmp_path: Path):
    (tmp_path / "train.py").write_text(TRAIN)
    run = fix_paths([tmp_path], lambda target: Config(root=Path(target)), jobs=1)
    assert run.count("fixed") >= 2                      # the bfloat16 choice and `.cuda()` were rewritten
    kept = {(o.finding.location.line, o.finding.subject): o.reason for o in run.outcomes()
            if o.status == "left" and o.finding.subject == "torch.cuda.is_available"}
    assert sorted(kept.items()) == [((3, "torch.cuda.is_available"), "guard"),      # the bfloat16 choice's test
                                    ((4, "torch.cuda.is_available"), "guard"),      # guards a CUDA-only query
                                    ((5, "torch.cuda.is_available"), "decision"),   # guards synchronize()
                                    ((7, "torch.cuda.is_available"), "guard")]      # guards a cuDNN setting
    # the fix adds the module's DEVICE definition above: the same checks, in the same order, lines later
    again = [f for f in scan_paths(tmp_path, check_fixes=False).findings if f.subject == "torch.cuda.is_available"]
    assert len(again) == len(kept)
    for (key, reason), finding in zip(sorted(kept.items()), again):
        rule = RULES[finding.rule]
        advises_replacement = finding.fix == rule.format(rule.fix_for(finding.subject)[0], name=finding.subject)
        # kept as a guard: the scan must not tell to make it `torch.accelerator.is_available()` (following
        # that would call torch.cuda.is_bf16_supported on a Neuron device); left as a decision: it does
        assert advises_replacement == (reason == "decision"), (key, finding.fix)
    assert 'if torch.cuda.is_available() and not torch.cuda.is_bf16_supported() else "bfloat16"' in \
        (tmp_path / "train.py").read_text()
