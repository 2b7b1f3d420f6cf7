"""One pipeline stage's layer, as in the C++ demo (examples/pipeline_train/dense.hpp)."""
import math

import torch
from torch import nn


class DenseStage(nn.Module):
    """y = x W^T + b, ReLU except on the last stage. He-initialised weights N(0, 2 / in) from
    `seed` and zero biases, the C++ demo's scheme (stage_common.hpp he_init; the same
    distribution, not the same bits: that uses std::mt19937_64)."""

    def __init__(self, n_in, n_out, relu, seed):
        super().__init__()
        self.linear = nn.Linear(n_in, n_out)
        self.relu = relu
        with torch.no_grad():
            g = torch.Generator().manual_seed(seed)
            self.linear.weight.normal_(0.0, math.sqrt(2.0 / n_in), generator=g)
            self.linear.bias.zero_()

    def forward(self, x):
        y = self.linear(x)
        return torch.relu(y) if self.relu else y
