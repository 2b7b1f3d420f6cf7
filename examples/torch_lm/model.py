"""A small byte-level GPT (pre-norm transformer blocks, causal attention, learned positions),
written as the four stage modules of a 4-stage pipeline: stage 0 embeds and runs the first
block, the middle stages one block each, the last its block, the final norm and the head. Each
boundary carries a (micro-batch, context, width) activation."""
import math

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln2(x))


class Stage(nn.Module):
    """Stage `index` of `stages` (one block each) of a GPT of `width` and `context`."""

    def __init__(self, index: int, stages: int, width: int = 128, heads: int = 4, context: int = 128):
        super().__init__()
        self.first, self.last = index == 0, index == stages - 1
        if self.first:
            self.embed, self.pos = nn.Embedding(256, width), nn.Parameter(torch.zeros(context, width))
        self.block = Block(width, heads)
        if self.last:
            self.ln, self.head = nn.LayerNorm(width), nn.Linear(width, 256)
        self.apply(self._init)
        for name, p in self.named_parameters():  # GPT-2's scaled residual projections
            if name.endswith("proj.weight") or name.endswith("mlp.2.weight"):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * stages))

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, x):
        if self.first:
            x = self.embed(x) + self.pos[: x.shape[1]]
        x = self.block(x)
        return self.head(self.ln(x)) if self.last else x


def loss_fn(logits, targets):
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
