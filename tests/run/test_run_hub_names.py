"""`from_pretrained` of a hub name whose config is not here (NOTE [a type read from the name] in
opscan/trace/run/hub_names.py, NOTE [decoder start of a default config] in pretrained.py): an Auto
class builds the model type the name reads as from that type's config defaults, a tokenizer takes
that type's vocabulary size, an encoder-decoder's defaults get a decoder start token; each said as
assumed, and a name that reads as no type still stops."""

from __future__ import annotations

import textwrap

import pytest

from opscan.trace.run.hub_names import model_type

KNOWN = ("bert", "distilbert", "roberta", "xlm-roberta", "vit", "bart", "t5", "mt5", "gpt2", "gpt_neox",
         "deberta", "deberta-v2", "clip")


@pytest.mark.parametrize(("name", "kind"), [
    ("bert-base-uncased", "bert"),
    ("google/vit-base-patch16-224", "vit"),
    ("facebook/bart-large", "bart"),
    ("xlm-roberta-large", "xlm-roberta"),           # the longest match, not roberta
    ("FacebookAI/XLM-RoBERTa-base", "xlm-roberta"),  # case does not matter
    ("google/flan-t5-base", "t5"),
    ("google/mt5-small", "mt5"),
    ("distilbert-base-uncased", "distilbert"),
    ("microsoft/deberta-v2-xlarge", "deberta-v2"),
    ("microsoft/deberta-v3-base", "deberta"),
    ("EleutherAI/gpt-neox-20b", "gpt_neox"),         # words, whatever the separator
    ("openai/clip-vit-base-patch32", "clip"),        # two one-word types: the longer
    ("checkpoints/bert_small/", "bert"),
])
def test_a_hub_name_reads_as_the_model_type_whose_words_it_holds(name, kind):
    assert model_type(name, KNOWN) == kind


@pytest.mark.parametrize("name", ["sentence-transformers/all-MiniLM-L6-v2", "bert/my-own-net", "robertax-base",
                                  "albert-base-v2", "models/best.ckpt", "vitamin-net"])
def test_a_name_without_a_known_types_words_reads_as_none(name):
    """Negatives: part of a word (albert is not bert, robertax is not roberta), an owner's name
    (only the last part is read), a word no type has."""
    assert model_type(name, KNOWN) is None


def test_an_encoder_decoder_default_config_starts_its_decoder_with_the_pad_token():
    transformers = pytest.importorskip("transformers")
    from opscan.trace.run.pretrained import _decoder_start

    t5 = transformers.T5Config()
    assert getattr(t5, "decoder_start_token_id", None) is None   # T5Config's defaults leave it unset
    assert "assumed" in _decoder_start(t5) and t5.decoder_start_token_id == t5.pad_token_id == 0
    bart = transformers.BartConfig()
    assert _decoder_start(bart) == "" and bart.decoder_start_token_id == 2   # its own, kept
    bert = transformers.BertConfig()
    assert _decoder_start(bert) == "" and getattr(bert, "decoder_start_token_id", None) is None   # no decoder
    no_pad = transformers.T5Config(pad_token_id=None)
    assert _decoder_start(no_pad) == "" and getattr(no_pad, "decoder_start_token_id", None) is None


def test_a_tokenizer_of_a_name_whose_files_are_absent_takes_its_types_vocabulary(tmp_path):
    transformers = pytest.importorskip("transformers")
    from opscan.trace.run.stand_in_hooks import installed
    from opscan.trace.run.stand_ins import StandIns
    from opscan.trace.sources import SourceFinder

    made = StandIns(str(tmp_path), SourceFinder(str(tmp_path)))
    with installed(made):
        bert = transformers.AutoTokenizer.from_pretrained("nobody/bert-not-here")
        other = transformers.AutoTokenizer.from_pretrained("nobody/not-a-model-here")
    assert len(bert) == transformers.BertConfig().vocab_size == 30522
    assert len(other) == 50257   # GPT-2's, assumed, as before
    assert "'bert' read from the name" in made.replaced[0].detail and "assumed" in made.replaced[0].detail


@pytest.mark.slow   # runs a script on fake tensors
def test_a_script_fine_tuning_an_auto_model_of_a_hub_name_takes_its_step(tmp_path):
    pytest.importorskip("transformers")
    from opscan.trace.run import run_script

    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""\
        import torch
        from transformers import AutoModel, AutoTokenizer
        tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
        encoder = AutoModel.from_pretrained("bert-base-uncased").to("cuda")
        head = torch.nn.Linear(encoder.config.hidden_size, 2).to("cuda")
        optimizer = torch.optim.AdamW([*encoder.parameters(), *head.parameters()], lr=2e-5)
        for text in ["a short sentence", "another one"] * 10:
            batch = tokenizer([text, text], padding="max_length", max_length=16, truncation=True, return_tensors="pt")
            pooled = encoder(**batch.to("cuda")).last_hidden_state[:, 0]
            loss = torch.nn.functional.cross_entropy(head(pooled), torch.tensor([0, 1], device="cuda"))
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        """), encoding="utf-8")
    trace, _ = run_script(str(script), project_root=str(tmp_path), cwd=str(tmp_path), stand_ins=True)
    assert trace.complete and trace.steps == 1, trace.stopped_at
    ops = {u.op for u in trace.ops}
    assert {"aten::embedding", "aten::nll_loss_forward"} <= ops
    kinds = [(r.kind, r.line) for r in trace.replaced]
    assert kinds == [("tokenizer", 3), ("pretrained", 4)]
    detail = trace.replaced[1].detail
    assert "BertConfig's defaults" in detail and "'bert' read from the name" in detail


@pytest.mark.slow
def test_a_t5_built_from_its_defaults_shifts_its_labels_and_takes_its_step(tmp_path):
    pytest.importorskip("transformers")
    from opscan.trace.run import run_script

    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""\
        import torch
        from transformers import T5ForConditionalGeneration
        model = T5ForConditionalGeneration.from_pretrained("t5-small").to("cuda")
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        for _ in range(10):
            source = torch.randint(0, 100, (2, 12), device="cuda")
            labels = torch.randint(0, 100, (2, 8), device="cuda")
            model(input_ids=source, labels=labels).loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        """), encoding="utf-8")
    trace, _ = run_script(str(script), project_root=str(tmp_path), cwd=str(tmp_path), stand_ins=True)
    assert trace.complete and trace.steps == 1, trace.stopped_at
    detail = trace.replaced[0].detail
    assert "T5Config's defaults" in detail and "decoder_start_token_id" in detail and "assumed" in detail
