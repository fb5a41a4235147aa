import argparse

import torch
import torch.multiprocessing as mp

from evaluate import evaluate
from model import ActorCritic
from train import train

parser = argparse.ArgumentParser()
parser.add_argument("--num-processes", type=int, default=4)
parser.add_argument("--num-steps", type=int, default=5)
parser.add_argument("--seed", type=int, default=1)

if __name__ == "__main__":
    mp.set_start_method("spawn", force=True)
    args = parser.parse_args()
    shared_model = ActorCritic(8, 4)
    shared_model.share_memory()
    optimizer = torch.optim.Adam(shared_model.parameters(), lr=1e-4)
    processes = []
    p = mp.Process(target=evaluate, args=(args, shared_model))
    p.start()
    processes.append(p)
    for rank in range(args.num_processes):
        p = mp.Process(target=train, args=(rank, args, shared_model, optimizer))
        p.start()
        processes.append(p)
    for p in processes:
        p.join()
