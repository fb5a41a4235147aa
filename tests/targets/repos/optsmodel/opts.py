import argparse


def parse_opt():
    parser = argparse.ArgumentParser()
    parser.add_argument("--input_json", type=str, default="data/talk.json", help="the captions and vocabulary")
    parser.add_argument("--input_fc_dir", type=str, default="data/talk_fc", help="precomputed image features")
    parser.add_argument("--rnn_size", type=int, default=64)
    parser.add_argument("--num_layers", type=int, default=1)
    parser.add_argument("--rnn_type", type=str, default="lstm")
    parser.add_argument("--input_encoding_size", type=int, default=32)
    parser.add_argument("--fc_feat_size", type=int, default="128")
    parser.add_argument("--drop_prob_lm", type=float, default=0.5)
    parser.add_argument("--learning_rate", type=float, default=5e-4)
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--use_cuda", action="store_true")
    return parser.parse_args()
