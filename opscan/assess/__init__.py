"""The assessment: a run's Draft judged into the finished Report (docs/architecture.md, "Assessment").

assessment.py (`assess`: coverage, caveats, notes, fallback costs, tasks, verdict), verdict.py (the
verdict and its blockers, judged once), gate.py (the exit code that cannot contradict it),
compile_check.py (torch.compile under TorchNeuron's rules), baseline.py (the baseline file and
its fingerprints). The public names of assessment.py are re-exported: `from opscan.assess import assess`.
"""

from __future__ import annotations

from opscan.assess.assessment import (NO_DATABASE, SDPA_OPS, SDPA_PATHS, Factors, assess, fallback_costs, ratios,
                                      scale_factors, scaled, sdpa_assumption)

__all__ = ["NO_DATABASE", "SDPA_OPS", "SDPA_PATHS", "Factors", "assess", "fallback_costs", "ratios", "scale_factors",
           "scaled", "sdpa_assumption"]
