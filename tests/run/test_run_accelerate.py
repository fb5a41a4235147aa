"""`opscan run -- accelerate launch [OPTIONS] SCRIPT ARGS`: the script runs as `python SCRIPT ARGS`
under the environment accelerate's launcher gives it (NOTE [accelerate launch]).

The parsing tests need no accelerate; the ones marked so compare with accelerate's own launcher
code and run a script that builds an `Accelerator()`, and are skipped where accelerate is not
installed."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ROOT = Path(__file__).resolve().parents[2]
needs_accelerate = pytest.mark.skipif(importlib.util.find_spec("accelerate") is None,
                                      reason="accelerate is not installed")


@pytest.fixture(autouse=True)
def _no_default_config(tmp_path, monkeypatch):
    """No accelerate default config file from the machine running the tests."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)


@pytest.fixture
def fresh_accelerate():
    """accelerate's process-wide state and its cached device checks (`is_neuron_available`)
    forgotten before and after (opscan runs a script in a fresh child process; these tests run it
    in the test process)."""
    from accelerate.state import AcceleratorState, GradientState
    from accelerate.utils import imports

    def reset():
        AcceleratorState._reset_state(reset_partial_state=True)
        GradientState._reset_state()
        for value in vars(imports).values():
            if callable(getattr(value, "cache_clear", None)):
                value.cache_clear()

    reset()
    yield
    reset()


def parse(*words, device="neuron"):
    from opscan.commands.run import parse_command

    return parse_command(["--", "accelerate", "launch", *words], device)


def test_one_process_gets_accelerates_environment():
    parsed = parse("--mixed_precision", "bf16", "train.py", "--lr", "3")
    assert (parsed["script"], parsed["argv"], parsed["module"], parsed["nproc"]) == ("train.py", ["--lr", "3"],
                                                                                       False, None)
    assert parsed["env"] == {
        "ACCELERATE_USE_CPU": "False", "ACCELERATE_MIXED_PRECISION": "bf16", "ACCELERATE_DYNAMO_BACKEND": "NO",
        "ACCELERATE_DYNAMO_MODE": "default", "ACCELERATE_DYNAMO_USE_FULLGRAPH": "False",
        "ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION": "False", "OMP_NUM_THREADS": "1"}
    assert parsed["summary"] == "accelerate launch: one process, mixed precision bf16"


def test_hyphens_equals_cpu_and_module_forms():
    parsed = parse("--mixed-precision=fp16", "--cpu", "-m", "pkg.train", "x")
    assert (parsed["script"], parsed["argv"], parsed["module"]) == ("pkg.train", ["x"], True)
    assert parsed["env"]["ACCELERATE_USE_CPU"] == "True" and parsed["env"]["KMP_BLOCKTIME"] == "1"
    assert parsed["env"]["ACCELERATE_MIXED_PRECISION"] == "fp16"
    from opscan.commands.run import parse_command

    same = parse_command(["python", "-m", "accelerate.commands.launch", "--cpu", "-m", "pkg.train", "x"])
    assert same["env"] == parsed["env"] | {"ACCELERATE_MIXED_PRECISION": "no"}
    assert parse_command(["accelerate-launch", "--cpu", "-m", "pkg.train", "x"]) == same


def test_several_processes_are_rank_0_of_a_fake_group_on_the_accelerator():
    parsed = parse("--num_processes", "4", "--gradient_accumulation_steps", "2", "train.py")
    assert parsed["nproc"] == 4 and "ACCELERATE_USE_CPU" not in parsed["env"]
    assert "ACCELERATE_GRADIENT_ACCUMULATION_STEPS" not in parsed["env"]   # accelerate sets it for DeepSpeed only
    assert parsed["summary"] == "accelerate launch: rank 0 of 4 processes, mixed precision no"
    # a CPU-only machine has no devices to spread over: accelerate runs one process there
    cpu = parse("--num_processes", "4", "train.py", device="cpu")
    assert cpu["nproc"] is None
    assert (cpu["env"]["MASTER_ADDR"], cpu["env"]["MASTER_PORT"]) == ("127.0.0.1", "29500")
    assert parse("--multi_gpu", "--num_processes", "2", "train.py", device="cpu")["nproc"] == 2
    assert parse("--cpu", "--num_processes", "2", "train.py")["nproc"] is None


def test_the_config_file_gives_what_the_command_line_does_not(tmp_path):
    config = tmp_path / "accelerate.yaml"
    config.write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nmixed_precision: bf16\n"
                      "num_processes: 8\nnum_machines: 1\nuse_cpu: false\n")
    parsed = parse("--config_file", str(config), "train.py", device="cpu")
    assert parsed["nproc"] == 8 and parsed["env"]["ACCELERATE_MIXED_PRECISION"] == "bf16"
    parsed = parse("--config_file", str(config), "--mixed_precision", "no", "--num_processes", "2", "train.py")
    assert parsed["nproc"] == 2 and parsed["env"]["ACCELERATE_MIXED_PRECISION"] == "no"
    # accelerate's default config file (`accelerate config` writes it) is read when it exists
    default = tmp_path / "hf" / "accelerate" / "default_config.yaml"
    default.parent.mkdir(parents=True)
    default.write_text("distributed_type: 'NO'\nmixed_precision: fp16\nnum_processes: 1\n")
    assert parse("train.py")["env"]["ACCELERATE_MIXED_PRECISION"] == "fp16"
    assert parse("--cpu", "train.py")["env"]["ACCELERATE_MIXED_PRECISION"] == "no"   # --cpu skips it


@pytest.mark.parametrize("words, message", [
    (["--tpu", "train.py"], "option --tpu is not one `opscan run` reads"),
    (["--mixed_precision", "fp8", "train.py"], "fp8 is not imitated"),
    (["--num_processes", "two", "train.py"], "--num_processes expects an integer"),
    (["--config_file", "missing.yaml", "train.py"], "no such config file: missing.yaml"),
    (["--cpu"], "no script"),
])
def test_what_accelerate_would_refuse_or_opscan_does_not_read_is_a_one_line_usage_error(run_cli, words, message):
    code, out, err = run_cli("run", "--", "accelerate", "launch", *words)
    assert code == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1


def test_a_deepspeed_config_is_a_usage_error(run_cli, tmp_path):
    config = tmp_path / "ds.yaml"
    config.write_text("distributed_type: DEEPSPEED\nnum_processes: 8\n")
    code, _, err = run_cli("run", "--", "accelerate", "launch", "--config_file", str(config), "train.py")
    assert code == 2 and "distributed_type DEEPSPEED" in err and "is not imitated" in err


@needs_accelerate
@pytest.mark.parametrize("words", [
    ["--mixed_precision", "bf16"], ["--cpu", "--num_processes", "2"], ["--num_processes", "3", "--num_machines", "1"],
])
def test_the_environment_is_the_one_accelerates_simple_launcher_sets(words):
    """On this CPU-only machine accelerate runs one process for each of these: its own launcher code
    builds the environment that opscan's reading must give."""
    from accelerate.commands.launch import (
        _validate_launch_command,
        launch_command_parser,
    )
    from accelerate.utils.launch import prepare_simple_launcher_cmd_env

    args, _, _ = _validate_launch_command(launch_command_parser().parse_args([*words, "train.py"]))
    _, env = prepare_simple_launcher_cmd_env(args)
    ours = parse(*words, "train.py", device="cpu")
    assert ours["nproc"] is None
    launched = {k: v for k, v in env.items() if k.startswith(("ACCELERATE_", "MASTER_", "KMP_", "OMP_"))}
    assert ours["env"] == launched


@needs_accelerate
def test_several_processes_get_the_environment_of_accelerates_multi_gpu_launcher():
    """`--multi_gpu` runs torchrun, under accelerate's prepare_multi_gpu_env; torchrun's own RANK,
    WORLD_SIZE, ... are the fake process group's (tests/run/test_run_cli.py)."""
    from accelerate.commands.launch import (
        _validate_launch_command,
        launch_command_parser,
    )
    from accelerate.utils.launch import prepare_multi_gpu_env

    words = ["--multi_gpu", "--num_processes", "2", "--mixed_precision", "fp16"]
    args, _, _ = _validate_launch_command(launch_command_parser().parse_args([*words, "train.py"]))
    env = prepare_multi_gpu_env(args)
    ours = parse(*words, "train.py", device="cpu")
    assert ours["nproc"] == 2
    assert ours["env"] == {k: v for k, v in env.items() if k.startswith(("ACCELERATE_", "MASTER_", "KMP_", "OMP_"))}


@needs_accelerate
def test_an_accelerate_script_sees_the_launchers_state_and_takes_its_step(tmp_path, monkeypatch, fresh_accelerate):
    from opscan.trace.run import run_script

    monkeypatch.chdir(tmp_path)
    parsed = parse("--mixed_precision", "bf16", "--num_processes", "2", str(FIXTURES / "accelerate_train.py"),
                   "--state", "state.json")
    trace, notes = run_script(parsed["script"], parsed["argv"], device="neuron", steps=1, nproc=parsed["nproc"],
                              env=parsed["env"], project_root=str(FIXTURES))
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["mixed_precision"] == "bf16" and state["num_processes"] == 2 and state["process_index"] == 0
    assert state["device"] == "neuron" and state["distributed_type"].startswith("DistributedType.MULTI_")
    assert trace.complete, trace.stopped_at
    assert notes[0].endswith("ended after 1 optimizer step of each optimizer; 1 optimizer step of 1 optimizer")
    assert "accelerate_train.py: rank 0 of 2 on a fake process group" in notes
    ops = {u.op: u for u in trace.ops}
    assert "torch.bfloat16" in ops["aten::gelu"].dtypes   # accelerate's bf16 autocast
    assert ops["aten::_foreach_lerp_.Scalar"].phases == ("optimizer",)
    import os

    assert "ACCELERATE_MIXED_PRECISION" not in os.environ   # set for the run only


@needs_accelerate
def test_a_cpu_run_under_accelerate_launch_dispatches_a_real_runs_ops(tmp_path, monkeypatch, fresh_accelerate):
    """`opscan run --device cpu -- accelerate launch --mixed_precision bf16 SCRIPT` against a real
    CPU run of the script under the same environment (docs/run.md, "How it is tested")."""
    from accelerate.state import AcceleratorState, GradientState

    from opscan.trace.run import run_script

    monkeypatch.chdir(tmp_path)
    parsed = parse("--mixed_precision", "bf16", str(FIXTURES / "accelerate_train.py"), device="cpu")
    spec = importlib.util.spec_from_file_location("run_real_record",
                                                  ROOT / "benchmarks" / "accuracy" / "run_real_record.py")
    recorder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recorder)
    with monkeypatch.context() as env:
        for key, value in parsed["env"].items():
            env.setenv(key, value)
        real = recorder.record(parsed["script"], parsed["argv"], steps=1)
    AcceleratorState._reset_state(reset_partial_state=True)
    GradientState._reset_state()
    trace, _ = run_script(parsed["script"], parsed["argv"], device="cpu", steps=1, env=parsed["env"],
                          project_root=str(FIXTURES))
    fake = {u.op for u in trace.ops}
    assert trace.complete, trace.stopped_at
    assert len(real) >= 20
    assert recorder.jaccard(real, fake) >= 0.95, (sorted(real - fake), sorted(fake - real))


@needs_accelerate
def test_opscan_run_accelerate_launch_end_to_end(tmp_path, monkeypatch):
    """Through the CLI and opscan's contained child: the launcher's environment reaches the script."""
    import shutil

    from opscan.cli import main

    (tmp_path / "pyproject.toml").write_text('[project]\nname = "acc"\nversion = "0"\n')
    shutil.copy(FIXTURES / "accelerate_train.py", tmp_path / "train.py")
    monkeypatch.chdir(tmp_path)
    code = main(["run", "--format", "json", "-o", "report.json", "--exit-zero", "--", "accelerate", "launch",
                 "--num_processes=2", "--mixed_precision", "fp16", "train.py", "--state", "state.json"])
    doc = json.loads((tmp_path / "report.json").read_text())
    state = json.loads((tmp_path / "state.json").read_text())
    assert code == 0 and (state["mixed_precision"], state["num_processes"]) == ("fp16", 2)
    assert "accelerate launch: rank 0 of 2 processes, mixed precision fp16" in doc["notes"]
    assert "train.py: rank 0 of 2 on a fake process group" in doc["notes"]
    ops = {o["op"] for o in doc["ops"]}
    assert {"aten::_amp_foreach_non_finite_check_and_unscale_", "aten::_amp_update_scale_"} <= ops   # fp16's GradScaler
