from torch import nn


class Captioner(nn.Module):
    """A show-and-tell decoder: image features start an LSTM that scores the next word."""

    def __init__(self, opt):
        super().__init__()
        self.vocab_size = opt.vocab_size          # set by train.py from its data
        self.seq_length = opt.seq_length
        self.img_embed = nn.Linear(opt.fc_feat_size, opt.input_encoding_size)
        self.core = getattr(nn, opt.rnn_type.upper())(opt.input_encoding_size, opt.rnn_size, opt.num_layers)
        self.dropout = nn.Dropout(opt.drop_prob_lm)
        self.logit = nn.Linear(opt.rnn_size, self.vocab_size + 1)

    def forward(self, fc_feats):
        x = self.img_embed(fc_feats).unsqueeze(0).expand(self.seq_length, -1, -1)
        out, _ = self.core(x)
        return self.logit(self.dropout(out)).log_softmax(-1)
