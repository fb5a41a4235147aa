"""Written commands that are not the team's accelerator training, told by their options: one that
forces the CPU (`-device cpu`, `--no-cuda`, `--gpu -1`) or asks its script for another job
(`--test_only testset`, `--eval`). Stdlib only.

NOTE [commands set aside by their options]
A README often gives one script several commands: `bash run.sh cpu msl` and `bash run.sh <gpu_id>
msl`; "Testing: `python src/main.py ... --test_only testset --gpu -1`" above "Train the model:
`python src/main.py ...`". opscan answers for the training a team moves from its CUDA GPUs to
Trainium, so a command whose options keep it off the accelerator or put its script in another job
ranks after the others of the same evidence read in the same kind of place (NOTE [training command
ranking]: a README's CPU command still comes before a shell script's); it is still listed,
and still run when it is the only one. An option of another job is a bare job word, or one with
`only` (`--eval`, `--evaluate`, `--test`, `--test_only`, `--eval_only`, `--inference`,
`--predict`); `--test_path data/test.json` names a file a training command reads, not a job.
`--help` asks for the parser's help text, which argparse prints before it exits: no training
(ObjectReassembly's README gives `python feature_extractor.py --help` under its training command;
`-h` alone is not read so, as a script without argparse's help may use it for a height).
A script named for another job (`test.py`, `evaluate.py`) that steps no optimizer itself, only
through a project module it imports (a model class with its own `train_step`), is set aside the
same way, and its evidence counts as a name's only (NOTE [training command ranking]): `sh
run_test.sh` running `python test.py --checkpoint $checkpoint_file` ranks after the README's
`python train.py ...` whose Lightning trainer runs its loop (a test command reaching a shared
module that steps is still a test command).
"""

from __future__ import annotations

import re

_DEVICE_OPTIONS = frozenset({"device", "accelerator", "devices"})
_GPU_OPTIONS = frozenset({"gpu", "gpus", "gpu_id", "gpu_ids", "gpuid", "cuda", "cuda_device"})
_CPU_FLAGS = frozenset({"cpu", "no_cuda", "nocuda", "use_cpu", "cpu_only", "no_gpu", "disable_cuda"})
_JOBS = frozenset({"eval", "evaluate", "evaluation", "test", "testing", "inference", "infer", "predict"})


def other_job_script(name: str, steps_elsewhere: bool) -> str:
    """Why a script named for another job is set aside (NOTE [commands set aside by their options]):
    only when its optimizer step is found in a module it imports (`steps_elsewhere`), else ""."""
    from opscan.targets.entry.training import named_for_other_job

    if steps_elsewhere and named_for_other_job(name):
        return f"runs {name}, named for another job than training, whose optimizer steps in a module it imports"
    return ""


def set_aside(words: tuple[str, ...] | list[str]) -> str:
    """Why a command's options set it aside (NOTE [commands set aside by their options]), or ""."""
    for index, word in enumerate(words):
        if not word.startswith("-") or word in ("-", "--"):
            continue
        name, equals, value = word.lstrip("-").partition("=")
        name = name.replace("-", "_").lower()
        if not equals:
            following = words[index + 1] if index + 1 < len(words) else ""
            value = following if not following.startswith("-") or re.fullmatch(r"-\d+", following) else ""
        if name in _DEVICE_OPTIONS and value.strip("'\"").lower() == "cpu":
            return f"forces the CPU ({word} {value})" if not equals else f"forces the CPU ({word})"
        if name in _GPU_OPTIONS and value == "-1":
            return f"forces the CPU ({word} -1)" if not equals else f"forces the CPU ({word})"
        if name in _CPU_FLAGS:
            return f"forces the CPU ({word})"
        if word == "--help":
            return "asks its script for its help text (--help)"
        parts = name.split("_")
        if parts[0] in _JOBS and (len(parts) == 1 or parts[1:] == ["only"]):
            return f"asks its script for another job than training ({word})"
    return ""
