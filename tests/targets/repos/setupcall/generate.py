"""Generation (gpt-fast-style): sets the caches up, then calls the model with positions."""
import sys

import torch

from model import ModelArgs, Transformer


def prefill(model: Transformer, x: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
    return model(x, input_pos)


def generate(model: Transformer, prompt: torch.Tensor, max_new_tokens: int) -> torch.Tensor:
    T = prompt.size(0)
    model.setup_caches(max_batch_size=1, max_seq_length=T + max_new_tokens)
    input_pos = torch.arange(0, T)
    logits = prefill(model, prompt.view(1, -1), input_pos)
    return logits.argmax(-1)


if __name__ == "__main__":
    checkpoint = torch.load(sys.argv[1])   # weights this fixture does not ship
    model = Transformer(ModelArgs())
    model.load_state_dict(checkpoint)
    print(generate(model, torch.tensor([1, 2, 3]), 8))
