import torch
import torch.nn.functional as F

from graphnet.data_utils import load_graph
from graphnet.model import GraphEncoder

if __name__ == "__main__":
    adj = load_graph(4)
    features = torch.randn(4, 8)
    model = GraphEncoder(8, 16)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for _epoch in range(10):
        optimizer.zero_grad()
        z = model(features, adj)
        loss = F.binary_cross_entropy_with_logits(z @ z.t(), adj)
        loss.backward()
        optimizer.step()
