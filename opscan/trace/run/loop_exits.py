"""Loop exits of an `opscan run`: a loop whose data-dependent exit the `.item()` stand-ins never take
gets that exit taken, where the run would otherwise stop (NOTE [forced loop exits])."""

from __future__ import annotations

from opscan.trace import recorder as recorders
from opscan.trace.standins import stand_in

# NOTE [forced loop exits]
# `.item()` of a value the run does not have is a stand-in (1.0, 1, False: NOTE [stand-ins]), the same
# at every iteration. A loop that ends on that value (`for i in count(1): ... loss = out.item(); if
# loss < 1e-3: break`) never ends: after MAX_STAND_INS_PER_SITE stand-ins at one line the trace stops
# (StandInLoop), and what the script does after the loop is missing. The comparison is Python's, on a
# Python number, so the run cannot see which value would end the loop. In a script run, when that
# stop is reached at an `.item()` line, the stand-in there becomes the other side of the threshold
# that loops test (0.0 for a float, 0 for an integer: a loss, an error, a change below a tolerance or a
# count of remaining items; the other truth value for a bool) and the run goes on. It is counted as
# a stand-in of kind `loop-exit` with its line and noted. Sound as far as it goes: it applies only
# where the run would stop, so it never changes a run that ends on its own; by then every iteration
# dispatched the same ops, so the loop's ops are all recorded; and if the loop still does not end
# (`while acc < 0.99`, `if loss == 0: continue`), the run stops after as many stand-ins again, as
# before. What it cannot know is the real run's number of iterations or final value: code after the
# loop that branches on that value sees the stand-in.


class LoopExits:
    """The `.item()` lines of one run whose loop exit was forced."""

    def __init__(self) -> None:
        self.forced: dict[tuple, tuple] = {}   # (op name, source) -> (value, text)

    def stand_in(self, recorder, func, name, source, args, kwargs):
        """The stand-in output of a data-dependent op, counted; an `.item()` stand-in repeated
        MAX_STAND_INS_PER_SITE times at one line becomes its forced loop exit."""
        site = (name, source)
        out, kind, value = stand_in(func, args, kwargs, recorder.from_all(args))
        if site in self.forced:
            out, text = self.forced[site]
            recorder.count_stand_in(name, "loop-exit", text, source)
            return out
        try:
            recorder.count_stand_in(name, kind, value, source)
        except recorders.StandInLoop:
            if kind != "item":
                raise
            recorder.stand_ins[(name, kind, value, source)] -= 1
            forced = _other_side(out)
            text = f"{forced!r} (loop exit forced after {recorders.MAX_STAND_INS_PER_SITE} iterations)"
            self.forced[site] = (forced, text)
            recorder.count_stand_in(name, "loop-exit", text, source)
            return forced
        return out

    def notes(self) -> list[str]:
        return [f"loop exit forced at {source.path}:{source.line} after {recorders.MAX_STAND_INS_PER_SITE} "
                f"iterations: .item() answered {value!r} there (a stand-in)"
                for (_, source), (value, _) in sorted(self.forced.items(), key=lambda kv: str(kv[0][1]))
                if source is not None]


def _other_side(value):
    """The value that ends a loop the stand-in `value` did not end (NOTE [forced loop exits])."""
    if isinstance(value, bool):
        return not value
    return 0.0 if isinstance(value, float) else 0


__all__ = ["LoopExits"]
