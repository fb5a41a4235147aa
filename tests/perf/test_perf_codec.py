"""The cache's JSON codec round-trips the scan's result types and rejects what does not fit."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from opscan.model import Finding, Location
from opscan.scan.codec import decode, encode


@dataclass(frozen=True)
class Result:
    path: str
    findings: tuple[Finding, ...] = ()
    lines: int = 0
    ratio: float = 0.0
    cell: int | None = None
    pair: tuple[str, int] = ("", 0)


def _sample() -> Result:
    loc = Location("a/b.py", 3, 5, 3, 12, cell=2)
    finding = Finding("OPS101", "hardcoded-cuda-device", "device-string", "error",
                      "device pinned to 'cuda'", loc, fix="use neuron", guarded=True,
                      snippet="x.to('cuda')  # é")
    return Result("a/b.py", (finding, finding), lines=40, ratio=0.5, pair=("x", 1))


def test_round_trip_through_json() -> None:
    value = _sample()
    text = json.dumps(encode(value))
    assert decode(Result, json.loads(text)) == value
    assert decode(Result, json.loads(json.dumps(encode(Result("x.py"))))) == Result("x.py")


@pytest.mark.parametrize("mutate", [
    lambda d: d.pop("path"),
    lambda d: d.update(lines="40"),
    lambda d: d.update(extra=1),
    lambda d: d["findings"][0].update(location=[1, 2]),
    lambda d: d["findings"][0]["location"].update(cell="2"),
    lambda d: d.update(pair=["x"]),
    lambda d: d.update(findings={"a": 1}),
])
def test_what_does_not_fit_is_refused(mutate) -> None:
    data = json.loads(json.dumps(encode(_sample())))
    mutate(data)
    with pytest.raises(ValueError):
        decode(Result, data)


def test_unencodable_values_are_refused() -> None:
    with pytest.raises(TypeError):
        encode(Result("x", lines=object()))  # type: ignore[arg-type]
