"""Two small networks for first experiments: LeNet (convolutional) and an MLP.

Both follow the model zoo's layout, ``features`` then ``output``, and are HybridBlocks built
only from built-in layers, so ``net.hybridize()`` compiles the whole network.
"""
from __future__ import annotations

from ...hybrid_block import HybridBlock
from ... import nn

__all__ = ['LeNet', 'MLP', 'lenet', 'mlp']


class LeNet(HybridBlock):
    """LeNet as in the book's first chapters: two conv + max-pool stages (6 and 16 channels,
    3x3 kernels), then dense layers of 120 and 84 units and the classifier.

    For (batch, 1, 28, 28) inputs; any size of at least 14x14 works, since the first Dense
    layer learns its input size on the first call.
    """

    def __init__(self, classes=10, activation='relu', **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='')
            self.features.add(nn.Conv2D(6, kernel_size=3, activation=activation),
                              nn.MaxPool2D(pool_size=2, strides=2),
                              nn.Conv2D(16, kernel_size=3, activation=activation),
                              nn.MaxPool2D(pool_size=2, strides=2),
                              nn.Dense(120, activation=activation),
                              nn.Dense(84, activation=activation))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


class MLP(HybridBlock):
    """A multilayer perceptron: Dense layers of `hidden` units each, then the classifier.
    Inputs of any shape (batch, ...) are flattened by the first Dense layer."""

    def __init__(self, hidden=(256, 128), classes=10, activation='relu', **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='')
            for units in hidden:
                self.features.add(nn.Dense(units, activation=activation))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def _pretrained(net, name, pretrained, ctx, root):
    if pretrained:
        from ..model_store import get_model_file
        net.load_parameters(get_model_file(name, root=root), ctx=ctx)
    return net


def lenet(pretrained=False, ctx=None, root=None, **kwargs):
    """LeNet (classes=10); pretrained=True loads ``{root}/lenet.params``."""
    return _pretrained(LeNet(**kwargs), 'lenet', pretrained, ctx, root)


def mlp(pretrained=False, ctx=None, root=None, **kwargs):
    """MLP (hidden=(256, 128), classes=10); pretrained=True loads ``{root}/mlp.params``."""
    return _pretrained(MLP(**kwargs), 'mlp', pretrained, ctx, root)
