"""`opscan fix` on dependency manifests: text edits of exact lines, only where the result is certain.

Manifests are text (requirements, TOML, YAML, Dockerfiles): no codemod, no reformatting. The one
rewrite made is PyTorch's CUDA wheel index -> its CPU index on the line an OPS504 finding names
(`https://download.pytorch.org/whl/cu121` -> `.../whl/cpu`, nightly and test indexes alike),
because PyTorch publishes the CPU build of every torch, torchvision and torchaudio it publishes for
CUDA there. It is left when the file pins a CUDA local label (`+cu121`: that build is only on the CUDA
index, so both must change together) and for other indexes (NVIDIA's, third parties'). Every
other manifest finding (a torch pin, a companion, a CUDA-only library) is a decision the
torch-version or library task proposes (its fix text): which paired torch, which companion
versions, what replaces the library, are not certain from the file alone (docs/dependencies.md).
"""

from __future__ import annotations

from opscan.fix.module import SiteOutcome, manual_outcome
from opscan.fix.scope import CUDA_INDEX, CUDA_LABEL, certain
from opscan.records import Finding
from opscan.scan.rule_records import Rule
from opscan.fix.reasons import FixStatus

def fix_manifest(before: bytes, findings: list[Finding], rules: dict[str, Rule]
                 ) -> tuple[bytes, tuple[SiteOutcome, ...]]:
    """(the rewritten bytes, an outcome per finding). Lines keep their endings; nothing else moves."""
    text = before.decode("utf-8")
    lines = text.splitlines(keepends=True)
    labelled = CUDA_LABEL.search(text) is not None
    outcomes = []
    for finding in findings:
        line = finding.location.line
        if not certain(finding, rules):
            outcomes.append(manual_outcome(finding, rules))
        elif labelled:
            outcomes.append(SiteOutcome(finding, FixStatus.LEFT, "a `+cuXXX` local label in this file is only on the "
                                        "CUDA index: change the label and the index together", "decision"))
        elif 0 < line <= len(lines) and CUDA_INDEX.search(lines[line - 1]):
            lines[line - 1] = CUDA_INDEX.sub(r"\1cpu", lines[line - 1])
            outcomes.append(SiteOutcome(finding, FixStatus.FIXED, "PyTorch's CUDA wheel index -> its CPU wheel index"))
        else:
            outcomes.append(SiteOutcome(finding, FixStatus.LEFT, "the index is not on the line the scan found", "form"))
    return "".join(lines).encode("utf-8"), tuple(outcomes)
