"""`accelerate launch [OPTIONS] SCRIPT ARGS` read as accelerate reads it, for the one process opscan runs.

NOTE [accelerate launch]
Hugging Face's examples are run with `accelerate launch train.py ...`. accelerate's launcher
starts `python SCRIPT ARGS` (one process: its simple launcher) or torchrun (several: its multi-GPU
launcher) with environment variables that the script's `Accelerator()` reads: the mixed precision,
the CPU choice, the dynamo backend. `opscan run` runs the script itself, as `python SCRIPT ARGS`,
with the environment accelerate would give it (prepare_simple_launcher_cmd_env /
prepare_multi_gpu_env in accelerate/utils/launch.py, accelerate 1.x), and for several processes as
rank 0 of a fake process group of `--num_processes`, as for torchrun. accelerate is never imported
here (this runs in opscan's own process): its options are read from the command, then from
`--config_file` (or accelerate's default config file, when it exists and `--cpu` is not given, as
accelerate does), whose `mixed_precision`, `num_processes`, `num_machines`, `use_cpu`,
`distributed_type` and `dynamo_config.dynamo_backend` count; the command line wins. Several
processes: `--multi_gpu`, a config whose `distributed_type` is a `MULTI_*` one, or, on the imitated
accelerator (whose machine has several devices), `--num_processes` above 1; on `--device cpu`,
without them, accelerate runs one process, as here. `--gradient_accumulation_steps` is accepted and,
as accelerate does outside DeepSpeed, sets nothing. Launchers that set much more (DeepSpeed, FSDP,
Megatron-LM, TPU, SageMaker) and options this reading does not know are a one-line usage error.
"""

from __future__ import annotations

import os
from pathlib import Path

VALUE_OPTIONS = ("config_file", "mixed_precision", "num_processes", "num_machines", "gradient_accumulation_steps",
                 "main_process_ip", "main_process_port", "machine_rank", "num_cpu_threads_per_process",
                 "dynamo_backend")
FLAG_OPTIONS = ("cpu", "multi_gpu", "module", "quiet", "debug")
SHORT = {"-m": "module", "-q": "quiet"}
PRECISIONS = ("no", "fp16", "bf16")
INTEGERS = ("num_processes", "num_machines", "gradient_accumulation_steps", "main_process_port", "machine_rank",
            "num_cpu_threads_per_process")
UNSUPPORTED_TYPES = ("DEEPSPEED", "FSDP", "MEGATRON_LM", "XLA", "TPU")


def parse_accelerate(words: list[str], device: str = "neuron") -> dict:
    """{"script", "argv", "module", "nproc", "env", "summary"} of the words after `accelerate launch`.
    Raises UsageError on an option it does not know or a value accelerate would refuse."""
    from opscan.errors import UsageError

    options: dict = {}
    words = list(words)
    while words and words[0].startswith("-"):
        word = words.pop(0)
        flag, has_value, value = word.partition("=")
        name = SHORT.get(flag) or flag.lstrip("-").replace("-", "_")
        if name in FLAG_OPTIONS and not has_value:
            options[name] = True
        elif name in VALUE_OPTIONS:
            if not has_value:
                if not words:
                    raise UsageError(f"accelerate launch: {flag} expects a value")
                value = words.pop(0)
            options[name] = _checked(name, value, flag)
        else:
            raise UsageError(f"accelerate launch: option {flag} is not one `opscan run` reads (it reads "
                             f"{', '.join('--' + n for n in (*VALUE_OPTIONS, *FLAG_OPTIONS))}); see docs/run.md")
    if not words:
        raise UsageError("accelerate launch: no script: expected accelerate launch [OPTIONS] SCRIPT ARGS")
    config = _config(options)
    return {"script": words[0], "argv": words[1:], "module": bool(options.get("module")),
            **_launch(options, config, device)}


def _checked(name: str, value: str, flag: str):
    from opscan.errors import UsageError

    if name in INTEGERS:
        if not value.lstrip("-").isdigit():
            raise UsageError(f"accelerate launch: {flag} expects an integer, not {value!r}")
        return int(value)
    if name == "mixed_precision" and value.lower() not in PRECISIONS:
        raise UsageError(f"accelerate launch: --mixed_precision {value!r}: expected one of "
                         f"{', '.join(PRECISIONS)} (fp8 is not imitated)")
    return value


def default_config_file() -> Path:
    """accelerate's default config file (HF_HOME, else XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface)."""
    home = os.environ.get("HF_HOME", os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "huggingface"))
    return Path(os.path.expanduser(home)) / "accelerate" / "default_config.yaml"


def _config(options: dict) -> dict:
    """The config file accelerate reads, as a dict ({} when it reads none). Raises UsageError."""
    import yaml

    from opscan.errors import UsageError

    path = options.get("config_file")
    if path is None:
        default = default_config_file()
        if options.get("cpu") or not default.is_file():
            return {}
        path = str(default)
    elif not Path(path).is_file():
        raise UsageError(f"accelerate launch: no such config file: {path}")
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))   # JSON is YAML too
    except (OSError, yaml.YAMLError) as exc:
        raise UsageError(f"accelerate launch: cannot read {path}: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise UsageError(f"accelerate launch: {path} is not an accelerate config (a mapping)")
    kind = str(data.get("distributed_type") or "NO").upper()
    if kind in UNSUPPORTED_TYPES or str(data.get("compute_environment", "LOCAL_MACHINE")).upper() != "LOCAL_MACHINE":
        raise UsageError(f"accelerate launch: {path}: distributed_type {kind} / compute_environment "
                         f"{data.get('compute_environment', 'LOCAL_MACHINE')} is not imitated: run the script with "
                         "python or torchrun")
    if data.get("mixed_precision") is not None:
        _checked("mixed_precision", str(data["mixed_precision"]), f"{path}: mixed_precision")
    return data


def _launch(options: dict, config: dict, device: str) -> dict:
    """The environment, process count and summary of accelerate's launcher for these options."""
    from opscan.errors import UsageError

    cpu = bool(options.get("cpu"))
    use_cpu = cpu or bool(config.get("use_cpu"))
    processes = options.get("num_processes", config.get("num_processes"))
    machines = options.get("num_machines", config.get("num_machines")) or 1
    if processes is None:
        processes = 1   # max(device_count, 1): the imitated CUDA answers one device
    if processes < 1:
        raise UsageError(f"accelerate launch: --num_processes must be at least 1, not {processes}")
    precision = str(options.get("mixed_precision") or config.get("mixed_precision") or "no").lower()
    kind = str(config.get("distributed_type") or "NO").upper()
    multi = bool(options.get("multi_gpu")) or kind.startswith("MULTI_") and kind != "MULTI_CPU" \
        or (device != "cpu" and processes > 1 and not config)
    multi = multi and not cpu
    if multi and processes < 2:
        raise UsageError("accelerate launch: several processes (--multi_gpu) need --num_processes of at least 2")
    port = options.get("main_process_port", config.get("main_process_port")) or 29500
    backend = str(options.get("dynamo_backend") or (config.get("dynamo_config") or {}).get("dynamo_backend")
                  or "no").upper()
    threads = options.get("num_cpu_threads_per_process") or _int(os.environ.get("OMP_NUM_THREADS"), 1)
    env = {}
    if not multi:
        env["ACCELERATE_USE_CPU"] = str(use_cpu)
    if options.get("debug") or config.get("debug"):
        env["ACCELERATE_DEBUG_MODE"] = "true"
    if not multi and (processes > 1 or machines > 1):
        env["MASTER_ADDR"] = str(options.get("main_process_ip") or config.get("main_process_ip") or "127.0.0.1")
        env["MASTER_PORT"] = str(port)
    if use_cpu and not multi:
        env.update(KMP_AFFINITY="granularity=fine,compact,1,0", KMP_BLOCKTIME="1")
    env.update(ACCELERATE_MIXED_PRECISION=precision, ACCELERATE_DYNAMO_BACKEND=backend,
               ACCELERATE_DYNAMO_MODE="default", ACCELERATE_DYNAMO_USE_FULLGRAPH="False",
               ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION="False", OMP_NUM_THREADS=str(threads))
    shape = f"rank 0 of {processes} processes" if multi else "one process"
    summary = f"accelerate launch: {shape}, mixed precision {precision}" + (", CPU" if use_cpu else "")
    return {"nproc": processes if multi else None, "env": env, "summary": summary}


def _int(value, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


__all__ = ["default_config_file", "parse_accelerate"]
