import json

import torch

from flow import Flow, FlowLoss

with open("config.json") as f:
    config = json.load(f)
model = Flow(**config["flow_config"])
criterion = FlowLoss()
for step in range(10):
    loss = criterion(model(torch.randn(2, 8, 64)))
    loss.backward()
