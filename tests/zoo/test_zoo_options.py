"""The zoo's tracer options are the one translation of a model's configuration (phases.tracer_options)."""

from __future__ import annotations

import pytest

from opscan.config import ModelConfig
from opscan.pipeline.phases import tracer_options
from opscan.records import DeviceProfile
from opscan.zoo.execution import job_options, trace_key
from opscan.zoo.jobs import DEFAULT_TRACER
from opscan.zoo.selection import ZooTarget

PROFILE = DeviceProfile(name="fakeneuron==1.0", device="neuron", native_ops=("aten::mm",))
TARGET = ZooTarget("llama", "hf:/c/causal-lm/llama", "causal-lm")


def test_a_zoo_model_is_traced_with_the_options_opscan_trace_gives_the_same_model():
    run = {"mode": "both", "batch": 1, "seq_len": 16, "device": "neuron", "profile": PROFILE}
    options = job_options(TARGET, run, DEFAULT_TRACER)
    model = ModelConfig(target=TARGET.target, mode="both", batch=1, seq_len=16)
    assert options == tracer_options(model, None, PROFILE, device="neuron")
    # `opscan trace` passes its project; the zoo's models belong to none: that is the one difference
    traced = tracer_options(model, "proj", PROFILE, device="neuron")
    assert {k for k in options if options[k] != traced[k]} == {"project_root"}
    assert options["project_root"] is None and options["optimizer"] == "adamw" and options["inputs"] == ()


def test_unset_run_options_are_the_model_config_defaults():
    options = job_options(TARGET, {}, DEFAULT_TRACER)
    assert options == tracer_options(ModelConfig(target=TARGET.target), None, None)
    assert options["mode"] == "train" and options["batch"] is None and options["device"] == "neuron"


def test_an_option_that_is_not_a_model_setting_is_refused():
    with pytest.raises(ValueError, match="fsdp_size"):
        job_options(TARGET, {"mode": "train", "fsdp_size": 2}, DEFAULT_TRACER)


def test_the_trace_key_follows_the_tracer_options():
    tools = {"opscan": "x", "torch": "y", "transformers": "z"}
    one = trace_key(TARGET, job_options(TARGET, {"batch": 1}, DEFAULT_TRACER), DEFAULT_TRACER, tools)
    two = trace_key(TARGET, job_options(TARGET, {"batch": 2}, DEFAULT_TRACER), DEFAULT_TRACER, tools)
    again = trace_key(TARGET, job_options(TARGET, {"batch": 1}, DEFAULT_TRACER), DEFAULT_TRACER, tools)
    assert one != two and one == again
