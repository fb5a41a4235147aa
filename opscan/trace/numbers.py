"""Python numbers read from stand-in values, carried into the shapes they make (the compile forecast's
"data-dependent" sizes that no tensor op makes)."""

from __future__ import annotations

import contextlib
import linecache
import re
import sys

import torch

from opscan.trace.signatures import CompileLog


# NOTE [numbers that become shapes]
# `n = int(mask.sum().item()); x[:n]`, `torch.zeros(int(t.max()))`: a Python number read from a
# device value becomes a shape. A fake run has no value to read: `.item()` gets a stand-in (1,
# NOTE [stand-ins]), the same in every step, so the steps run see no new shape, though a real run
# likely makes one every step. So while a trace or a run is in progress, an integer that `.item()`,
# `int()`, `operator.index` or `.tolist()` returns from a stand-in is a StandInNumber, an int that
# carries the line that read it (and keeps it through + - * // % with other ints). A torch call
# given one (an index, a slice bound, a size: `x[:n]`, `torch.zeros(n)`, `x.view(n, -1)`) makes the
# shapes of its ops data-dependent at that line when an output has a size equal to the number (a
# number used as a value, `torch.full((4,), n)`, is not a shape): their outputs carry the origin as
# a nonzero's do, and the forecast lists them as varying ("data-dependent", the `.item()` line). The
# number is lost where Python converts it (`int(n)` makes an exact int of it, and so does `int(t)` of a
# tensor): so the line of a read, and the name its statement assigns (`n = int(t.sum())`), carry the
# origin too, for torch calls from that function at that line or at a line using that name whose
# value is still an int. Lost: `range(n)`, `float(n)`, a C function, a number passed on to another
# function after `int()`: then nothing is said. The stand-in is 1, so a size of 1 that the number
# did not make can be taken for it. The mode is a torch function mode, which makes
# `has_torch_function` true and so turns off inference fast paths (nn.TransformerEncoderLayer's):
# `opscan trace` enters it for a training step only; `opscan run` has torch function modes anyway.
class StandInNumber(int):
    """An int read from a stand-in value (NOTE [numbers that become shapes]); `origin`: its shape origin."""

    origin: tuple = ("data-dependent", None, "")

    def _keep(self, value):
        if type(value) is not int:
            return value
        out = StandInNumber(value)
        out.origin = self.origin
        return out

    def __add__(self, other):
        return self._keep(int.__add__(self, other))

    def __radd__(self, other):
        return self._keep(int.__radd__(self, other))

    def __sub__(self, other):
        return self._keep(int.__sub__(self, other))

    def __rsub__(self, other):
        return self._keep(int.__rsub__(self, other))

    def __mul__(self, other):
        return self._keep(int.__mul__(self, other))

    def __rmul__(self, other):
        return self._keep(int.__rmul__(self, other))

    def __floordiv__(self, other):
        return self._keep(int.__floordiv__(self, other))

    def __mod__(self, other):
        return self._keep(int.__mod__(self, other))

    def __neg__(self):
        return self._keep(int.__neg__(self))



def _number_in(values) -> StandInNumber | None:
    """The first StandInNumber among call arguments (one level into lists, tuples and slices)."""
    for value in values:
        if type(value) is StandInNumber:
            return value
        if isinstance(value, (list, tuple)):
            found = _number_in(value)
            if found is not None:
                return found
        elif isinstance(value, slice):
            found = _number_in((value.start, value.stop, value.step))
            if found is not None:
                return found
    return None


def _numbers(value, origin: tuple):
    if type(value) is int:
        out = StandInNumber(value)
        out.origin = origin
        return out
    if isinstance(value, list):
        return [_numbers(v, origin) for v in value]
    return value


_READS = {torch.Tensor.item, torch.Tensor.__int__, torch.Tensor.__index__, torch.Tensor.tolist}


_ASSIGNED = re.compile(r"\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)")
_NAMES = re.compile(r"[A-Za-z_]\w*")


class NumberShapes(torch.overrides.TorchFunctionMode):
    """Numbers read from stand-ins carry their line into the shapes they make (NOTE [numbers that
    become shapes])."""

    def __init__(self, log: CompileLog) -> None:
        super().__init__()
        self.origins = log.origins
        self.read_lines: dict[tuple, tuple] = {}          # (code, line) of a read -> (origin, offset)
        self.read_names: dict[object, dict[str, tuple]] = {}   # code -> {name assigned a read: origin}
        self._words: dict[tuple, frozenset] = {}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _READS:
            self.origins.read_at = None
            out = func(*args, **kwargs)
            read, self.origins.read_at = self.origins.read_at, None
            if read is None:
                return out
            origin = ("data-dependent", read, "")
            self._remember(sys._getframe(1), origin)
            return _numbers(out, origin)
        number = _number_in(args) or (_number_in(kwargs.values()) if kwargs else None)
        found = (number.origin, int.__int__(number)) if number is not None else None
        if found is None and self.read_names:
            found = self._in_line(sys._getframe(1))
        if found is None:
            return func(*args, **kwargs)
        held, self.origins.number = self.origins.number, found
        try:
            return func(*args, **kwargs)
        finally:
            self.origins.number = held

    def _remember(self, frame, origin: tuple) -> None:
        """A read at `frame`'s line: that line, and the name its statement assigns, carry `origin`
        (`int()` makes an exact int of a StandInNumber: the name keeps what the value cannot)."""
        code, line = frame.f_code, frame.f_lineno
        self.read_lines[(code, line)] = (origin, frame.f_lasti)
        assigned = _ASSIGNED.match(linecache.getline(code.co_filename, line))
        if assigned:
            self.read_names.setdefault(code, {})[assigned.group(1)] = origin

    def _in_line(self, frame) -> tuple | None:
        """(origin, value) of a read on this line or of a name assigned one, used on it; None if none."""
        names = self.read_names.get(frame.f_code)
        if names is None:
            return None
        key = (frame.f_code, frame.f_lineno)
        same = self.read_lines.get(key)
        if same is not None:   # the read's own line: only the calls after it (`torch.zeros(int(t.max()))`)
            return (same[0], None) if frame.f_lasti > same[1] else None
        words = self._words.get(key)
        if words is None:
            words = self._words[key] = frozenset(_NAMES.findall(linecache.getline(frame.f_code.co_filename,
                                                                                  frame.f_lineno)))
        for name in words & names.keys():
            value = frame.f_locals.get(name)
            if type(value) is int:
                return names[name], value
        return None


@contextlib.contextmanager
def number_shapes(log: CompileLog):
    """Inside: the mode of NOTE [numbers that become shapes]."""
    import warnings

    with warnings.catch_warnings():
        # a Tensor.__int__ answered with a StandInNumber: Python warns of an int subclass returned
        warnings.filterwarnings("ignore", message=r"__(int|index)__ returned non-int \(type StandInNumber\)")
        with NumberShapes(log):
            yield


__all__ = ["NumberShapes", "StandInNumber", "number_shapes"]
