import time

import torch

from model import ActorCritic


def evaluate(args, shared_model):
    model = ActorCritic(8, 4)
    while True:   # waits for new weights, forever
        model.load_state_dict(shared_model.state_dict())
        with torch.no_grad():
            model(torch.randn(1, 8), (torch.zeros(1, 32), torch.zeros(1, 32)))
        time.sleep(60)
