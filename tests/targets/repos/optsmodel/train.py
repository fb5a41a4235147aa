import torch

import opts
from loader import CaptionLoader
from models.captioner import Captioner

opt = opts.parse_opt()
loader = CaptionLoader(opt)
opt.vocab_size = loader.vocab_size
opt.seq_length = loader.seq_length
model = Captioner(opt)
optimizer = torch.optim.Adam(model.parameters(), lr=opt.learning_rate)
for _step in range(100):
    feats = torch.randn(opt.batch_size, opt.fc_feat_size)
    words = torch.randint(0, opt.vocab_size + 1, (opt.seq_length, opt.batch_size))
    loss = torch.nn.functional.nll_loss(model(feats).flatten(0, 1), words.flatten())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
