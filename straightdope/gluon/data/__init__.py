"""Gluon data API: Datasets say what sample ``i`` is, Samplers choose the order, and the
DataLoader reads, stacks and converts whole batches to NDArrays."""
from .dataset import Dataset, SimpleDataset, ArrayDataset
from .sampler import Sampler, SequentialSampler, RandomSampler, BatchSampler
from .dataloader import DataLoader, default_batchify_fn
from . import vision
from . import sequence, text
from .sequence import DigitRows

__all__ = ['Dataset', 'SimpleDataset', 'ArrayDataset', 'Sampler', 'SequentialSampler',
           'RandomSampler', 'BatchSampler', 'DataLoader', 'default_batchify_fn', 'vision', 'text', 'sequence', 'DigitRows']
