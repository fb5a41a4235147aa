"""The canonical compile signature (docs/json.md, "compile"): every rule of the issue's contract."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from opscan.trace.forecast import forecast, steps_of  # noqa: E402
from opscan.trace.signatures import CompileLog, signature, written  # noqa: E402

F32 = torch.float32


def t(*shape, dtype=F32):
    return torch.empty(shape, dtype=dtype, device="meta")


def test_the_issues_examples():
    assert signature("aten::addmm", (t(16), t(11, 16), t(16, 16))) == \
        "aten::addmm((16,):float32;(11, 16):float32;(16, 16):float32)"
    assert signature("aten::cat", ([t(23, 64), t(23, 64)], 1)) == \
        "aten::cat([(23, 64):float32,(23, 64):float32];1)"


def test_the_default_overload_is_dropped_and_others_kept():
    assert signature("aten::relu.default", (t(2),)) == "aten::relu((2,):float32)"
    assert signature("aten::add.Tensor", (t(2), t(2))) == "aten::add.Tensor((2,):float32;(2,):float32)"


def test_tensors_scalars_and_dtypes():
    assert written(t()) == "():float32"
    assert written(t(3, dtype=torch.int64)) == "(3,):int64"
    assert written(t(2, 0, 5, dtype=torch.bfloat16)) == "(2, 0, 5):bfloat16"
    assert written(7) == "7" and written(-1) == "-1"
    assert written(True) == "True" and written(False) == "False"
    assert written("mean") == "'mean'"
    assert written(torch.float16) == "float16"
    assert written(torch.strided) == "strided"
    assert written(torch.channels_last) == "channels_last"
    assert written(torch.contiguous_format) == "contiguous_format"


def test_what_is_left_out_leaves_no_separator():
    for value in (1.5, None, torch.device("cpu"), torch.Generator(), 2j, object()):
        assert written(value) is None
    # positional then keyword values, in dispatch order; the left-out ones leave no separator
    assert signature("aten::add.Tensor", (t(2), t(2)), {"alpha": 2}) == \
        "aten::add.Tensor((2,):float32;(2,):float32;2)"
    assert signature("aten::mul.Scalar", (t(4), 0.5)) == "aten::mul.Scalar((4,):float32)"
    assert signature("aten::empty.memory_format", ([2, 3],),
                     {"dtype": F32, "layout": None, "device": torch.device("cpu"), "pin_memory": False}) == \
        "aten::empty.memory_format([2,3];float32;False)"


def test_lists_and_tuples():
    assert written([1, 2, 3]) == "[1,2,3]"
    assert written((4,)) == "[4]"
    assert written(torch.Size([2, 3])) == "[2,3]"
    assert written([]) == "[]"
    assert written([None, t(3, dtype=torch.int64)]) == "[(3,):int64]"   # index's optional tensors
    assert written([[1, 2], [3]]) == "[[1,2],[3]]"
    assert written([1.0, 2]) == "[2]"


def test_an_op_with_no_written_argument_has_no_signature():
    assert signature("aten::rand", ()) is None
    assert signature("aten::scalar_tensor", (1.5,), {"device": torch.device("cpu")}) is None


def test_an_unknown_size_is_written_as_the_tracers_symbol():
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    mode = FakeTensorMode(shape_env=ShapeEnv())
    x = mode.from_tensor(torch.empty(5, 3))
    with mode:
        n = torch.nonzero(x).shape[0]   # an unbacked size
        assert written(torch.empty(n, 3)).startswith("(u")
        assert written(n).startswith("u")


def _segment(log, *calls, key=None):
    for name, args in calls:
        log.record(name, "forward", None, args, {}, [a for a in args if isinstance(a, torch.Tensor)], [],
                   data=False, dynamic=False)
    log.close(key)


def test_steps_of_groups_each_optimizers_steps_and_drops_the_partial_step():
    log = CompileLog()
    _segment(log, ("aten::relu", (t(1),)), key="d")
    _segment(log, ("aten::relu", (t(2),)), key="g")
    _segment(log, ("aten::relu", (t(3),)), key="d")
    _segment(log, ("aten::relu", (t(4),)), key="g")
    _segment(log, ("aten::relu", (t(5),)))           # the step the run stopped in
    steps = steps_of(log, drop_rest=True)
    assert [sorted(s) for s in steps] == [["aten::relu((1,):float32)", "aten::relu((2,):float32)"],
                                          ["aten::relu((3,):float32)", "aten::relu((4,):float32)"]]
    assert len(steps_of(log, drop_rest=False)[-1]) == 3   # a run that ended: the rest joins the last step


def test_a_new_signature_with_no_origin_is_a_number_that_became_a_shape():
    log = CompileLog()
    _segment(log, ("aten::zeros", ([4],)), key="o")
    _segment(log, ("aten::zeros", ([5],)), key="o")
    result = forecast(log, drop_rest=True)
    assert [len(s.signatures) for s in result.steps] == [1, 1]
    assert result.steps[0].new == ()
    (new,) = result.steps[1].new
    assert (new.signature, new.cause) == ("aten::zeros([5])", "number")
    (vary,) = result.varying
    assert (vary.op, vary.cause, vary.steps, vary.new_signatures) == ("aten::zeros", "number", (2,), 1)
