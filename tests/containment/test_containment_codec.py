"""opscan/containment/codec.py: what the child sends back is data, decoded by the declared type only.

Every result type a contained child returns round-trips (Hypothesis builds records with every field
set, nested records, tuples, enums, optional parts; the slow test round-trips real traces of the
tests' models and a real `opscan run`); anything else — unknown keys, wrong types, missing fields,
values a vocabulary refuses, deep nesting, text that is not JSON, pickle bytes — is `InvalidData`
and nothing else (never another exception, never an object the type does not declare).
"""

from __future__ import annotations

import ast
import dataclasses
import json
import pickle
import types
import typing
from pathlib import Path
from typing import Any, Union

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opscan.containment import Held, Policy, codec
from opscan.containment.child import Answer, Request
from opscan.containment.codec import InvalidData
from opscan.containment.supervisor import Launch
from opscan.records import DeviceProfile, ModelTrace, OpSource, OpUsage, Status

PKG = Path(__file__).resolve().parents[2] / "opscan"

# What a contained child returns, per call site (`returns=` of process.run): the trace of `opscan
# PATH`, `opscan trace` and every zoo row; `opscan run`'s (trace, notes); `db probe`'s release
# document and `db probe --report`'s (document, seconds per op, counters before, after); the check
# child's bool. Plus what crosses around them: the first frame (Held), the answer, the request and
# parity's launch spec.
RESULT_TYPES = (ModelTrace, tuple[ModelTrace, tuple[str, ...]], dict, tuple[dict, float, dict | None, dict | None],
                bool)
WIRE_TYPES = (Held | None, Answer, Request, Launch, Policy)

_STR = st.text(st.characters(codec="utf-8") | st.sampled_from(["\udcff", "\x00", "é"]), max_size=6)
_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _STR,
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_STR, inner, max_size=3),
                     max_leaves=8)


def full(kind: Any) -> st.SearchStrategy:
    """Values of `kind` with every field of every record set (st.builds leaves defaults alone)."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if dataclasses.is_dataclass(kind):
        hints = typing.get_type_hints(kind)
        return st.builds(kind, **{f.name: full(hints[f.name]) for f in dataclasses.fields(kind) if f.init})
    if origin in (Union, types.UnionType):
        return st.one_of(*(full(a) for a in args))
    if origin is typing.Literal:
        return st.sampled_from(args)
    if origin is tuple and args and args[-1] is Ellipsis:
        return st.lists(full(args[0]), max_size=3).map(tuple)
    if origin is tuple:
        return st.tuples(*(full(a) for a in args))
    if kind is dict or origin is dict:
        return st.dictionaries(_STR, _JSON, max_size=3)
    if kind is Any:
        return _JSON
    if kind is float:
        return st.floats(allow_nan=False)
    if kind is str:
        return _STR
    if kind is type(None):
        return st.none()
    return st.from_type(kind)


@pytest.mark.slow
@pytest.mark.parametrize("kind", RESULT_TYPES + WIRE_TYPES, ids=repr)
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_result_type_round_trips(kind, data):
    value = data.draw(full(kind))
    assert codec.loads(codec.dumps(value), kind) == value


def test_the_declared_type_decides_not_the_data():
    trace = ModelTrace("m.py:build", "train", "neuron", ops=(OpUsage("aten::mm", 2, sources=(OpSource("m.py", 3),)),))
    back = codec.loads(codec.dumps(trace), ModelTrace)
    assert back == trace and type(back.ops) is tuple and type(back.ops[0].sources[0]) is OpSource
    # the same data under `Any` stays plain data: nothing is built
    plain = codec.loads(codec.dumps(trace), Any)["ops"][0]["sources"]
    assert type(plain) is list and type(plain[0]) is dict and plain[0]["path"] == "m.py" and plain[0]["line"] == 3


def _trace_json(**changes) -> dict:
    raw = codec.encode(ModelTrace("m.py:build", "train", "neuron", ops=(OpUsage("aten::mm", 2),)))
    raw.update(changes)
    return raw


@pytest.mark.parametrize("raw,place", [
    (_trace_json(evil=1), "no field 'evil'"),                                          # unknown key
    (_trace_json(ops="aten::mm"), "value.ops: expected a list"),                       # wrong type
    (_trace_json(complete=1), "value.complete: expected a boolean"),                   # int is no bool
    (_trace_json(seconds=True), "value.seconds: expected a number"),                   # bool is no number
    (_trace_json(ops=[{"op": "aten::mm"}]), "lacks its field 'count'"),                # missing field
    (_trace_json(ops=[{"op": "aten::mm", "count": 2, "evil": 1}]), "no field 'evil'"),  # unknown nested key
    ({k: v for k, v in _trace_json().items() if k != "target"}, "lacks its field 'target'"),
    (["m.py:build"], "expected a ModelTrace (an object), got a list"),
    (None, "expected a ModelTrace"),
    ({"__reduce__": ["exec", ["print(1)"]]}, "no field '__reduce__'"),
])
def test_data_that_does_not_fit_the_declared_type_is_invalid(raw, place):
    with pytest.raises(InvalidData) as info:
        codec.loads(json.dumps(raw).encode(), ModelTrace)
    assert place in str(info.value)


def test_a_value_a_vocabulary_refuses_is_invalid():
    from opscan.records import Coverage

    raw = codec.encode(Coverage("aten::mm", Status.NATIVE))
    raw["status"] = "works-great"
    with pytest.raises(InvalidData, match="not a Status"):
        codec.loads(json.dumps(raw).encode(), Coverage)


@pytest.mark.parametrize("data", [
    pickle.dumps(ModelTrace("m", "train", "neuron")),            # pickle bytes
    b"\x80\x04\x95",                                             # the start of a pickle
    b"[" * 100_000 + b"]" * 100_000,                             # nesting past any recursion limit
    b'{"target": "m", "mode": "train", "device": "n", "seconds": ' + b"9" * 5000 + b"}",   # a 5000-digit number
    b"\xff\xfe not utf-8",
    b"",
    b"NaN garbage",
])
def test_bytes_that_are_not_json_are_invalid(data):
    with pytest.raises(InvalidData):
        codec.loads(data, ModelTrace)


def test_nesting_past_the_limit_is_invalid_even_where_any_data_is_allowed():
    deep: Any = "x"
    for _ in range(codec.MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(InvalidData, match="nested more than"):
        codec.loads(json.dumps({"doc": deep}).encode(), dict)
    with pytest.raises(InvalidData, match="nested more than"):
        codec.loads(json.dumps(deep).encode(), Any)


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(raw=_JSON | st.dictionaries(st.sampled_from([f.name for f in dataclasses.fields(ModelTrace)] + ["x"]),
                                   _JSON, max_size=6))
def test_any_json_decodes_as_a_trace_or_is_invalid_never_an_other_exception(raw):
    data = json.dumps(raw).encode()
    for kind in (ModelTrace, Answer, Held | None, tuple[ModelTrace, tuple[str, ...]]):
        try:
            value = codec.loads(data, kind)
        except InvalidData:
            continue
        assert value is None or isinstance(value, (ModelTrace, Answer, Held, tuple))


def test_what_is_not_data_cannot_be_sent():
    class Evil:
        def __reduce__(self):
            return (exec, ("open('/tmp/never', 'w')",))

    for value in (Evil(), ModelTrace, {1: "int key"}, object(), {"ok": Evil()}):
        with pytest.raises(TypeError):
            codec.dumps(value)


def test_the_request_keeps_its_types_and_rebuilds_only_opscan_records():
    from opscan.targets.call_sites import Call, Usage

    kwargs = {"target": "m.py:build", "profile": DeviceProfile("torchneuron==2.33.0", native_ops=("aten::mm",)),
              "inputs": ("x:float32[2,8]",), "gpu_only": ("flash_attn",), "report": Path("/tmp/r.json"),
              "call_sites": ((("m.py", "Net"), Usage((), Call(("x",), (), "t.py:3"))),),
              "env": {"A": "1"}, "counts": {1: 2}, "steps": None, "status": Status.NATIVE}
    back = codec.decode_tagged(json.loads(json.dumps(codec.encode_tagged(kwargs))))
    assert back == kwargs and type(back["report"]) is type(kwargs["report"])
    for name in ("builtins:object", "os:system", "subprocess:Popen", "pathlib:Path"):
        with pytest.raises(InvalidData, match="only opscan's own records"):
            codec.decode_tagged({"$": "record", "type": name, "v": {}})
    with pytest.raises(InvalidData, match="not a record"):
        codec.decode_tagged({"$": "record", "type": "opscan.containment.codec:loads", "v": {}})


@pytest.mark.slow
def test_every_contained_call_declares_what_it_returns():
    """Each call of process.run in opscan names the type of its answer (`returns=`): none takes
    the data as it comes."""
    missing = []
    for path in sorted(PKG.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                 and node.module == "opscan.containment.process" for alias in node.names if alias.name == "run"}
        if path.name == "process.py" and path.parent.name == "containment":
            names = {"run"}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names \
                    and not any(k.arg == "returns" for k in node.keywords):
                missing.append(f"{path.relative_to(PKG)}:{node.lineno}")
    assert missing == []


@pytest.mark.slow
def test_real_traces_of_the_tests_models_round_trip(tmp_path):
    """Real traces (nanoGPT with its Triton and custom ops, a tiny Llama folder, a compiled model,
    a data-dependent model, and `opscan run` of a training script) as the child returns them."""
    pytest.importorskip("torch")
    from opscan.targets.loader import trace_target
    from opscan.trace.run import run_script

    root = Path(__file__).resolve().parents[2]
    traces = [trace_target("examples/nanogpt/model.py:build", project_root=str(root / "examples" / "nanogpt")),
              trace_target(f"hf:{root / 'examples/models/hf/llama-tiny'}", mode="both"),
              trace_target(f"{root / 'examples/models/data_dependent.py'}:make_router"),
              trace_target(f"{root / 'examples/models/custom_ops.py'}:make_with_fake")]
    run = run_script(str(root / "tests/run/fixtures/tail_batch.py"), (), steps=3, cwd=str(tmp_path))
    for trace in traces:
        assert trace.ops and codec.loads(codec.dumps(trace), ModelTrace) == trace
    assert codec.loads(codec.dumps(run), tuple[ModelTrace, tuple[str, ...]]) == tuple(run)
    assert any(t.stand_ins for t in traces) and run[0].compile is not None
