"""The zero-configuration tries (opscan/targets/tries.py): each try is a result, never an edit of the caller's notes."""

from __future__ import annotations

import pytest

from opscan.errors import ModelProcessError, TargetError, TraceError
from opscan.records import Discovery, ModelCandidate, ModelTrace, OpUsage
from opscan.targets import tries
from opscan.targets.tries import Attempt, ZeroConfig

MM = OpUsage("aten::mm", 1, ("forward",))
FOUND = Discovery(traced=("repo:a.py:A", "repo:b.py:B", "hf:models/c"),
                  candidates=(ModelCandidate("repo:a.py:A", "repo-class", "a.py", 1),
                              ModelCandidate("repo:b.py:B", "repo-class", "b.py", 1),
                              ModelCandidate("hf:models/c", "hf-folder", "models/c")))


def _raise(exc):
    def run():
        raise exc
    return run


def test_a_target_that_cannot_be_built_is_an_attempt_with_its_reason():
    zero = ZeroConfig(FOUND)
    got = zero.attempt(_raise(TargetError("cannot choose a value for the required argument 'n'\nmore")),
                       "repo:a.py:A")
    assert got == Attempt("repo:a.py:A", None, "cannot choose a value for the required argument 'n'")
    assert not got.traced
    assert got.note == "not built: repo:a.py:A: cannot choose a value for the required argument 'n'"
    crashed = zero.attempt(_raise(ModelProcessError("repo:b.py:B: crashed")), "repo:b.py:B")
    assert crashed.stop == "crashed"
    assert zero.failed == [("repo:a.py:A", "cannot choose a value for the required argument 'n'"),
                           ("repo:b.py:B", "crashed")]


def test_a_guessed_construction_whose_step_stopped_before_any_op_gives_the_stop_and_the_hint_apart():
    stopped = ModelTrace("repo:a.py:A", "train", "neuron", complete=False,
                         stopped_at="(before any op) at a.py:3: ValueError: no", stop_hint="--mode inference")
    got = ZeroConfig(FOUND).attempt(lambda: stopped, "repo:a.py:A")
    assert (got.trace, got.stop, got.hint) == (
        None, "its step stopped before any op: (before any op) at a.py:3: ValueError: no", "--mode inference")
    assert got.note == ("not built: repo:a.py:A: its step stopped before any op: "
                        "(before any op) at a.py:3: ValueError: no")
    # a model folder is a model, however far its step got
    folder = ModelTrace("hf:models/c", "train", "neuron", complete=False, stopped_at="x at y:1: E: e", stop_hint="z")
    assert ZeroConfig(FOUND).attempt(lambda: folder, "hf:models/c").trace is folder


def test_a_traced_try_says_how_it_was_found_and_two_traced_end_the_tries():
    zero = ZeroConfig(FOUND)
    first = zero.attempt(lambda: ModelTrace("repo:a.py:A", "train", "neuron", (MM,)), "repo:a.py:A")
    assert first.traced and first.note == f"traced with no configuration: repo:a.py:A: {tries.REPO_KINDS['repo-class']}"
    assert not zero.done()
    zero.attempt(lambda: ModelTrace("hf:models/c", "train", "neuron", (MM,)), "hf:models/c")
    assert zero.done()                                 # MAIN_MODELS traced
    assert zero.failed == []


def test_the_engine_failing_is_not_an_attempt_and_inactive_tries_never_end():
    zero = ZeroConfig(FOUND)
    with pytest.raises(TraceError):
        zero.attempt(_raise(TraceError("tracing needs PyTorch")), "repo:a.py:A")
    assert zero.attempts == []
    assert not ZeroConfig(None) and not ZeroConfig(None).done()
