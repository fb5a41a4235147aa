from torch import nn


class ActorCritic(nn.Module):
    def __init__(self, inputs: int, actions: int) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(inputs, 32), nn.ELU())
        self.cell = nn.LSTMCell(32, 32)
        self.actor = nn.Linear(32, actions)
        self.critic = nn.Linear(32, 1)

    def forward(self, x, state):
        h, c = self.cell(self.body(x), state)
        return self.critic(h), self.actor(h), (h, c)
