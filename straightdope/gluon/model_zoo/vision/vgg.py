"""VGG ("Very Deep Convolutional Networks", Simonyan & Zisserman 2014), MXNet Gluon's version.

Only 3x3 convolutions (padding 1, so they keep the size), in five blocks each ending with a
2x2 max-pool; depth comes from how many convolutions each block has (11, 13, 16 or 19 layers
counting the three Dense ones). ``batch_norm=True`` puts a BatchNorm after each convolution.
"""
from __future__ import annotations

from ...hybrid_block import HybridBlock
from ... import nn
from ....initializer import Xavier

__all__ = ['VGG', 'vgg_spec', 'get_vgg', 'vgg11', 'vgg13', 'vgg16', 'vgg19',
           'vgg11_bn', 'vgg13_bn', 'vgg16_bn', 'vgg19_bn']


class VGG(HybridBlock):
    """VGG: ``layers[i]`` 3x3 convolutions of ``filters[i]`` channels per block."""

    def __init__(self, layers, filters, classes=1000, batch_norm=False, **kwargs):
        super().__init__(**kwargs)
        if len(layers) != len(filters):
            raise ValueError(f"VGG: {len(layers)} blocks (layers={layers}) but "
                             f"{len(filters)} filter sizes (filters={filters})")
        with self.name_scope():
            self.features = self._make_features(layers, filters, batch_norm)
            for _ in range(2):
                self.features.add(nn.Dense(4096, activation='relu', weight_initializer='normal',
                                           bias_initializer='zeros'))
                self.features.add(nn.Dropout(rate=0.5))
            self.output = nn.Dense(classes, weight_initializer='normal',
                                   bias_initializer='zeros')

    def _make_features(self, layers, filters, batch_norm):
        featurizer = nn.HybridSequential(prefix='')
        for num, channels in zip(layers, filters):
            for _ in range(num):
                featurizer.add(nn.Conv2D(channels, kernel_size=3, padding=1,
                                         weight_initializer=Xavier(rnd_type='gaussian',
                                                                   factor_type='out',
                                                                   magnitude=2),
                                         bias_initializer='zeros'))
                if batch_norm:
                    featurizer.add(nn.BatchNorm())
                featurizer.add(nn.Activation('relu'))
            featurizer.add(nn.MaxPool2D(strides=2))
        return featurizer

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


# depth: (convolutions per block, channels per block)
vgg_spec = {11: ([1, 1, 2, 2, 2], [64, 128, 256, 512, 512]),
            13: ([2, 2, 2, 2, 2], [64, 128, 256, 512, 512]),
            16: ([2, 2, 3, 3, 3], [64, 128, 256, 512, 512]),
            19: ([2, 2, 4, 4, 4], [64, 128, 256, 512, 512])}


def get_vgg(num_layers, pretrained=False, ctx=None, root=None, **kwargs):
    """VGG-`num_layers` (11, 13, 16, 19); pretrained=True loads ``{root}/vgg16.params``
    (``vgg16_bn.params`` with batch_norm=True; see ``model_store``)."""
    if num_layers not in vgg_spec:
        raise ValueError(f"no VGG with {num_layers} layers; choose one of {sorted(vgg_spec)}")
    layers, filters = vgg_spec[num_layers]
    net = VGG(layers, filters, **kwargs)
    if pretrained:
        from ..model_store import get_model_file
        suffix = '_bn' if kwargs.get('batch_norm') else ''
        net.load_parameters(get_model_file(f'vgg{num_layers}{suffix}', root=root), ctx=ctx)
    return net


def _constructor(num_layers, batch_norm):
    name = f"vgg{num_layers}{'_bn' if batch_norm else ''}"

    def constructor(**kwargs):
        if batch_norm:
            kwargs['batch_norm'] = True
        return get_vgg(num_layers, **kwargs)
    constructor.__name__ = constructor.__qualname__ = name
    constructor.__doc__ = (f"VGG-{num_layers}{' with BatchNorm' if batch_norm else ''}.\n\n"
                           f"pretrained=False, ctx=None, root=None, classes=1000; see get_vgg.")
    return constructor


vgg11, vgg13, vgg16, vgg19 = (_constructor(n, False) for n in (11, 13, 16, 19))
vgg11_bn, vgg13_bn, vgg16_bn, vgg19_bn = (_constructor(n, True) for n in (11, 13, 16, 19))
