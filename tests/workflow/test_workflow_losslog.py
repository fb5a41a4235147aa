"""Loss-log reading: every accepted format, and one-line errors naming the file and line."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opscan.errors import InputError
from opscan.workflow.losslog import parse_loss_log, read_loss_log

EXPECTED = ((0, 2.5), (10, 2.0), (20, 1.5))


@pytest.mark.parametrize("text, fmt", [
    ('{"0": 2.5, "10": 2.0, "20": 1.5}', "json-object"),
    ('{\n  "20": 1.5,\n  "0": 2.5,\n  "10": 2.0\n}\n', "json-object"),
    ('[{"step": 0, "loss": 2.5}, {"step": 10, "loss": 2.0}, {"step": 20, "loss": 1.5}]', "json-array"),
    ('{"step": 0, "loss": 2.5}\n{"step": 10, "loss": 2.0, "lr": 0.1}\n\n{"step": 20, "loss": 1.5}\n',
     "json-lines"),
    ("step,loss\n0,2.5\n10,2.0\n20,1.5\n", "csv"),
    ("epoch,loss,step\n1,2.5,0\n1,2.0,10\n2,1.5,20\n", "csv"),
    ("0,2.5\n10,2.0\n20,1.5\n", "csv"),
    ("step\tloss\n0\t2.5\n10\t2.0\n20\t1.5\n", "csv"),
])
def test_formats_are_detected(text, fmt):
    log = parse_loss_log(text, "run.log")
    assert log.format == fmt
    assert log.losses == EXPECTED


def test_single_json_lines_record():
    log = parse_loss_log('{"step": 3, "loss": 0.5}\n', "one.jsonl")
    assert log.format == "json-lines" and log.losses == ((3, 0.5),)


def test_non_finite_losses_are_read():
    log = parse_loss_log('{"0": NaN, "1": Infinity, "2": "-inf", "3": "nan"}', "x.json")
    values = dict(log.losses)
    assert math.isnan(values[0]) and values[1] == math.inf and values[2] == -math.inf
    assert math.isnan(values[3])
    csv_log = parse_loss_log("step,loss\n0,nan\n1,inf\n", "x.csv")
    assert math.isnan(dict(csv_log.losses)[0]) and dict(csv_log.losses)[1] == math.inf


def test_read_from_file(tmp_path):
    path = tmp_path / "base.json"
    path.write_text('{"0": 1.0, "5": 0.5}')
    log = read_loss_log(path)
    assert log.path == str(path) and log.losses == ((0, 1.0), (5, 0.5))


@pytest.mark.parametrize("text, line, cause", [
    ('{"step": 0, "loss": 1.0}\n{"step": 1, "loss": 0.9}\n{"step": 2, "loss": oops}\n', 3,
     "not a JSON record"),
    ('{"step": 0, "loss": 1.0}\n{"step": 1}\n', 2, '"step" and "loss"'),
    ("step,loss\n0,1.0\n1,abc\n", 3, "expected a number"),
    ("step,loss\n0,1.0\n0,0.9\n", 3, "appears twice"),
    ("step,loss\n0,1.0\n-1,0.9\n", 3, "negative"),
    ("step,loss\n0,1.0\n1.5,0.9\n", 3, "not an integer"),
    ("step,loss\n0\n", 2, "column"),
    ("hello world\nthis is not a log\n", 1, "not a loss log"),
    ('\n{"0": 1.0,\n "1": 2.0,\n}\n', 4, "not valid JSON"),
])
def test_errors_name_file_and_line(text, line, cause):
    with pytest.raises(InputError) as info:
        parse_loss_log(text, "run.log")
    message = str(info.value)
    assert message.startswith(f"run.log:{line}: "), message
    assert cause in message
    assert "\n" not in message


@pytest.mark.parametrize("text, cause", [
    ("", "empty"),
    ("   \n\n", "empty"),
    ('{"0": 1.0, "0": 2.0}', "appears twice"),
    ('{"0": null}', "expected a number"),
    ('{"zero": 1.0}', "not an integer"),
    ("[1, 2, 3]", "record"),
    ('"just a string"', "not a loss log"),
    ("{}", "no steps"),
])
def test_errors_name_the_file(text, cause):
    with pytest.raises(InputError) as info:
        parse_loss_log(text, "run.json")
    assert str(info.value).startswith("run.json")
    assert cause in str(info.value)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(InputError, match="not found"):
        read_loss_log(tmp_path / "nope.json")
    with pytest.raises(InputError, match="directory"):
        read_loss_log(tmp_path)

LOSSES = st.dictionaries(st.integers(min_value=0, max_value=10**9),
                         st.floats(allow_nan=False, allow_infinity=False, width=64),
                         min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(LOSSES, st.sampled_from(["json-object", "json-lines", "csv"]))
def test_round_trip_every_format(losses, fmt):
    if fmt == "json-object":
        text = json.dumps({str(k): v for k, v in losses.items()})
    elif fmt == "json-lines":
        text = "".join(json.dumps({"step": k, "loss": v}) + "\n" for k, v in losses.items())
    else:
        text = "step,loss\n" + "".join(f"{k},{v!r}\n" for k, v in losses.items())
    log = parse_loss_log(text, "x")
    assert log.format == fmt and log.losses == tuple(sorted(losses.items()))
