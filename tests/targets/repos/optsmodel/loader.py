import json


class CaptionLoader:
    def __init__(self, opt):
        with open(opt.input_json) as handle:
            info = json.load(handle)
        self.vocab_size = len(info["ix_to_word"])
        self.seq_length = info["seq_length"]
