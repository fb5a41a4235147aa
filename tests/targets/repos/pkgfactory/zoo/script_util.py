from .nets import TinyNet


class Schedule:   # what the factory returns beside the model (not a module)
    def __init__(self, steps):
        self.steps = steps


def model_and_schedule_defaults():
    return dict(in_channels=3, num_channels=16, num_blocks=6, steps=100, learn_sigma=False)


def create_model_and_schedule(in_channels, num_channels, num_blocks, steps, learn_sigma):
    model = TinyNet(in_channels=in_channels, width=num_channels, num_blocks=num_blocks)
    return model, Schedule(steps)
