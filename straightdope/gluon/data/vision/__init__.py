"""Vision data: datasets of images and the transforms that prepare them."""
from . import transforms
from .datasets import MNIST, FashionMNIST, Digits, read_idx

__all__ = ['transforms', 'MNIST', 'FashionMNIST', 'Digits', 'read_idx']
