"""The language-model task's text, from Debian packages, as bytes (a byte-level model: 256
tokens): the English `fortunes` quotes for pre-training, the King James Bible (`bible-kjv`,
printed by its `bible` program without the verse references) for fine-tuning. The last 5 % of
each corpus is its validation split."""
import glob
import os
import re
import subprocess

import torch

FORTUNES_DIR = "/usr/share/games/fortunes"
VALIDATION = 0.05


def fortunes() -> bytes:
    """Every English cookie file (not the ascii-art or offensive ones), quotes separated by a
    blank line instead of '%'."""
    parts = []
    for path in sorted(glob.glob(os.path.join(FORTUNES_DIR, "*"))):
        name = os.path.basename(path)
        if "." in name or name in ("ascii-art", "art") or os.path.isdir(path):
            continue
        with open(path, "rb") as f:
            parts.append(f.read().replace(b"\n%\n", b"\n\n"))
    return b"".join(parts)


def bible() -> bytes:
    """The KJV, one verse per line, references ("Ge1:1 ") removed."""
    text = subprocess.run(["bible", "-f", "Gen1:1-Rev22:21"], capture_output=True, check=True).stdout
    return re.sub(rb"(?m)^\S+\d+:\d+ ", b"", text)


def splits(text: bytes):
    """(train, validation) uint8 tensors of the text's bytes."""
    data = torch.frombuffer(bytearray(text), dtype=torch.uint8)
    cut = int(len(data) * (1 - VALIDATION))
    return data[:cut], data[cut:]


def batch(data: torch.Tensor, starts: torch.Tensor, context: int):
    """Inputs and next-byte targets (int64, len(starts) x context) at the given offsets."""
    idx = starts.view(-1, 1) + torch.arange(context + 1)
    chunk = data[idx].long()
    return chunk[:, :-1], chunk[:, 1:]
