"""Small residual networks for 32x32 images, built by name from the training script."""
import torch.nn.functional as F
from torch import nn

__all__ = ["ResNet", "resnet8", "resnet20"]


class BasicBlock(nn.Module):
    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(nn.Conv2d(in_planes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, block, num_blocks, num_classes):
        super().__init__()
        self.in_planes = 16
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.layer1 = self._stage(block, 16, num_blocks[0], 1)
        self.layer2 = self._stage(block, 32, num_blocks[1], 2)
        self.layer3 = self._stage(block, 64, num_blocks[2], 2)
        self.linear = nn.Linear(64, num_classes)

    def _stage(self, block, planes, count, stride):
        layers = []
        for s in [stride] + [1] * (count - 1):
            layers.append(block(self.in_planes, planes, s))
            self.in_planes = planes
        return nn.Sequential(*layers)

    def forward(self, x):
        out = self.layer3(self.layer2(self.layer1(self.stem(x))))
        return self.linear(F.adaptive_avg_pool2d(out, 1).flatten(1))


def resnet8(num_classes=10):
    return ResNet(BasicBlock, [1, 1, 1], num_classes)


def resnet20(num_classes=10):
    return ResNet(BasicBlock, [3, 3, 3], num_classes)
