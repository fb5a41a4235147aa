"""Held-out: a compiled augmentation that flips on a coin toss, then a small CNN compiled apart."""
import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"


@torch.compile
def augment(images):
    if torch.rand(()).item() < 0.5:
        images = images.flip(-1)
    return (images - images.mean()) / (images.std() + 1e-5)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Linear(16, 10)
        self.seen = []

    def forward(self, x):
        f = self.features(x).flatten(1)
        self.seen.append(f.shape[0])
        return self.fc(f)


torch.manual_seed(9)
net = Net().to(device)
model = torch.compile(net, backend="aot_eager")
opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
for step in range(2):
    images = torch.rand(4, 3, 16, 16, device=device)
    labels = torch.randint(0, 10, (4,), device=device)
    loss = nn.functional.cross_entropy(model(augment(images)), labels)
    loss.backward()
    opt.step()
    opt.zero_grad()
