"""Trains TextToMel from the three YAML files of a dataset."""
import argparse

import torch
import yaml

from model import TextToMel

parser = argparse.ArgumentParser()
parser.add_argument("-p", "--preprocess_config", required=True)
parser.add_argument("-m", "--model_config", required=True)
args = parser.parse_args()
preprocess_config = yaml.load(open(args.preprocess_config), Loader=yaml.FullLoader)
model_config = yaml.load(open(args.model_config), Loader=yaml.FullLoader)
model = TextToMel(preprocess_config, model_config).cuda()
optimizer = torch.optim.Adam(model.parameters(), betas=(0.9, 0.98), eps=1e-9)
for texts, mels in []:
    loss = torch.nn.functional.l1_loss(model(texts), mels)
    loss.backward()
    optimizer.step()
