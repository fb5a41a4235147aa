"""opscan.containment.process (and opscan.containment.outcome): the one containment mechanism of
`opscan trace`, `opscan PATH` and `opscan zoo`.

`run` returns how the child ended (an Ended), whatever the child did; its start method is a
parameter; it never imports torch in the parent; and it clamps the memory limit to an existing
address-space limit (a container's, `ulimit -v`) instead of failing to set one above it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from opscan.errors import ModelProcessError, TargetError, UsageError
from opscan.containment.process import START_METHODS, Limits, run
from opscan.containment.outcome import result_of

HERE = Path(__file__).resolve().parent
GIB = 1 << 30


@pytest.fixture(autouse=True)
def _targets_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))   # children get the parent's sys.path


@pytest.mark.parametrize("method", START_METHODS)
def test_start_method_is_a_parameter(method):
    ended = run("process_targets:limits_seen", {}, Limits(timeout=120, max_memory=None, start_method=method))
    assert ended.how == "returned", ended
    assert ended.value["pid"] != os.getpid()


def test_unknown_start_method_is_a_usage_error():
    with pytest.raises(UsageError, match="start method 'threads'"):
        run("process_targets:limits_seen", {}, Limits(start_method="threads"))


def test_timeout_is_a_result_not_an_exception():
    ended = run("process_targets:hang", {}, Limits(timeout=2, max_memory=None, start_method="fork"))
    assert ended.how == "timeout" and ended.value is None
    assert ended.seconds >= 2
    with pytest.raises(ModelProcessError, match="--timeout 2"):
        result_of(ended, "trace of hang.py:build", Limits(timeout=2))


def test_crash_is_a_result_with_the_signal_and_the_last_output():
    ended = run("process_targets:shout_and_abort", {}, Limits(timeout=60, max_memory=None, start_method="spawn"),
                capture_output=True)
    assert (ended.how, ended.signal) == ("signal", "SIGABRT"), ended
    assert "pretend assertion failed" in ended.output
    with pytest.raises(ModelProcessError, match="died of SIGABRT"):
        result_of(ended, "trace of m.py:build", Limits())


def test_raised_exceptions_carry_their_classes():
    ended = run("process_targets:fail_import", {}, Limits(timeout=60, max_memory=None, start_method="fork"))
    assert ended.how == "raised"
    assert ended.error_types[:2] == ("ModuleNotFoundError", "ImportError")
    assert "no_such_module_for_opscan_tests" in ended.error and "process_targets.py:" in ended.where
    ended = run("process_targets:raise_opscan_error", {},
                Limits(timeout=60, max_memory=None, start_method="fork"))
    assert ended.opscan_error == ("TargetError", "cannot import 'nope'", "model.py", 3)
    with pytest.raises(TargetError, match="cannot import 'nope'"):
        result_of(ended, "trace", Limits())


def _in_fresh_python(code: str) -> dict:
    """Run `code` in a new interpreter (its own rlimits and sys.modules); it prints one JSON line."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # this checkout's opscan first (not an installed copy of another checkout)
    prelude = f"import sys, json, resource\nsys.path[:0] = [{str(HERE.parents[1])!r}, {str(HERE)!r}]\n"
    proc = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=600, env=env, cwd=HERE)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


# Address space of a fresh interpreter that imported opscan.containment.process, plus room for spawn children.
_SET_LIMIT = """
with open("/proc/self/status") as f:
    vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
LIMIT = (vm + 3 * (1 << 30)) // (1 << 20) * (1 << 20)
resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_memory_limit_is_clamped_to_an_existing_lower_limit():
    out = _in_fresh_python(_SET_LIMIT + """
from opscan.containment.process import Limits, run
asked = Limits(timeout=120, max_memory=64 << 30, start_method="spawn")
ended = run("process_targets:limits_seen", {}, asked)
print(json.dumps({"limit": LIMIT, "how": ended.how, "child": ended.value and ended.value["as"],
                  "max_memory": ended.max_memory, "clamped": ended.clamped}))
""")
    assert out["how"] == "returned", out
    assert out["child"] == [out["limit"], out["limit"]]   # neither raised nor replaced by a hard 64G
    assert out["max_memory"] == out["limit"] and out["clamped"] is True


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_allocation_past_the_existing_limit_names_it():
    out = _in_fresh_python(_SET_LIMIT + """
from opscan.containment.process import Limits, run
from opscan.containment.outcome import result_of
asked = Limits(timeout=120, max_memory=64 << 30, start_method="spawn")
ended = run("process_targets:allocate", {"gib": 64}, asked)
try:
    result_of(ended, "trace of big.py:build", asked)
except Exception as exc:
    message = str(exc)
print(json.dumps({"how": ended.how, "message": message}))
""")
    assert out["how"] == "out-of-memory", out
    assert "--max-memory 64G, clamped to the existing address-space limit" in out["message"]


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_zoo_models_trace_under_an_existing_lower_limit():
    """Under a ulimit below the zoo's --max-memory every model used to be a "crash"."""
    out = _in_fresh_python(_SET_LIMIT + """
from opscan.containment.process import Limits
from opscan.zoo.jobs import Job, trace_job
from tests.support.zoo_fakes import FAKE_TRACER
outcome = trace_job(Job("fake:alpha", "fake:alpha"), FAKE_TRACER,
                    Limits(timeout=120, max_memory=64 << 30, start_method="spawn"))
print(json.dumps({"status": outcome.status, "error": outcome.error}))
""")
    assert out == {"status": "ok", "error": ""}


@pytest.mark.slow
@pytest.mark.parametrize("method", START_METHODS)
def test_the_parent_never_imports_torch(method):
    pytest.importorskip("torch")
    out = _in_fresh_python(f"""
from opscan.containment.process import Limits, run
ended = run("process_targets:imports_torch", {{}}, Limits(timeout=300, max_memory=None, start_method={method!r}),
            preload=("torch",))
print(json.dumps({{"how": ended.how, "torch_in_parent": "torch" in sys.modules}}))
""")
    assert out == {"how": "returned", "torch_in_parent": False}


def test_one_package_isolates_model_code():
    """Only opscan/containment/ starts child processes for model code and sets their limits: the
    child's own side sets them (child.py; the supervisor limits the size of the files they write,
    limits.py the tree's processes, from the address-space limit child.py set), children.py and
    forkserver.py start them, the supervisor forks the contained processes."""
    package = HERE.parents[1] / "opscan"
    users = {}
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for needle in ("setrlimit", "RLIMIT_AS", "os.fork(", "pass_fds", "unshare(", "import multiprocessing"):
            if needle in text:
                users.setdefault(needle, []).append(path.relative_to(package).as_posix())
    assert users == {
        "setrlimit": ["containment/child.py", "containment/limits.py", "containment/supervisor.py"],
        "RLIMIT_AS": ["containment/child.py", "containment/limits.py", "containment/process.py"],
        "os.fork(": ["containment/children.py", "containment/forkserver.py", "containment/supervisor.py"],
        "pass_fds": ["containment/children.py", "containment/forkserver.py"],
        "unshare(": ["containment/namespaces.py", "containment/supervisor.py"],
        # the scan's and fix's worker pools (no project code), and `opscan run`'s DataLoader workers
        # loaded in the script's process: never the child of project code (no pickle on its way back);
        # trace/run/workers.py runs inside the contained child, where it replaces the script's own
        # worker processes (mp.Process, torch.multiprocessing.spawn) by a call in that process
        "import multiprocessing": ["fix/files.py", "scan/workers.py", "trace/run/workers.py"],
    }
    assert not (package / "zoo" / "isolate.py").exists()
