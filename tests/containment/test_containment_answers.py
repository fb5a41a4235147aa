"""Nothing crosses back from a contained child but data, and the child holds nothing of the parent.

A child's code writes planted answers on every pipe it can write to (opscan's result pipe among
them): an object whose `__reduce__` calls exec, sent through a multiprocessing Connection found with
gc (what ran code in opscan before) and as raw or framed pickle bytes, a frame announcing a
terabyte, one over the size limit, one nested 200,000 deep, wrong types, unknown keys, a made-up
error class, a `how` no child may say. Each ends as "invalid" (a "crash" row in the zoo, one error
line for `opscan PATH` / `trace`), and the exploit's marker file is never written: nothing ran in
the parent. Through each start method. The child holds no descriptor of the parent but its own
pipe (escape 5 of issue 41: a resource tracker's pipe took orders from the child).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from opscan.containment.outcome import outcome, result_of
from opscan.containment.process import START_METHODS, Limits, run
from opscan.errors import ModelProcessError, OpscanError, TraceError
from opscan.records import ModelTrace

HERE = Path(__file__).resolve().parent
KINDS = ("connection", "pickle", "framed-pickle", "huge", pytest.param("over-limit", marks=pytest.mark.slow), "deep",
         "wrong-types", "unknown-keys", "not-a-how")
# spawn in the quick loop; the other start methods with --slow (each case starts a child)
METHODS = [m if m == "spawn" else pytest.param(m, marks=pytest.mark.slow) for m in START_METHODS]


@pytest.fixture(autouse=True)
def _targets_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))   # children get the parent's sys.path


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("kind", KINDS)
def test_a_planted_answer_runs_nothing_in_the_parent_and_ends_invalid(tmp_path, method, kind):
    marker = tmp_path / "pwned"
    limits = Limits(timeout=60, start_method=method)
    ended = run("process_targets:planted_answer", {"marker": str(marker), "kind": kind}, limits, returns=ModelTrace)
    assert not marker.exists()
    assert ended.how == "invalid", ended
    assert ended.value is None and ended.containment is not None and ended.containment.all
    with pytest.raises(ModelProcessError, match="sent invalid data"):
        result_of(ended, "trace of evil.py:build", limits)
    assert outcome("evil", ended, limits).status == "crash"


def test_a_made_up_error_class_is_never_looked_up_outside_opscan_errors(tmp_path):
    marker = tmp_path / "pwned"
    limits = Limits(timeout=60)
    ended = run("process_targets:planted_answer", {"marker": str(marker), "kind": "made-up-error"}, limits,
                returns=ModelTrace)
    assert ended.how == "raised" and ended.opscan_error[0] == "Path"
    with pytest.raises(TraceError) as info:   # not Path(...) raised, nor an exception trace
        result_of(ended, "trace of evil.py:build", limits)
    assert type(info.value) is TraceError and not marker.exists()


@pytest.mark.slow
def test_a_planted_error_is_one_line_of_bounded_length(tmp_path):
    """An answer may be the model's own: its error, place and class names are cut to a line's length."""
    limits = Limits(timeout=60)
    ended = run("process_targets:planted_answer", {"marker": str(tmp_path / "pwned"), "kind": "long-error"}, limits,
                returns=ModelTrace)
    assert ended.how == "raised" and len(ended.error) <= 4000 and len(ended.where) <= 4000
    assert len(ended.error_types) <= 32 and len(ended.opscan_error[1]) <= 4000 and len(ended.opscan_error[2]) <= 4000
    with pytest.raises(OpscanError) as info:   # the TargetError it names, cut to size
        result_of(ended, "trace of evil.py:build", limits)
    assert type(info.value).__name__ == "TargetError" and len(str(info.value)) <= 10_000


@pytest.mark.parametrize("method", METHODS)
def test_a_returned_object_is_not_data_and_is_not_sent(tmp_path, method):
    marker = tmp_path / "pwned"
    ended = run("process_targets:return_an_object", {"marker": str(marker)}, Limits(timeout=60, start_method=method),
                returns=ModelTrace)
    assert (ended.how, ended.error_types) == ("raised", ("TypeError",)) and "could not send" in ended.error
    assert not marker.exists()


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("contained", [True, False], ids=["contained", "not-contained"])
def test_the_child_holds_no_descriptor_of_the_parent_but_its_own_pipe(method, contained):
    """A pipe and a socket the parent holds (a resource tracker's, a server's) are not the child's,
    even inheritable ones and through `fork`."""
    from opscan.containment import Policy

    read_end, write_end = os.pipe()
    os.set_inheritable(write_end, True)
    server = socket.socket()
    server.set_inheritable(True)
    try:
        ended = run("process_targets:open_descriptors", {},
                    Limits(timeout=60, start_method=method, containment=Policy(enabled=contained)))
        theirs = {f"pipe:[{os.fstat(write_end).st_ino}]", f"socket:[{os.fstat(server.fileno()).st_ino}]"}
    finally:
        os.close(read_end)
        os.close(write_end)
        server.close()
    assert ended.how == "returned", ended
    held = [line.split(" ", 1)[1] for line in ended.value]
    assert not set(held) & theirs
    assert [t for t in held if t.startswith(("pipe:", "socket:"))] == [t for t in held if t.startswith("pipe:")][:1]


@pytest.mark.slow
@pytest.mark.parametrize("method", START_METHODS)
def test_a_resource_tracker_of_the_parent_takes_no_order_from_the_child(tmp_path, method):
    """The parent runs a multiprocessing resource tracker (as multiprocessing's spawn children made
    it do); the child writes `REGISTER:/victim:shared_memory` on every pipe it holds: the host's
    /dev/shm/victim outlives the parent's tracker."""
    if not Path("/dev/shm").is_dir():
        pytest.skip("needs /dev/shm")
    import subprocess
    import sys

    victim = f"opscan-victim-{os.getpid()}-{method}"
    (Path("/dev/shm") / victim).write_bytes(b"host data")
    code = f"""
import sys
sys.path[:0] = [{str(HERE.parents[1])!r}, {str(HERE)!r}]
from multiprocessing import resource_tracker
resource_tracker.ensure_running()          # the parent's tracker, with its pipe
from opscan.containment.process import Limits, run
ended = run("process_targets:tell_the_tracker", {{"victim": "/{victim}"}}, Limits(timeout=60, start_method={method!r}))
print(ended.how, ended.value)
"""
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert (Path("/dev/shm") / victim).read_bytes() == b"host data"   # the tracker never heard of it
    finally:
        (Path("/dev/shm") / victim).unlink(missing_ok=True)
