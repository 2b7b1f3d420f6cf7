"""Fashion-MNIST as the C++ demo reads it (examples/common/fashion_mnist.hpp): the gzipped IDX
files of Debian's dataset-fashion-mnist package, pixels standardised with the training set's
mean and standard deviation."""
import gzip
import os

import numpy as np

DEFAULT_DIR = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530  # of the training pixels in [0, 1]


def _idx(path, magic, limit):
    """The first `limit` items (0: all) of an IDX file: big-endian u32 magic and dimensions, then
    u8 data. Reads no further than it needs."""
    ndim = magic & 0xFF
    with gzip.open(path, "rb") as f:
        head = np.frombuffer(f.read(4 * (1 + ndim)), ">u4")
        if len(head) != 1 + ndim or head[0] != magic:
            raise ValueError(f"{path}: not an IDX file of the expected kind")
        dims = [int(d) for d in head[1:]]
        dims[0] = min(dims[0], limit) if limit else dims[0]
        data = np.frombuffer(f.read(int(np.prod(dims))), np.uint8)
    if data.size != np.prod(dims):
        raise ValueError(f"{path}: truncated")
    return data.reshape(dims)


def load(split, limit=0, directory=DEFAULT_DIR):
    """Split "train" (60000 samples) or "t10k" (10000): images (n x 784 float32) and labels (n, int64)."""
    images = _idx(os.path.join(directory, f"{split}-images-idx3-ubyte.gz"), 0x803, limit)
    labels = _idx(os.path.join(directory, f"{split}-labels-idx1-ubyte.gz"), 0x801, limit)
    x = (images.reshape(len(images), -1).astype(np.float32) / 255 - MEAN) / STD
    return x, labels.astype(np.int64)
