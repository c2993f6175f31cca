"""DenseNet-BC ("Densely Connected Convolutional Networks", Huang et al. 2016), MXNet
Gluon's version.

Inside a dense block every layer sees the concatenation of all earlier outputs: a layer
computes `growth_rate` new channels (BN-ReLU-1x1 conv to ``bn_size * growth_rate``, then
BN-ReLU-3x3 conv) and appends them to its input. Between blocks a transition
(BN-ReLU-1x1 conv, 2x2 average pool) halves both the channels and the image size.
"""
from __future__ import annotations

from ...hybrid_block import HybridBlock
from ... import nn

__all__ = ['DenseNet', 'densenet_spec', 'get_densenet',
           'densenet121', 'densenet161', 'densenet169', 'densenet201']


def _make_dense_block(num_layers, bn_size, growth_rate, dropout, stage_index):
    out = nn.HybridSequential(prefix=f'stage{stage_index}_')
    with out.name_scope():
        for _ in range(num_layers):
            out.add(_make_dense_layer(growth_rate, bn_size, dropout))
    return out


def _make_dense_layer(growth_rate, bn_size, dropout):
    new_features = nn.HybridSequential(prefix='')
    new_features.add(nn.BatchNorm())
    new_features.add(nn.Activation('relu'))
    new_features.add(nn.Conv2D(bn_size * growth_rate, kernel_size=1, use_bias=False))
    new_features.add(nn.BatchNorm())
    new_features.add(nn.Activation('relu'))
    new_features.add(nn.Conv2D(growth_rate, kernel_size=3, padding=1, use_bias=False))
    if dropout:
        new_features.add(nn.Dropout(dropout))
    # [input, new features] along the channels: the input passes through unchanged.
    out = nn.HybridConcurrent(axis=1, prefix='')
    out.add(nn.Identity())
    out.add(new_features)
    return out


def _make_transition(num_output_features):
    out = nn.HybridSequential(prefix='')
    out.add(nn.BatchNorm())
    out.add(nn.Activation('relu'))
    out.add(nn.Conv2D(num_output_features, kernel_size=1, use_bias=False))
    out.add(nn.AvgPool2D(pool_size=2, strides=2))
    return out


class DenseNet(HybridBlock):
    """DenseNet-BC: a 7x7/2 stem, dense blocks of ``block_config[i]`` layers with transitions
    between them, BN-ReLU, a 7x7 average pool (224x224 inputs) and a Dense classifier."""

    def __init__(self, num_init_features, growth_rate, block_config, bn_size=4, dropout=0,
                 classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='')
            self.features.add(nn.Conv2D(num_init_features, kernel_size=7, strides=2,
                                        padding=3, use_bias=False))
            self.features.add(nn.BatchNorm())
            self.features.add(nn.Activation('relu'))
            self.features.add(nn.MaxPool2D(pool_size=3, strides=2, padding=1))
            num_features = num_init_features
            for i, num_layers in enumerate(block_config):
                self.features.add(_make_dense_block(num_layers, bn_size, growth_rate, dropout,
                                                    i + 1))
                num_features += num_layers * growth_rate
                if i != len(block_config) - 1:
                    num_features //= 2
                    self.features.add(_make_transition(num_features))
            self.features.add(nn.BatchNorm())
            self.features.add(nn.Activation('relu'))
            self.features.add(nn.AvgPool2D(pool_size=7))
            self.features.add(nn.Flatten())
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


# depth: (stem channels, growth rate, layers per dense block)
densenet_spec = {121: (64, 32, [6, 12, 24, 16]),
                 161: (96, 48, [6, 12, 36, 24]),
                 169: (64, 32, [6, 12, 32, 32]),
                 201: (64, 32, [6, 12, 48, 32])}


def get_densenet(num_layers, pretrained=False, ctx=None, root=None, **kwargs):
    """DenseNet-`num_layers` (121, 161, 169, 201); pretrained=True loads
    ``{root}/densenet{num_layers}.params`` (see ``model_store``)."""
    if num_layers not in densenet_spec:
        raise ValueError(f"no DenseNet with {num_layers} layers; choose one of "
                         f"{sorted(densenet_spec)}")
    num_init_features, growth_rate, block_config = densenet_spec[num_layers]
    net = DenseNet(num_init_features, growth_rate, block_config, **kwargs)
    if pretrained:
        from ..model_store import get_model_file
        net.load_parameters(get_model_file(f'densenet{num_layers}', root=root), ctx=ctx)
    return net


def _constructor(num_layers):
    def constructor(**kwargs):
        return get_densenet(num_layers, **kwargs)
    constructor.__name__ = constructor.__qualname__ = f'densenet{num_layers}'
    constructor.__doc__ = (f"DenseNet-BC-{num_layers} (Huang et al. 2016).\n\n"
                           f"pretrained=False, ctx=None, root=None, classes=1000, bn_size=4, "
                           f"dropout=0; see get_densenet.")
    return constructor


densenet121, densenet161, densenet169, densenet201 = (_constructor(n)
                                                      for n in (121, 161, 169, 201))
