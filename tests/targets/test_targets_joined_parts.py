"""A training script that builds the parts of its model and joins them (`encoder = EncoderRNN(...)`,
`decoder = DecoderRNN(...)`, `model = S2VTAttModel(encoder, decoder)`): the owner ranks above its
parts and above a model built whole (NOTE [parts the training script joins] in
opscan/targets/train_scripts.py), and builds with its parts made from its package's classes whose
names start with the argument's (NOTE [wrappers] in opscan/targets/construct.py)."""

from __future__ import annotations


import pytest

from opscan.targets.discovery import candidates
from tests.support.corpus import write_sources

pytest.importorskip("torch")

FILES = {
    "models/__init__.py": """\
        from .EncoderRNN import EncoderRNN
        from .DecoderRNN import DecoderRNN
        from .S2VTAttModel import S2VTAttModel
        from .S2VTModel import S2VTModel
        """,
    "models/EncoderRNN.py": """\
        from torch import nn


        class EncoderRNN(nn.Module):
            def __init__(self, dim_vid, dim_hidden):
                super().__init__()
                self.rnn = nn.GRU(dim_vid, dim_hidden, batch_first=True)

            def forward(self, vid_feats):
                return self.rnn(vid_feats)
        """,
    "models/DecoderRNN.py": """\
        from torch import nn


        class DecoderRNN(nn.Module):
            def __init__(self, vocab_size, dim_hidden):
                super().__init__()
                self.rnn = nn.GRU(dim_hidden, dim_hidden, batch_first=True)
                self.out = nn.Linear(dim_hidden, vocab_size)

            def forward(self, encoder_outputs, encoder_hidden):
                output, _ = self.rnn(encoder_outputs, encoder_hidden)
                return self.out(output)
        """,
    "models/S2VTAttModel.py": """\
        from torch import nn


        class S2VTAttModel(nn.Module):
            def __init__(self, encoder, decoder):
                super().__init__()
                self.encoder = encoder
                self.decoder = decoder

            def forward(self, vid_feats):
                encoder_outputs, encoder_hidden = self.encoder(vid_feats)
                return self.decoder(encoder_outputs, encoder_hidden)
        """,
    "models/S2VTModel.py": """\
        from torch import nn


        class S2VTModel(nn.Module):
            def __init__(self, vocab_size, dim_hidden, dim_vid):
                super().__init__()
                self.rnn = nn.GRU(dim_vid, dim_hidden, batch_first=True)
                self.out = nn.Linear(dim_hidden, vocab_size)

            def forward(self, vid_feats):
                return self.out(self.rnn(vid_feats)[0])
        """,
    "train.py": """\
        import argparse

        import torch
        from models import DecoderRNN, EncoderRNN, S2VTAttModel, S2VTModel


        def main(opt):
            if opt.model == 'S2VTModel':
                model = S2VTModel(opt.vocab_size, opt.dim_hidden, opt.dim_vid)
            else:
                encoder = EncoderRNN(opt.dim_vid, opt.dim_hidden)
                decoder = DecoderRNN(opt.vocab_size, opt.dim_hidden)
                model = S2VTAttModel(encoder, decoder)
            optimizer = torch.optim.Adam(model.parameters())
            loss = model(torch.randn(2, 5, opt.dim_vid)).sum()
            loss.backward()
            optimizer.step()


        if __name__ == '__main__':
            parser = argparse.ArgumentParser()
            parser.add_argument('--model', default='S2VTAttModel')
            parser.add_argument('--vocab_size', type=int, default=20)
            parser.add_argument('--dim_hidden', type=int, default=16)
            parser.add_argument('--dim_vid', type=int, default=8)
            main(parser.parse_args())
        """,
}


def test_the_class_that_joins_the_parts_ranks_above_them_and_above_a_model_built_whole(tmp_path):
    found = candidates(write_sources(tmp_path, FILES), construct=True)
    order = [t for t in found.traced if t.startswith("repo:models/")]
    assert order[0] == "repo:models/S2VTAttModel.py:S2VTAttModel"
    assert order.index("repo:models/S2VTModel.py:S2VTModel") < order.index("repo:models/DecoderRNN.py:DecoderRNN")
    notes = {c.target: c.note for c in found.candidates}
    assert "as a part of S2VTAttModel" in notes["repo:models/DecoderRNN.py:DecoderRNN"]
    assert "joining DecoderRNN, EncoderRNN" in notes["repo:models/S2VTAttModel.py:S2VTAttModel"]


def test_models_built_apart_are_neither_parts_nor_owners(tmp_path):
    files = dict(FILES)
    files["train.py"] = FILES["train.py"].replace(
        "model = S2VTAttModel(encoder, decoder)", "model = S2VTAttModel(EncoderRNN(8, 16), DecoderRNN(20, 16))")
    found = candidates(write_sources(tmp_path, files), construct=True)
    notes = " ".join(c.note for c in found.candidates)
    assert "as a part of" not in notes and "joining" not in notes


@pytest.mark.slow
def test_the_joined_model_is_built_from_its_packages_parts_and_traced(tmp_path, repo_report):
    files = {k: v for k, v in FILES.items() if k != "train.py"}   # no command: the model path answers
    files["train.py"] = FILES["train.py"].replace("if __name__ == '__main__':", "if __name__ == '__never__':")
    report = repo_report(write_sources(tmp_path, files))
    complete = [t["target"] for t in report["traces"] if t["complete"] and t["mode"] == "train"]
    assert complete[:1] == ["repo:models/S2VTAttModel.py:S2VTAttModel"]
    ops = {op["op"] for op in report["ops"]}
    assert {"aten::_thnn_fused_gru_cell", "aten::addmm"} & ops


def _captioner(needs_targets: bool):
    import torch
    from torch import nn

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.max_length = 7
            self.embedding = nn.Embedding(30, 6)
            self.out = nn.Linear(6 + 4, 30)

        def forward(self, encoder_outputs, targets=None):
            if targets is None and not needs_targets:
                targets = torch.zeros(encoder_outputs.shape[0], self.max_length, dtype=torch.long,
                                      device=encoder_outputs.device)
            words = self.embedding(targets)   # teacher forcing: the ground-truth words
            context = encoder_outputs.mean(1, keepdim=True).expand(-1, self.max_length - 1, -1)
            return self.out(torch.cat([words[:, :self.max_length - 1], context], 2))

    class Captioner(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.GRU(8, 4, batch_first=True)
            self.decoder = Decoder()

        def forward(self, vid_feats, target_variable=None):
            return self.decoder(self.encoder(vid_feats)[0], target_variable)

    return Captioner()


def test_targets_a_decoder_embeds_are_made_as_token_indices_of_its_max_length():
    """NOTE [optional inputs the forward needs]: `forward(vid_feats, target_variable=None)` whose
    decoder embeds the targets in train mode."""
    from opscan.targets.repo_inputs import example_inputs

    model = _captioner(needs_targets=True)
    args, kwargs = example_inputs(model, None, None, None)[:2]
    targets = kwargs["target_variable"]
    assert targets.shape == (args[0].shape[0], 7) and int(targets.max()) < 30
    assert model(*args, **kwargs).shape[:2] == (args[0].shape[0], 6)
    args, kwargs = example_inputs(_captioner(needs_targets=False), None, None, None)[:2]
    assert kwargs == {}   # a forward that runs without them is given none
