"""MobileNet (Howard et al. 2017) and MobileNetV2 (Sandler et al. 2018), MXNet Gluon's versions.

MobileNet replaces each 3x3 convolution by a *depthwise separable* pair: a 3x3 convolution
per channel (``groups`` = channels) then a 1x1 convolution mixing the channels, about 8x fewer
multiply-adds. MobileNetV2 stacks *inverted residual* blocks: expand the channels t-fold
(1x1), filter them depthwise (3x3), project back down (1x1, no activation: a "linear
bottleneck"), and add the input when the shapes allow. ``multiplier`` scales every width.
"""
from __future__ import annotations

from ...hybrid_block import HybridBlock
from ... import nn

__all__ = ['MobileNet', 'MobileNetV2', 'RELU6', 'LinearBottleneck', 'get_mobilenet',
           'get_mobilenet_v2', 'mobilenet1_0', 'mobilenet0_75', 'mobilenet0_5', 'mobilenet0_25',
           'mobilenet_v2_1_0', 'mobilenet_v2_0_75', 'mobilenet_v2_0_5', 'mobilenet_v2_0_25']


class RELU6(HybridBlock):
    """min(max(x, 0), 6): a ReLU that saturates, which keeps low-precision inference safe."""

    def hybrid_forward(self, F, x):
        return F.clip(x, 0, 6, name="relu6")


def _add_conv(out, channels=1, kernel=1, stride=1, pad=0, num_group=1, active=True,
              relu6=False):
    out.add(nn.Conv2D(channels, kernel, stride, pad, groups=num_group, use_bias=False))
    out.add(nn.BatchNorm(scale=True))
    if active:
        out.add(RELU6() if relu6 else nn.Activation('relu'))


def _add_conv_dw(out, dw_channels, channels, stride, relu6=False):
    _add_conv(out, channels=dw_channels, kernel=3, stride=stride, pad=1, num_group=dw_channels,
              relu6=relu6)
    _add_conv(out, channels=channels, relu6=relu6)


class LinearBottleneck(HybridBlock):
    """MobileNetV2's block: 1x1 expand (t-fold), 3x3 depthwise, 1x1 project; plus the input
    when stride is 1 and the channels do not change."""

    def __init__(self, in_channels, channels, t, stride, **kwargs):
        super().__init__(**kwargs)
        self.use_shortcut = stride == 1 and in_channels == channels
        with self.name_scope():
            self.out = nn.HybridSequential()
            _add_conv(self.out, in_channels * t, relu6=True)
            _add_conv(self.out, in_channels * t, kernel=3, stride=stride, pad=1,
                      num_group=in_channels * t, relu6=True)
            _add_conv(self.out, channels, active=False, relu6=True)

    def hybrid_forward(self, F, x):
        out = self.out(x)
        if self.use_shortcut:       # a Python choice made once, at build time
            out = F.elemwise_add(out, x)
        return out


class MobileNet(HybridBlock):
    """MobileNet: a 3x3/2 stem and 13 depthwise separable pairs, global pooling, Dense."""

    def __init__(self, multiplier=1.0, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='')
            with self.features.name_scope():
                _add_conv(self.features, channels=int(32 * multiplier), kernel=3, pad=1,
                          stride=2)
                dw_channels = [int(x * multiplier) for x in
                               [32, 64] + [128] * 2 + [256] * 2 + [512] * 6 + [1024]]
                channels = [int(x * multiplier) for x in
                            [64] + [128] * 2 + [256] * 2 + [512] * 6 + [1024] * 2]
                strides = [1, 2] * 3 + [1] * 5 + [2, 1]
                for dwc, c, s in zip(dw_channels, channels, strides):
                    _add_conv_dw(self.features, dw_channels=dwc, channels=c, stride=s)
                self.features.add(nn.GlobalAvgPool2D())
                self.features.add(nn.Flatten())
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


class MobileNetV2(HybridBlock):
    """MobileNetV2: a 3x3/2 stem, 17 linear bottlenecks, a 1x1 conv to 1280 channels, global
    pooling and a 1x1 convolution as the classifier."""

    def __init__(self, multiplier=1.0, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='features_')
            with self.features.name_scope():
                _add_conv(self.features, int(32 * multiplier), kernel=3, stride=2, pad=1,
                          relu6=True)
                in_channels_group = [int(x * multiplier) for x in
                                     [32] + [16] + [24] * 2 + [32] * 3 + [64] * 4 + [96] * 3
                                     + [160] * 3]
                channels_group = [int(x * multiplier) for x in
                                  [16] + [24] * 2 + [32] * 3 + [64] * 4 + [96] * 3 + [160] * 3
                                  + [320]]
                ts = [1] + [6] * 16
                strides = [1, 2] * 2 + [1, 1, 2] + [1] * 6 + [2] + [1] * 3
                for in_c, c, t, s in zip(in_channels_group, channels_group, ts, strides):
                    self.features.add(LinearBottleneck(in_channels=in_c, channels=c, t=t,
                                                       stride=s))
                last_channels = int(1280 * multiplier) if multiplier > 1.0 else 1280
                _add_conv(self.features, last_channels, relu6=True)
                self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.HybridSequential(prefix='output_')
            with self.output.name_scope():
                self.output.add(nn.Conv2D(classes, 1, use_bias=False, prefix='pred_'),
                                nn.Flatten())

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def _file_suffix(multiplier):
    """MXNet's file names: 1.0, 0.75, 0.5, 0.25."""
    suffix = f'{multiplier:.2f}'
    return suffix[:-1] if suffix in ('1.00', '0.50') else suffix


def get_mobilenet(multiplier, pretrained=False, ctx=None, root=None, **kwargs):
    """MobileNet with width `multiplier`; pretrained=True loads ``{root}/mobilenet1.0.params``
    (0.75, 0.5, 0.25; see ``model_store``)."""
    net = MobileNet(multiplier, **kwargs)
    if pretrained:
        from ..model_store import get_model_file
        net.load_parameters(get_model_file(f'mobilenet{_file_suffix(multiplier)}', root=root),
                            ctx=ctx)
    return net


def get_mobilenet_v2(multiplier, pretrained=False, ctx=None, root=None, **kwargs):
    """MobileNetV2 with width `multiplier`; pretrained=True loads
    ``{root}/mobilenetv2_1.0.params`` (0.75, 0.5, 0.25; see ``model_store``)."""
    net = MobileNetV2(multiplier, **kwargs)
    if pretrained:
        from ..model_store import get_model_file
        net.load_parameters(get_model_file(f'mobilenetv2_{_file_suffix(multiplier)}',
                                           root=root), ctx=ctx)
    return net


def _constructor(getter, multiplier, name, title):
    def constructor(**kwargs):
        return getter(multiplier, **kwargs)
    constructor.__name__ = constructor.__qualname__ = name
    constructor.__doc__ = (f"{title} with width multiplier {multiplier}.\n\n"
                           f"pretrained=False, ctx=None, root=None, classes=1000; see "
                           f"{getter.__name__}.")
    return constructor


mobilenet1_0 = _constructor(get_mobilenet, 1.0, 'mobilenet1_0', 'MobileNet')
mobilenet0_75 = _constructor(get_mobilenet, 0.75, 'mobilenet0_75', 'MobileNet')
mobilenet0_5 = _constructor(get_mobilenet, 0.5, 'mobilenet0_5', 'MobileNet')
mobilenet0_25 = _constructor(get_mobilenet, 0.25, 'mobilenet0_25', 'MobileNet')
mobilenet_v2_1_0 = _constructor(get_mobilenet_v2, 1.0, 'mobilenet_v2_1_0', 'MobileNetV2')
mobilenet_v2_0_75 = _constructor(get_mobilenet_v2, 0.75, 'mobilenet_v2_0_75', 'MobileNetV2')
mobilenet_v2_0_5 = _constructor(get_mobilenet_v2, 0.5, 'mobilenet_v2_0_5', 'MobileNetV2')
mobilenet_v2_0_25 = _constructor(get_mobilenet_v2, 0.25, 'mobilenet_v2_0_25', 'MobileNetV2')
