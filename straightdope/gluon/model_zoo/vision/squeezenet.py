"""SqueezeNet 1.0 ("AlexNet-level accuracy with 50x fewer parameters", Iandola et al. 2016)
and 1.1 (DeepScale's revision: 2.4x less computation), MXNet Gluon's version.

A fire module squeezes the channels with 1x1 convolutions, then expands them again with
1x1 and 3x3 convolutions side by side, concatenated. There is no Dense layer: a 1x1
convolution gives one channel per class, and a 13x13 average pool (224x224 inputs) turns
each channel into a score.
"""
from __future__ import annotations

from ...hybrid_block import HybridBlock
from ... import nn

__all__ = ['SqueezeNet', 'get_squeezenet', 'squeezenet1_0', 'squeezenet1_1']


def _make_fire(squeeze_channels, expand1x1_channels, expand3x3_channels):
    out = nn.HybridSequential(prefix='')
    out.add(_make_fire_conv(squeeze_channels, 1))
    paths = nn.HybridConcurrent(axis=1, prefix='')
    paths.add(_make_fire_conv(expand1x1_channels, 1))
    paths.add(_make_fire_conv(expand3x3_channels, 3, 1))
    out.add(paths)
    return out


def _make_fire_conv(channels, kernel_size, padding=0):
    out = nn.HybridSequential(prefix='')
    out.add(nn.Conv2D(channels, kernel_size, padding=padding))
    out.add(nn.Activation('relu'))
    return out


# The network after the stem, per version: ('pool',) or ('fire', squeeze, expand1x1, expand3x3)
_FIRES_1_0 = [(16, 64, 64), (16, 64, 64), (32, 128, 128), 'pool', (32, 128, 128),
              (48, 192, 192), (48, 192, 192), (64, 256, 256), 'pool', (64, 256, 256)]
_FIRES_1_1 = ['pool', (16, 64, 64), (16, 64, 64), 'pool', (32, 128, 128), (32, 128, 128),
              'pool', (48, 192, 192), (48, 192, 192), (64, 256, 256), (64, 256, 256)]


class SqueezeNet(HybridBlock):
    """SqueezeNet `version` '1.0' or '1.1'."""

    def __init__(self, version, classes=1000, **kwargs):
        super().__init__(**kwargs)
        if version not in ('1.0', '1.1'):
            raise ValueError(f"SqueezeNet version must be '1.0' or '1.1', got {version!r}")
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='')
            if version == '1.0':
                self.features.add(nn.Conv2D(96, kernel_size=7, strides=2))
                self.features.add(nn.Activation('relu'))
                self.features.add(nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True))
            else:
                self.features.add(nn.Conv2D(64, kernel_size=3, strides=2))
                self.features.add(nn.Activation('relu'))
            for item in _FIRES_1_0 if version == '1.0' else _FIRES_1_1:
                if item == 'pool':
                    self.features.add(nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True))
                else:
                    self.features.add(_make_fire(*item))
            self.features.add(nn.Dropout(0.5))
            self.output = nn.HybridSequential(prefix='')
            self.output.add(nn.Conv2D(classes, kernel_size=1))
            self.output.add(nn.Activation('relu'))
            self.output.add(nn.AvgPool2D(13))
            self.output.add(nn.Flatten())

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def get_squeezenet(version, pretrained=False, ctx=None, root=None, **kwargs):
    """SqueezeNet `version` ('1.0', '1.1'); pretrained=True loads
    ``{root}/squeezenet{version}.params`` (see ``model_store``)."""
    net = SqueezeNet(version, **kwargs)
    if pretrained:
        from ..model_store import get_model_file
        net.load_parameters(get_model_file(f'squeezenet{version}', root=root), ctx=ctx)
    return net


def squeezenet1_0(**kwargs):
    """SqueezeNet 1.0 (Iandola et al. 2016); see get_squeezenet."""
    return get_squeezenet('1.0', **kwargs)


def squeezenet1_1(**kwargs):
    """SqueezeNet 1.1 (fewer operations than 1.0, the same accuracy); see get_squeezenet."""
    return get_squeezenet('1.1', **kwargs)
