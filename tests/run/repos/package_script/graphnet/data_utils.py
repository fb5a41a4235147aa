import torch


def load_graph(nodes: int):
    adj = torch.zeros(nodes, nodes)
    with open("data/edges.txt") as handle:
        for line in handle:
            i, j = (int(v) for v in line.split())
            adj[i, j] = adj[j, i] = 1.0
    return adj
