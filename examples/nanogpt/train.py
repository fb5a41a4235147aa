"""Train a small GPT on a token file, nanoGPT style, on one GPU or with DDP.

Written for CUDA GPUs: it is the example opscan's README scans. Comments and strings that merely
mention cuda (like this docstring) are not findings; the real CUDA pins below are.
"""

import os
import time
from contextlib import nullcontext

import numpy as np
import torch
from torch.distributed import destroy_process_group, init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP

from model import GPT, GPTConfig

# -----------------------------------------------------------------------------
# default config values
out_dir = "out"
eval_interval = 200
log_interval = 10
eval_iters = 20
batch_size = 12
block_size = 256
gradient_accumulation_steps = 4
learning_rate = 6e-4
max_iters = 2000
weight_decay = 1e-1
beta1, beta2 = 0.9, 0.95
grad_clip = 1.0
backend = "nccl"  # 'nccl', 'gloo', etc.
device = "cuda"  # examples: 'cpu', 'cuda', 'cuda:0', 'cuda:1' etc.
dtype = "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float16"
compile = True
# -----------------------------------------------------------------------------

os.environ.setdefault("NCCL_DEBUG", "WARN")
ddp = int(os.environ.get("RANK", -1)) != -1
if ddp:
    init_process_group(backend=backend)
    ddp_rank = int(os.environ["RANK"])
    ddp_local_rank = int(os.environ["LOCAL_RANK"])
    ddp_world_size = int(os.environ["WORLD_SIZE"])
    device = f"cuda:{ddp_local_rank}"
    torch.cuda.set_device(device)
    master_process = ddp_rank == 0
    gradient_accumulation_steps //= ddp_world_size
else:
    master_process = True
    ddp_world_size = 1
    print(f"single process training on cuda, visible GPUs: {os.environ.get('CUDA_VISIBLE_DEVICES')}")

torch.manual_seed(1337)
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
torch.backends.cudnn.benchmark = True
device_type = "cuda" if "cuda" in device else "cpu"  # for later use in torch.autocast
ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type=device_type, dtype=ptdtype)

data_dir = os.path.join("data", "shakespeare_char")


def get_batch(split):
    """Load a random batch of token ids; pinned memory for the async copy to the GPU."""
    data = np.memmap(os.path.join(data_dir, f"{split}.bin"), dtype=np.uint16, mode="r")
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([torch.from_numpy(data[i:i + block_size].astype(np.int64)) for i in ix])
    y = torch.stack([torch.from_numpy(data[i + 1:i + 1 + block_size].astype(np.int64)) for i in ix])
    if device_type == "cuda":
        x, y = x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)
    else:
        x, y = x.to(device), y.to(device)
    return x, y


model_args = dict(n_layer=6, n_head=6, n_embd=384, block_size=block_size, bias=False, vocab_size=50304, dropout=0.2)
model = GPT(GPTConfig(**model_args))
if os.path.exists(os.path.join(out_dir, "ckpt.pt")):
    checkpoint = torch.load(os.path.join(out_dir, "ckpt.pt"), map_location=device)
    model.load_state_dict(checkpoint["model"])
model.to(device)

scaler = torch.cuda.amp.GradScaler(enabled=(dtype == "float16"))
optimizer = model.configure_optimizers(weight_decay, learning_rate, (beta1, beta2))

if compile:
    print("compiling the model... (takes a ~minute)")
    model = torch.compile(model, mode="max-autotune")
if ddp:
    model = DDP(model, device_ids=[ddp_local_rank])


@torch.no_grad()
def estimate_loss():
    out = {}
    model.eval()
    for split in ["train", "val"]:
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(split)
            with ctx:
                logits, loss = model(X, Y)
            losses[k] = loss.item()
        out[split] = losses.mean()
    model.train()
    return out


X, Y = get_batch("train")
t0 = time.time()
for iter_num in range(max_iters + 1):
    if iter_num % eval_interval == 0 and master_process:
        losses = estimate_loss()
        print(f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
    for micro_step in range(gradient_accumulation_steps):
        if ddp:
            model.require_backward_grad_sync = micro_step == gradient_accumulation_steps - 1
        with ctx:
            logits, loss = model(X, Y)
            loss = loss / gradient_accumulation_steps
        X, Y = get_batch("train")
        scaler.scale(loss).backward()
    if grad_clip != 0.0:
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    if iter_num % log_interval == 0 and master_process:
        torch.cuda.synchronize()
        dt = time.time() - t0
        t0 = time.time()
        mem = torch.cuda.max_memory_allocated() / 2**30
        print(f"iter {iter_num}: loss {loss.item() * gradient_accumulation_steps:.4f}, {dt * 1000:.0f}ms, {mem:.1f} GiB on cuda")

if torch.cuda.is_available():
    # guarded: still a finding, marked as guarded
    probe = torch.zeros(1).cuda()

if ddp:
    destroy_process_group()
