"""A mel-spectrogram vocoder: transposed convolutions upsample the frames to audio samples."""
from torch import nn


class Vocoder(nn.Module):
    def __init__(self, n_mels, upsample_factors, hidden):
        super().__init__()
        self.pre = nn.Conv1d(n_mels, hidden, 7, padding=3)
        ups, width = [], hidden
        for factor in upsample_factors:
            ups += [nn.ConvTranspose1d(width, width // 2, 2 * factor, stride=factor, padding=factor // 2),
                    nn.LeakyReLU(0.1)]
            width //= 2
        self.ups = nn.Sequential(*ups)
        self.post = nn.Conv1d(width, 1, 7, padding=3)

    def forward(self, mel):
        return self.post(self.ups(self.pre(mel))).tanh()
