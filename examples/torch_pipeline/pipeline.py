"""The torch pipeline of driver.py, one process per stage (python pipeline.py --help).
Its stage boundaries carry pipecodec payloads (--policy); plain_pipeline.py is the same without."""
import pipecodec as pc
import torch
import torch.distributed as dist

import driver


class Link:
    """This stage's ends of its boundaries: activations forward, gradients backward."""

    def __init__(self, opts, stage, peers, samples):
        # By (peer, d). A mask=shared gradient travels at the positions of this step's forward payload.
        self.ends, self.payloads = {}, {}
        for peer, (b, max_shape) in peers.items():
            for d in ("fwd", "bwd"):
                End = pc.Sender if (d == "fwd") == (peer > stage) else pc.Receiver
                self.ends[peer, d] = End(opts.policy, b, d, max_shape, samples=samples)

    def send(self, x, to, d, at):
        x = self.payloads[to, d] = self.ends[to, d].encode(x, **at, mask=self.payloads.get((to, "fwd")))
        dist.send(torch.tensor([len(x)]), to)  # the length first: payload sizes vary
        dist.send(x, to)
        return x.numel() * x.element_size()

    def recv(self, out, src, d, at):
        n = torch.empty(1, dtype=torch.int64)
        dist.recv(n, src)
        p = self.payloads[src, d] = torch.empty(int(n), dtype=torch.uint8)
        dist.recv(p, src)
        self.ends[src, d].decode(p, out, **at, mask=self.payloads.get((src, "fwd")))

    def set_inference(self, mode):
        for end in self.ends.values():
            end.set_inference(mode)


if __name__ == "__main__":
    driver.main(Link, takes_policy=True)
