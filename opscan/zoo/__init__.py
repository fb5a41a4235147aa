"""Zoo: a readiness matrix over whole model families, traced in contained processes, locally or on Dask.

Public API (docs/zoo.md):

    resolve(selection, config_dir, layers=None) -> list[ZooTarget]      # selection.py
    run_zoo(targets, release, *, options, tracer, workers, limits, cache, cluster, progress) -> ZooRun
    (release: an opscan.db Release, the one coverage protocol; rows are judged by opscan/assess/assessment.py)
    Limits(timeout, max_memory, start_method)   # opscan.containment.process.Limits; Cache(root, enabled)
    render: opscan.zoo.render.{terminal,jsonout,markdown,html}.render(run, out)
    diff: opscan.zoo.diff.{load,diff,render_text}

Module map: selection (what to trace; transformers default configs are written by
opscan/targets/hf/defaults.py) -> jobs (one opscan.containment.process child per model, tracing through
tracing.py and opscan/targets/) ->
execution/cluster (local pool or Dask) -> cache (traces, then rows per db release) -> results (rows,
op ranking) -> render/* (outputs) ; diff (two JSON runs).
"""

from opscan.zoo.cache import Cache
from opscan.zoo.execution import Limits, ZooRun, run_zoo
from opscan.zoo.selection import ZooTarget, resolve

__all__ = ["Cache", "Limits", "ZooRun", "ZooTarget", "resolve", "run_zoo"]
