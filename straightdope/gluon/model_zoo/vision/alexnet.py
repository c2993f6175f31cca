"""AlexNet ("One weird trick for parallelizing CNNs", Krizhevsky 2014), MXNet Gluon's version.

Five convolutions (the first with an 11x11 kernel and stride 4), three max-pools, then two
4096-wide Dense layers with dropout. It expects 224x224 images; at 224 the last pool leaves
256 x 6 x 6 features.
"""
from __future__ import annotations

from ...hybrid_block import HybridBlock
from ... import nn

__all__ = ['AlexNet', 'alexnet']


class AlexNet(HybridBlock):
    """AlexNet: ``features`` (convolutions and the two hidden Dense layers) and ``output``."""

    def __init__(self, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='')
            with self.features.name_scope():
                self.features.add(nn.Conv2D(64, kernel_size=11, strides=4, padding=2,
                                            activation='relu'))
                self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
                self.features.add(nn.Conv2D(192, kernel_size=5, padding=2, activation='relu'))
                self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
                for channels in (384, 256, 256):
                    self.features.add(nn.Conv2D(channels, kernel_size=3, padding=1,
                                                activation='relu'))
                self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
                self.features.add(nn.Flatten())
                for _ in range(2):
                    self.features.add(nn.Dense(4096, activation='relu'))
                    self.features.add(nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def alexnet(pretrained=False, ctx=None, root=None, **kwargs):
    """AlexNet; pretrained=True loads ``{root}/alexnet.params`` (see ``model_store``)."""
    net = AlexNet(**kwargs)
    if pretrained:
        from ..model_store import get_model_file
        net.load_parameters(get_model_file('alexnet', root=root), ctx=ctx)
    return net
