"""`opscan run`: a user's unmodified script run on fake tensors of the imitated device, its ops recorded.

The run mode sits on the engine (opscan/trace/: recorder, fake tensors, the imitated device,
standins, signatures) and adds what a whole script needs; the engine never imports it. Its public
API is this module: commands/run.py calls `run_script` in process (`--in-process`) or names it
("opscan.trace.run:run_script") for the contained child (opscan/containment/process.py); tests and benchmarks
use the same:

    run_script(script, argv=(), *, module=False, device="neuron", steps=1, nproc=None, env=None,
               profile=None, project_root=None, cwd=None, stand_ins=False)
        -> (opscan.records.ModelTrace, notes)      # NOTE [running a script] in script.py
    RUN_DEVICES, RUN_HINT
    cuda_answered(device, project_root)   # a context: CUDA requests answered as a run answers them

Module map (private to the run mode): script (the run: phases, steps, the host recorder) ->
redirect (CUDA requests answered as the port would), run_mode (the run's fake mode: host data keeps
its values), loaders (DataLoader workers in the script's process), checkpoints (saves and loads),
loop_exits (forced loop exits), neuron_package (TorchNeuron's package on the imitated device),
libraries (what libraries ask about fake tensors and the device), stand_ins / stand_in_hooks / data_stand_ins /
media_stand_ins / table_stand_ins (with data_shapes: data shaped by its use) / listings / pretrained (with hub_names) /
windows_paths (Windows-separator paths read as the project's files) / existence_checks (asserted
existence of absent data) (data and weights stood in for when `stand_ins`: `opscan PATH`'s run of
the project's training command, NOTE [stand-ins for data and weights]).
"""

from __future__ import annotations

def run_script(script: str, argv=(), **options):
    """Run `script` on fake tensors; see opscan.trace.run.script.run_script (imports torch)."""
    from opscan.trace.run.script import run_script as run

    return run(script, argv, **options)


def cuda_answered(device: str, project_root: str):
    """Inside: CUDA requests answered on `device` as a run answers them (NOTE [answering CUDA
    requests] in redirect.py); the model path's retry of NOTE [retry with CUDA answered] uses it."""
    from opscan.trace.run.redirect import Requests, answering
    from opscan.trace.sources import SourceFinder

    return answering(device, Requests(SourceFinder(project_root)))


def __getattr__(name: str):
    if name in ("RUN_DEVICES", "RUN_HINT"):
        from opscan.trace.run import script

        return getattr(script, name)
    raise AttributeError(name)


__all__ = ["RUN_DEVICES", "RUN_HINT", "run_script"]
