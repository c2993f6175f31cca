"""Digits read row by row: scikit-learn's 8x8 handwritten digits as sequences.

Each image becomes a sequence of 8 steps (its rows, top to bottom) of 8 features
(the pixels of a row, scaled to 0..1): a small, real sequence-classification
task for a recurrent network, which must remember the top of the digit by the
time it reaches the bottom.
"""
from __future__ import annotations

import numpy as np

from .dataset import Dataset
from .vision.datasets import _digits_arrays, digits_split


class DigitRows(Dataset):
    """(rows, label): rows is float32 (8, 8), one row of the digit per step; label int32.
    The train/test split is the same stratified split as `vision.Digits`.

    >>> rows, label = DigitRows(train=True)[0]
    >>> rows.shape
    (8, 8)
    """

    def __init__(self, train: bool = True, test_fraction: float = 0.25, seed: int = 0):
        images, labels = _digits_arrays(8)
        train_idx, test_idx = digits_split(labels, test_fraction, seed)
        idx = train_idx if train else test_idx
        self.data = (images[idx, :, :, 0] / 255.0).astype(np.float32)
        self.labels = labels[idx]

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        return self.data[idx], self.labels[idx]


__all__ = ["DigitRows"]
