"""The model path on research code (issue 42, part B): each cause the issue saw in public research
repositories, on a small fixture under tests/targets/repos/ written the way such code is written.

- the real model is never tried: a factory the training script picks by name (byname), a
  `hubconf.py` entry behind more ready factories than MAX_TRIES, toy `__main__` demos of helper files;
- a constructor that moves itself (`self.to(self.device)`) on the meta device (todevice);
- a `__main__` demo run with opscan's own command line (demoargs);
- a model taking the options object its training script's argparse returns (optsmodel).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from opscan.targets.discovery import candidates
from opscan.targets.tries import MAX_TRIES

pytest.importorskip("torch")

REPOS = Path(__file__).resolve().parent / "repos"
TRAIN = {"forward", "backward", "optimizer"}


def _complete(report: dict) -> list[str]:
    return [t["target"] for t in report["traces"] if t["complete"]]


@pytest.mark.slow
def test_a_factory_the_training_script_picks_by_name_is_traced_with_its_step(repo_report, report_phases):
    report = repo_report(REPOS / "byname")
    assert _complete(report)[0] == "repo:models/__init__.py:resnet20"   # --arch's default, not a part
    assert TRAIN <= report_phases(report)
    assert any(n.startswith("traced with no configuration: repo:models/__init__.py:resnet20: ")
               and "the default of --arch" in n for n in report["notes"])
    step = {p["part"]: (p["name"], p["source"]) for p in report["traces"][0]["step"]["parts"]}
    assert step == {"loss": ("cross_entropy", "train.py:18"), "optimizer": ("SGD", "train.py:19")}
    assert "aten::nll_loss_forward" in {op["op"] for op in report["ops"]}


def test_a_hub_entry_is_tried_before_more_ready_factories_than_the_tries(tmp_path):
    for index in range(MAX_TRIES + 2):
        (tmp_path / f"net{index}.py").write_text(
            "from torch import nn\n\ndef create_model():\n    return nn.Linear(4, 4)\n", encoding="utf-8")
    (tmp_path / "hubconf.py").write_text(
        "dependencies = ['torch']\nfrom torch import nn\n\ndef small_net(pretrained=False):\n"
        "    return nn.Linear(4, 4)\n", encoding="utf-8")
    found = candidates(tmp_path, construct=True)
    assert len(found.traced) == MAX_TRIES and found.traced[0] == "repo:hubconf.py:small_net"


def test_toy_demos_of_helper_files_rank_below_the_model_classes(tmp_path):
    (tmp_path / "synth.py").write_text(   # neither file nor class named like a model: a low score
        "from torch import nn\nclass Tacotron(nn.Module):\n    def __init__(self, dim=8):\n        super().__init__()\n"
        "        self.l = nn.Linear(dim, dim)\n    def forward(self, x):\n        return self.l(x)\n", encoding="utf-8")
    for helper in ("pos_utils.py", "helpers.py"):
        (tmp_path / helper).write_text(
            "import torch\nfrom torch import nn\nclass PositionalEncoding(nn.Module):\n"
            "    def __init__(self, n):\n        super().__init__()\n        self.e = nn.Embedding(n, 10)\n"
            "    def forward(self, x):\n        return self.e(x)\n"
            "if __name__ == '__main__':\n    m = PositionalEncoding(8)\n    print(m(torch.arange(8)))\n",
            encoding="utf-8")
    traced = candidates(tmp_path, construct=True).traced
    assert traced[0] == "repo:synth.py:Tacotron"   # before the two demos, which would end the search


@pytest.mark.slow
def test_a_constructor_that_moves_itself_builds_on_meta_and_its_device_follows(repo_report, report_phases):
    report = repo_report(REPOS / "todevice")   # self.to(self.device) in __init__, x.to(self.device) in forward
    assert _complete(report) == ["repo:model.py:Classifier"]
    assert TRAIN <= report_phases(report)


@pytest.mark.slow
def test_a_demo_parses_its_own_command_line_not_opscans(repo_report, report_phases):
    report = repo_report(REPOS / "demoargs")   # argparse in __main__; Net(n_codes, width) has no defaults
    assert _complete(report) == ["repo:model.py#main"]
    assert TRAIN <= report_phases(report)
    assert "aten::_euclidean_dist" in {op["op"] for op in report["ops"]}   # torch.cdist, in the demo's model


@pytest.mark.slow
def test_a_model_that_shrinking_breaks_is_traced_unshrunk(repo_report, report_phases):
    report = repo_report(REPOS / "staged")   # 4 stages cut to 2: the final norm expects the 4th stage's width
    assert _complete(report) == ["repo:model.py:StagedNet"]
    assert TRAIN <= report_phases(report)
    retried = report["traces"][0]["retried"]
    assert retried.startswith("built unshrunk (shrunk: 2 repeated blocks cut; the step stopped: "
                              "aten::native_layer_norm")


@pytest.mark.slow
def test_a_device_picked_at_import_is_traced_again_with_cuda_answered(tmp_path, repo_report, report_phases):
    """NOTE [retry with CUDA answered]: DEVICE read at import is the CPU here; the step stopped on two devices."""
    (tmp_path / "model.py").write_text(
        "import torch\nfrom torch import nn\n\n"
        "DEVICE = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n\n"
        "class Encoder(nn.Module):\n    def __init__(self, embed_size=8, hidden_size=16):\n"
        "        super().__init__()\n        self.hidden_size = hidden_size\n"
        "        self.gru = nn.GRU(embed_size, hidden_size)\n        self.head = nn.Linear(hidden_size, 4)\n"
        "    def forward(self, embedded):\n"
        "        hidden = torch.zeros(1, embedded.size(1), self.hidden_size, device=DEVICE)\n"
        "        output, hidden = self.gru(embedded, hidden)\n        return self.head(output)\n",
        encoding="utf-8")
    report = repo_report(tmp_path)
    assert _complete(report) == ["repo:model.py:Encoder"] and TRAIN <= report_phases(report)
    assert "aten::_thnn_fused_gru_cell" in {op["op"] for op in report["ops"]} or \
        "aten::gru.input" in {op["op"] for op in report["ops"]}
    assert "CUDA answered as on the device (alone, the step stopped: " in report["traces"][0]["retried"]


@pytest.mark.slow
def test_a_config_that_shrinking_breaks_is_built_unshrunk(tmp_path, repo_report, report_phases):
    (tmp_path / "model.py").write_text(
        "from dataclasses import dataclass\nfrom torch import nn\n\n@dataclass\nclass NetConfig:\n"
        "    n_layer: int = 4\n    widths: tuple = (8, 16, 32, 64)\n\n"
        "class Net(nn.Module):\n    def __init__(self, config: NetConfig):\n        super().__init__()\n"
        "        assert len(config.widths) == config.n_layer, 'one width per layer'\n"
        "        self.layers = nn.Sequential(*[nn.Linear(a, b) for a, b in zip((4,) + config.widths, config.widths)])\n"
        "    def forward(self, x):\n        return self.layers(x)\n", encoding="utf-8")
    report = repo_report(tmp_path)
    assert _complete(report) == ["repo:model.py:Net"] and TRAIN <= report_phases(report)
    assert report["traces"][0]["retried"].startswith("built unshrunk: shrunk (n_layer 4 -> 2) it failed: "
                                                     "AssertionError: one width per layer")


@pytest.mark.slow
def test_config_arguments_come_from_the_yaml_files_that_hold_what_the_constructor_reads(repo_report, report_phases):
    # TextToMel(preprocess_config, model_config): each read as subscripts, one through Encoder(model_config)
    report = repo_report(REPOS / "yamlcfg")
    assert _complete(report) == ["repo:model/tts.py:TextToMel"] and TRAIN <= report_phases(report)
    retried = report["traces"][0]["retried"]
    assert "preprocess_config from config/LJSpeech/preprocess.yaml" in retried
    assert "model_config from config/LJSpeech/model.yaml" in retried and "encoder_layer 4 -> 2" in retried
    # the training step the script takes: Adam and an L1 loss, from train.py
    step = {p["part"]: (p["name"], p["source"]) for p in report["traces"][0]["step"]["parts"]}
    assert step == {"loss": ("l1_loss", "train.py:18"), "optimizer": ("Adam", "train.py:16")}


@pytest.mark.slow
def test_a_config_module_get_config_is_evaluated_in_the_child(repo_report, report_phases):
    report = repo_report(REPOS / "pycfg")   # LanguageModel(config) reading config.model.*, get_config() in configs/
    assert _complete(report) == ["repo:network.py:LanguageModel"] and TRAIN <= report_phases(report)
    assert report["traces"][0]["retried"].startswith("config config from configs/default.py:get_config()")


def test_what_a_constructor_reads_from_its_config_argument(tmp_path, monkeypatch):
    from opscan.targets.config_files import reads

    (tmp_path / "cfgreads.py").write_text(
        "class Inner:\n    def __init__(self, c):\n        self.n = c['n_layer']\n"
        "class Outer:\n    def __init__(self, cfg):\n        self.a = cfg.model.dim\n"
        "        self.b = cfg.get('dropout', 0.1)\n        self.c = getattr(cfg, 'bias', True)\n"
        "        self.inner = Inner(cfg.model)\n        self.d = cfg['heads']\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    import cfgreads

    required, optional = reads(cfgreads.Outer, "cfg")
    assert required == {("model", "dim"), ("model", "n_layer"), ("heads",)}
    assert optional == {("dropout",), ("bias",)}



def test_a_table_inside_a_config_answers_when_no_config_holds_the_reads_at_its_top(tmp_path, monkeypatch):
    # NOTE [configs from the repository's config files]: DGCNN(args) reads args.k, args.dropout, which
    # the YAML holds under `model:` (ObjectReassembly's `get_model(cfg.model)`)
    from opscan.targets.config_files import value_for

    (tmp_path / "nested_reads.py").write_text(
        "class Net:\n    def __init__(self, args):\n        self.k = args.k\n        self.p = args.dropout\n"
        "class Other:\n    def __init__(self, args):\n        self.q = args.quantum_flux\n", encoding="utf-8")
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "ours.yml").write_text(
        "exp:\n  seed: 1\nmodel:\n  extractor: ours\n  dropout: 0.5\n  k: 20\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    import nested_reads

    config, words = value_for(nested_reads.Net, "args", tmp_path)
    assert (config.k, config.dropout) == (20, 0.5) and "config/ours.yml['model']" in words
    assert value_for(nested_reads.Other, "args", tmp_path) is None   # nothing holds quantum_flux
    # a config holding the reads at its top level comes first (configs are read once per root)
    other = tmp_path / "other"
    (other / "config").mkdir(parents=True)
    (other / "config" / "ours.yml").write_text((tmp_path / "config" / "ours.yml").read_text(), encoding="utf-8")
    (other / "config" / "zflat.yml").write_text("k: 7\ndropout: 0.1\n", encoding="utf-8")
    config, words = value_for(nested_reads.Net, "args", other)
    assert config.k == 7 and "config/zflat.yml" in words and "[" not in words.split(" (")[0]

@pytest.mark.slow
def test_constructor_arguments_by_name_from_a_config_file_anywhere_in_the_repository(repo_report, report_phases):
    report = repo_report(REPOS / "kwcfg")   # Vocoder(n_mels, upsample_factors, hidden): configs/vocoder/base.yaml
    assert _complete(report) == ["repo:src/vocoder/model.py:Vocoder"] and TRAIN <= report_phases(report)
    assert "Vocoder(**configs/vocoder/base.yaml['model'])" in report["traces"][0]["retried"]


@pytest.mark.slow
def test_a_model_taking_the_training_scripts_options_is_built_from_its_parsers_defaults(repo_report, report_phases):
    # Captioner(opt): opt from opts.parse_opt(); vocab_size and seq_length set by train.py from absent data
    report = repo_report(REPOS / "optsmodel")
    assert _complete(report) == ["repo:models/captioner.py:Captioner"] and TRAIN <= report_phases(report)
    retried = report["traces"][0]["retried"]
    assert "opt from the argparse defaults of opts.py (11 options" in retried
    assert "chosen by name: seq_length=64, vocab_size=256" in retried


def test_options_objects_come_from_the_parser_holding_what_the_constructor_reads(tmp_path, monkeypatch):
    from opscan.targets.script_options import options_of, value_for

    (tmp_path / "lmopts.py").write_text(
        "class LM:\n    def __init__(self, params):\n        self.h = params['rnn_size']\n"
        "        self.v = params['vocab_size']\n        self.g = params['use_gpu']\n"
        "class Other:\n    def __init__(self, args):\n        self.q = args.quantum_flux\n", encoding="utf-8")
    (tmp_path / "train_lm.py").write_text(
        "import argparse\np = argparse.ArgumentParser()\n"
        "p.add_argument('--rnn-size', type=int, default=650)\np.add_argument('--data_dir', required=True)\n"
        "p.add_argument('--layers', dest='rnn_layers', type=float, default='2')\n"
        "p.add_argument('--out', default=os.path.join('a', 'b'))\np.add_argument('--cpu', action='store_true')\n",
        encoding="utf-8")
    (tmp_path / "eval.py").write_text("import argparse\np = argparse.ArgumentParser()\np.add_argument('--beam')\n",
                                      encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    import lmopts

    options = options_of(ast.parse((tmp_path / "train_lm.py").read_text()))
    assert options == {"rnn_size": 650, "data_dir": None, "rnn_layers": 2.0, "out": None, "cpu": False}
    params, words = value_for(lmopts.LM, "params", tmp_path)
    assert (params["rnn_size"], params["vocab_size"], params["use_gpu"]) == (650, 256, False)
    assert params.rnn_size == 650 and "train_lm.py" in words and "use_gpu=False, vocab_size=256" in words
    assert value_for(lmopts.Other, "args", tmp_path) is None   # no parser holds quantum_flux
    # the README's command of that file: its arguments applied as its parser would
    readme = tmp_path / "readme_repo"
    readme.mkdir()
    (readme / "train_lm.py").write_text((tmp_path / "train_lm.py").read_text(), encoding="utf-8")
    (readme / "README.md").write_text("```\npython train_lm.py --data_dir . --rnn-size 32 --layers 3 \\\n"
                                      "    --cpu --unknown 1\n```\n", encoding="utf-8")
    params, words = value_for(lmopts.LM, "params", readme)
    assert (params["rnn_size"], params["rnn_layers"], params["cpu"], params["data_dir"]) == (32, 3.0, True, ".")
    assert "with the arguments of the README's `python train_lm.py --data_dir . --rnn-size 32" in words
    assert value_for(lmopts.LM, "encoder", tmp_path) is None    # not an options object's name


def test_a_recurrent_model_holding_state_of_its_own_batch_size_gets_time_major_inputs_of_it():
    import torch
    from torch import nn

    from opscan.targets.repo_inputs import example_inputs

    class TimeMajorLM(nn.Module):   # the word-language-model style: (time, batch) and a hidden state of batch_size
        def __init__(self, params):
            super().__init__()
            self.batch_size = params["batch_size"]
            self.embed = nn.Embedding(50, 8)
            self.lstm = nn.LSTM(8, 12)
            self.out = nn.Linear(12, 50)
            self.hidden = (torch.zeros(1, self.batch_size, 12), torch.zeros(1, self.batch_size, 12))

        def forward(self, sequence):
            out, self.hidden = self.lstm(self.embed(sequence), self.hidden)
            return self.out(out)

    model = TimeMajorLM({"batch_size": 5})
    (tokens,), _ = example_inputs(model, {"batch_size": 5}, None, None)[:2]
    assert tokens.shape[1] == 5 and tokens.dtype == torch.long
    assert model(tokens).shape[:2] == tokens.shape


@pytest.mark.slow
def test_a_command_needing_a_library_not_installed_here_gives_way_to_the_next(repo_report, run_cli):
    # NOTE [a command that cannot import here]: train_vlm.py (first in the README) imports a library
    # this environment lacks; train.py, the next command, runs and answers
    report = repo_report(REPOS / "twocommands")
    assert _complete(report) == ["script:train.py"]
    assert any("`python train_vlm.py --epochs 2` needs `vlm_toolkit_not_installed`, not installed here: the next "
               "command found is run instead, `python train.py --epochs 2`" in n for n in report["notes"])
    assert report["verdict"]["step"]["kind"] != "stand-in"
    # a command the user names is never replaced
    code, out, _ = run_cli(str(REPOS / "twocommands"), "--format", "json", "--exit-zero",
                           "--entry", "python train_vlm.py --epochs 2")
    given = json.loads(out)
    assert code == 0 and "script:train.py" not in _complete(given)
    assert not any("the next command found is run instead" in n for n in given["notes"])


def test_a_point_model_pooling_over_its_points_gets_that_many_points():
    from torch import nn

    from opscan.targets.repo_inputs import example_inputs

    class PointFeatures(nn.Module):   # PointNet's symmetric function: one max over all the points
        def __init__(self, num_points=500):
            super().__init__()
            self.num_points = num_points
            self.conv = nn.Conv1d(3, 16, 1)
            self.pool = nn.MaxPool1d(num_points)
            self.fc = nn.Linear(16, 3)

        def forward(self, x):
            return self.fc(self.pool(self.conv(x)).view(-1, 16))

    for model in (PointFeatures(), PointFeatures(300)):
        (points,), _ = example_inputs(model, None, None, None)[:2]
        assert points.shape[1:] == (3, model.num_points)
        assert model(points).shape == (points.shape[0], 3)   # 256 points gave a pooled size of 0


def test_an_input_the_forward_embeds_is_token_indices_whatever_layer_comes_first():
    # NOTE [an input the forward embeds]: a Linear adapter registered before the embedding, and a
    # first argument named `input_tensor` handed to the embedding through a helper
    import torch
    from torch import nn

    from opscan.targets.repo_inputs import example_inputs

    class Summarizer(nn.Module):
        def __init__(self):
            super().__init__()
            self.adapter = nn.Linear(24, 12)
            self.embedding = nn.Embedding(40, 8)
            self.encoder = nn.GRU(8, 12)

        def filter_oov(self, tensor, size):
            return tensor.clamp(max=39)

        def forward(self, input_tensor, target_tensor=None):
            embedded = self.embedding(self.filter_oov(input_tensor, 40))
            out, _ = self.encoder(embedded)
            return self.adapter(torch.cat([out, out], -1))

    model = Summarizer()
    (tokens,), _ = example_inputs(model, None, None, None)[:2]
    assert tokens.dtype == torch.long and int(tokens.max()) < 40
    assert model(tokens).shape[-1] == 12
