"""The development set of `opscan run`: real scripts at pinned commits, their arguments and fake data.

Each case names a public repository, a commit, the files to copy from it (`fetch.py`), the folder
the script runs from, its command, the steps, the Python it needs (`main`: the project's torch;
`vision`: one with torchvision) and the fake data it reads (`fake_data.py`). `held_out` cases are
run once for the report and never tuned on (docs/run.md, "Real scripts").
"""

from __future__ import annotations

from dataclasses import dataclass, field

# repository -> pinned commit (the snapshot the table in docs/run.md was measured on)
COMMITS = {
    "karpathy/nanoGPT": "3adf61e154c3fe3fca428ad6bc3818b27a3b8291",
    "karpathy/minGPT": "37baab71b9abea1b76ab957409a1cc2fbfba8a26",
    "pytorch/examples": "77f55b912142e11fcfdf5b530231fb9c52f181e8",
    "karpathy/makemore": "988aa59e4d8fefa526d06f3b453ad116258398d4",
    "huggingface/transformers": "00d481d18f914b55e65faa31e82321629691eadb",
    "huggingface/pytorch-image-models": "8ef73809f622e0031bd7f4940265734aef8b9978",   # v1.0.28
    "huggingface/diffusers": "d035dcd7cc7c88e0a154609b62887d50bba9fdc2",   # v0.40.0
}


@dataclass(frozen=True)
class Case:
    name: str
    repo: str
    paths: tuple[str, ...]          # files or folders copied from the repository
    cwd: str                        # folder (inside the copy) the script runs from
    command: tuple[str, ...]        # after `python`
    data: str = ""                  # a fake_data.py maker, run in cwd
    steps: int = 1
    python: str = "main"            # main | vision
    pythonpath: tuple[str, ...] = ()   # folders of the copy put on PYTHONPATH (as `pip install -e .`)
    held_out: bool = False
    env: dict = field(default_factory=dict)
    neuron_command: tuple[str, ...] = ()   # the command on an accelerator, when the CPU run pins the CPU

    def command_for(self, device: str) -> tuple[str, ...]:
        return self.neuron_command if device == "neuron" and self.neuron_command else self.command


# run_clm.py from scratch, offline: fake_data.py's tiny GPT-2 config, word-level tokenizer and text files
_CLM = ("run_clm.py", "--config_name", "tiny-gpt2", "--tokenizer_name", "tiny-tokenizer", "--train_file", "train.txt",
        "--validation_file", "valid.txt", "--block_size", "16", "--do_train", "--max_steps", "1",
        "--per_device_train_batch_size", "2", "--output_dir", "out", "--report_to", "none")

CASES = (
    Case("nanogpt-train", "karpathy/nanoGPT", ("train.py", "model.py", "configurator.py", "config"), ".",
         ("train.py", "config/train_shakespeare_char.py", "--device=cpu", "--compile=False", "--eval_iters=2",
          "--batch_size=4", "--block_size=32", "--n_layer=2", "--n_head=2", "--n_embd=32", "--max_iters=5"),
         data="shakespeare_char", steps=2,
         neuron_command=("train.py", "config/train_shakespeare_char.py", "--compile=False", "--eval_iters=2",
                         "--batch_size=4", "--block_size=32", "--n_layer=2", "--n_head=2", "--n_embd=32",
                         "--max_iters=5")),
    Case("mingpt-adder", "karpathy/minGPT", ("mingpt", "projects/adder"), "projects/adder",
         ("adder.py", "--data.ndigit=1", "--trainer.batch_size=8", "--trainer.max_iters=5"),
         pythonpath=(".",)),
    Case("examples-word-lm", "pytorch/examples", ("word_language_model",), "word_language_model",
         ("main.py", "--epochs", "1", "--emsize", "16", "--nhid", "16", "--bptt", "8", "--batch_size", "4",
          "--dry-run"), data="wikitext",
         neuron_command=("main.py", "--epochs", "1", "--emsize", "16", "--nhid", "16", "--bptt", "8",
                         "--batch_size", "4", "--dry-run", "--accel")),
    Case("examples-mnist", "pytorch/examples", ("mnist",), "mnist",
         ("main.py", "--epochs", "1", "--batch-size", "8", "--test-batch-size", "16"),
         data="mnist", python="vision"),
    Case("examples-vae", "pytorch/examples", ("vae",), "vae",
         ("main.py", "--epochs", "1", "--batch-size", "8"), data="mnist", python="vision"),
    Case("examples-dcgan", "pytorch/examples", ("dcgan",), "dcgan",
         ("main.py", "--dataset", "fake", "--batchSize", "4", "--imageSize", "64", "--ngf", "8", "--ndf", "8",
          "--niter", "1"), python="vision",
         neuron_command=("main.py", "--dataset", "fake", "--batchSize", "4", "--imageSize", "64", "--ngf", "8",
                         "--ndf", "8", "--niter", "1", "--accel")),
    Case("hf-run-clm", "huggingface/transformers", ("examples/pytorch/language-modeling/run_clm.py",),
         "examples/pytorch/language-modeling", _CLM + ("--use_cpu",), data="hf_clm", neuron_command=_CLM),
    # timm's train.py with the timm package of the same commit (as a clone of the repository runs it)
    Case("timm-train", "huggingface/pytorch-image-models", ("train.py", "timm"), ".",
         ("train.py", "--data-dir", "data", "--model", "resnet18", "--num-classes", "2", "--img-size", "32",
          "-b", "4", "--epochs", "1", "--workers", "2", "--amp", "--log-interval", "1", "--device", "cpu"),
         data="image_folder", steps=2, python="vision", pythonpath=(".",),
         neuron_command=("train.py", "--data-dir", "data", "--model", "resnet18", "--num-classes", "2",
                         "--img-size", "32", "-b", "4", "--epochs", "1", "--workers", "2", "--amp",
                         "--log-interval", "1")),
    # the same train.py with a DeiT-style ViT recipe: AdamW, gradient clipping, mixup/cutmix (in the
    # loader's collate), label smoothing, drop path, model EMA, bfloat16 autocast
    Case("timm-train-vit", "huggingface/pytorch-image-models", ("train.py", "timm"), ".",
         ("train.py", "--data-dir", "data", "--model", "vit_tiny_patch16_224", "--model-kwargs", "img_size=32",
          "patch_size=4", "--num-classes", "2", "--img-size", "32", "-b", "4", "--epochs", "1", "--workers", "2",
          "--opt", "adamw", "--lr", "5e-4", "--weight-decay", "0.05", "--clip-grad", "1.0", "--mixup", "0.8",
          "--cutmix", "1.0", "--drop-path", "0.1", "--model-ema", "--amp", "--amp-dtype", "bfloat16",
          "--log-interval", "1", "--device", "cpu"),
         data="image_folder", steps=2, python="vision", pythonpath=(".",),
         neuron_command=("train.py", "--data-dir", "data", "--model", "vit_tiny_patch16_224", "--model-kwargs",
                         "img_size=32", "patch_size=4", "--num-classes", "2", "--img-size", "32", "-b", "4",
                         "--epochs", "1", "--workers", "2", "--opt", "adamw", "--lr", "5e-4", "--weight-decay",
                         "0.05", "--clip-grad", "1.0", "--mixup", "0.8", "--cutmix", "1.0", "--drop-path", "0.1",
                         "--model-ema", "--amp", "--amp-dtype", "bfloat16", "--log-interval", "1")),
    # diffusers' unconditional DDPM example as its README runs it (EMA, no mixed precision), on a local
    # image folder; the UNet is built from the script's own config (no weights); `python`, not
    # `accelerate launch`; the package of the same commit on the path
    Case("diffusers-unconditional", "huggingface/diffusers",
         ("examples/unconditional_image_generation", "src/diffusers"),
         "examples/unconditional_image_generation",
         ("train_unconditional.py", "--train_data_dir", "data/train", "--cache_dir", "cache", "--resolution", "32",
          "--center_crop", "--random_flip", "--output_dir", "ddpm-ema-32", "--train_batch_size", "4",
          "--num_epochs", "1", "--gradient_accumulation_steps", "1", "--use_ema", "--learning_rate", "1e-4",
          "--lr_warmup_steps", "5", "--mixed_precision", "no"),
         data="image_folder", steps=2, python="vision", pythonpath=("src",)),
    # held out: run once for the table, never tuned on
    Case("examples-time-sequence", "pytorch/examples", ("time_sequence_prediction",), "time_sequence_prediction",
         ("train.py", "--steps", "2"), data="sine_waves", held_out=True),
    Case("examples-mnist-rnn", "pytorch/examples", ("mnist_rnn",), "mnist_rnn",
         ("main.py", "--epochs", "1", "--batch-size", "8", "--test-batch-size", "16"), data="mnist",
         python="vision", held_out=True,
         neuron_command=("main.py", "--epochs", "1", "--batch-size", "8", "--test-batch-size", "16", "--accel")),
    Case("examples-imagenet-dummy", "pytorch/examples", ("imagenet",), "imagenet",
         ("main.py", "--dummy", "-a", "resnet18", "-b", "4", "--epochs", "1", "-p", "1"),
         python="vision", held_out=True),
    # held out, second set (chosen 2026-12-02, real runs checked, never run under opscan before the
    # lead's one run): a graph attention network on fake Cora files (Adam; a sparse adjacency made
    # dense), a polynomial fit by hand-written SGD whose loop ends on `loss.item() < 1e-3` (no
    # torch.optim: runs to its end), and makemore's character transformer on the names file its
    # repository ships (AdamW, DataLoader workers, tensorboard: the fuller Python)
    Case("examples-gat", "pytorch/examples", ("gat",), "gat",
         ("main.py", "--epochs", "2", "--hidden-dim", "8", "--num-heads", "2", "--no-accel"), data="cora",
         held_out=True,
         neuron_command=("main.py", "--epochs", "2", "--hidden-dim", "8", "--num-heads", "2")),
    Case("examples-regression", "pytorch/examples", ("regression",), "regression", ("main.py",),
         held_out=True),
    Case("makemore-transformer", "karpathy/makemore", ("makemore.py", "names.txt"), ".",
         ("makemore.py", "-i", "names.txt", "-o", "out", "--type", "transformer", "--n-layer", "2",
          "--n-head", "2", "--n-embd", "32", "--n-embd2", "32", "--batch-size", "8", "--num-workers", "2",
          "--max-steps", "3"), steps=2, python="vision", held_out=True,
         neuron_command=("makemore.py", "-i", "names.txt", "-o", "out", "--type", "transformer", "--n-layer",
                         "2", "--n-head", "2", "--n-embd", "32", "--n-embd2", "32", "--batch-size", "8",
                         "--num-workers", "2", "--max-steps", "3", "--device", "cuda")),
)
