import torch
import torch.nn.functional as F

from model import ActorCritic


def train(rank, args, shared_model, optimizer):
    torch.manual_seed(args.seed + rank)
    model = ActorCritic(8, 4)
    for _update in range(1000):
        model.load_state_dict(shared_model.state_dict())
        state = (torch.zeros(1, 32), torch.zeros(1, 32))
        values, log_probs, entropies = [], [], []
        for _ in range(args.num_steps):
            value, logits, state = model(torch.randn(1, 8), state)
            prob, log_prob = F.softmax(logits, -1), F.log_softmax(logits, -1)
            action = prob.multinomial(1)
            values.append(value)
            log_probs.append(log_prob.gather(1, action))
            entropies.append(-(log_prob * prob).sum(1))
        advantage = torch.randn(1, 1) - torch.cat(values).mean()
        policy = -(torch.cat(log_probs).mean() * advantage.detach())
        loss = policy + 0.5 * advantage.pow(2) - 0.01 * torch.cat(entropies).mean()
        optimizer.zero_grad()
        loss.sum().backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 50)
        for param, shared in zip(model.parameters(), shared_model.parameters()):
            shared._grad = param.grad
        optimizer.step()
