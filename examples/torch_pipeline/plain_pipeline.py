"""The torch pipeline of driver.py, one process per stage (python plain_pipeline.py --help).
Its stage boundaries carry the float32 tensors themselves; pipeline.py is the same with pipecodec."""
import torch.distributed as dist

import driver


class Link:
    """This stage's ends of its boundaries: activations forward, gradients backward."""

    def __init__(self, opts, stage, peers, samples):
        pass

    def send(self, x, to, d, at):
        dist.send(x, to)
        return x.numel() * x.element_size()

    def recv(self, out, src, d, at):
        dist.recv(out, src)

    def set_inference(self, mode):
        pass


if __name__ == "__main__":
    driver.main(Link, takes_policy=False)
