"""ResNet V1 and V2, with MXNet Gluon's architecture and names.

A residual block computes ``x + body(x)``: the layers learn a *correction* to their input,
and the identity path lets gradients reach early layers of very deep networks.

* V1 ("Deep Residual Learning", He et al. 2015): conv -> BN -> ReLU inside the body, ReLU
  after the addition.
* V2 ("Identity Mappings in Deep Residual Networks", He et al. 2016): BN -> ReLU -> conv
  ("pre-activation"); nothing after the addition, so the identity path stays clean.

Basic blocks (two 3x3 convs) make ResNet-18/34; bottleneck blocks (1x1 -> 3x3 -> 1x1, the
3x3 on a quarter of the channels) make ResNet-50/101/152. Every network has ``features``
(everything up to global pooling) and ``output`` (the classifier), so that
``net.features`` can be reused for transfer learning.

``thumbnail=True`` replaces the 7x7/2 stem and its max-pool by one 3x3/1 conv: for small
images such as CIFAR's 32x32.
"""
from __future__ import annotations

from ...hybrid_block import HybridBlock
from ... import nn

__all__ = ['ResNetV1', 'ResNetV2', 'BasicBlockV1', 'BasicBlockV2', 'BottleneckV1',
           'BottleneckV2', 'resnet_spec', 'get_resnet',
           'resnet18_v1', 'resnet34_v1', 'resnet50_v1', 'resnet101_v1', 'resnet152_v1',
           'resnet18_v2', 'resnet34_v2', 'resnet50_v2', 'resnet101_v2', 'resnet152_v2']


def _conv3x3(channels, stride, in_channels):
    return nn.Conv2D(channels, kernel_size=3, strides=stride, padding=1, use_bias=False,
                     in_channels=in_channels)


# ------------------------------------------------------------------- blocks
class BasicBlockV1(HybridBlock):
    """Two 3x3 convolutions; out = relu(x + BN(conv(relu(BN(conv(x))))))."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.body = nn.HybridSequential(prefix='')
        self.body.add(_conv3x3(channels, stride, in_channels))
        self.body.add(nn.BatchNorm())
        self.body.add(nn.Activation('relu'))
        self.body.add(_conv3x3(channels, 1, channels))
        self.body.add(nn.BatchNorm())
        if downsample:
            # When the shape changes (stride 2 or more channels), the shortcut needs a
            # 1x1 convolution to match it before the addition.
            self.downsample = nn.HybridSequential(prefix='')
            self.downsample.add(nn.Conv2D(channels, kernel_size=1, strides=stride,
                                          use_bias=False, in_channels=in_channels))
            self.downsample.add(nn.BatchNorm())
        else:
            self.downsample = None

    def hybrid_forward(self, F, x):
        residual = x
        x = self.body(x)
        if self.downsample is not None:     # a Python choice made once, at build time
            residual = self.downsample(residual)
        return F.Activation(residual + x, act_type='relu')


class BottleneckV1(HybridBlock):
    """1x1 (reduce to channels/4) -> 3x3 -> 1x1 (expand back), then relu(x + body(x))."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.body = nn.HybridSequential(prefix='')
        self.body.add(nn.Conv2D(channels // 4, kernel_size=1, strides=stride))
        self.body.add(nn.BatchNorm())
        self.body.add(nn.Activation('relu'))
        self.body.add(_conv3x3(channels // 4, 1, channels // 4))
        self.body.add(nn.BatchNorm())
        self.body.add(nn.Activation('relu'))
        self.body.add(nn.Conv2D(channels, kernel_size=1, strides=1))
        self.body.add(nn.BatchNorm())
        if downsample:
            self.downsample = nn.HybridSequential(prefix='')
            self.downsample.add(nn.Conv2D(channels, kernel_size=1, strides=stride,
                                          use_bias=False, in_channels=in_channels))
            self.downsample.add(nn.BatchNorm())
        else:
            self.downsample = None

    def hybrid_forward(self, F, x):
        residual = x
        x = self.body(x)
        if self.downsample is not None:
            residual = self.downsample(residual)
        return F.Activation(x + residual, act_type='relu')


class BasicBlockV2(HybridBlock):
    """Pre-activation basic block: x + conv(relu(BN(conv(relu(BN(x))))))."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.bn1 = nn.BatchNorm()
        self.conv1 = _conv3x3(channels, stride, in_channels)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(channels, 1, channels)
        if downsample:
            self.downsample = nn.Conv2D(channels, 1, stride, use_bias=False,
                                        in_channels=in_channels)
        else:
            self.downsample = None

    def hybrid_forward(self, F, x):
        residual = x
        x = self.bn1(x)
        x = F.Activation(x, act_type='relu')
        if self.downsample is not None:
            residual = self.downsample(x)   # V2 shortcuts start from the normalised input
        x = self.conv1(x)
        x = self.bn2(x)
        x = F.Activation(x, act_type='relu')
        x = self.conv2(x)
        return x + residual


class BottleneckV2(HybridBlock):
    """Pre-activation bottleneck: BN-relu-1x1, BN-relu-3x3, BN-relu-1x1, plus the shortcut."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.bn1 = nn.BatchNorm()
        self.conv1 = nn.Conv2D(channels // 4, kernel_size=1, strides=1, use_bias=False)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(channels // 4, stride, channels // 4)
        self.bn3 = nn.BatchNorm()
        self.conv3 = nn.Conv2D(channels, kernel_size=1, strides=1, use_bias=False)
        if downsample:
            self.downsample = nn.Conv2D(channels, 1, stride, use_bias=False,
                                        in_channels=in_channels)
        else:
            self.downsample = None

    def hybrid_forward(self, F, x):
        residual = x
        x = self.bn1(x)
        x = F.Activation(x, act_type='relu')
        if self.downsample is not None:
            residual = self.downsample(x)
        x = self.conv1(x)
        x = self.bn2(x)
        x = F.Activation(x, act_type='relu')
        x = self.conv2(x)
        x = self.bn3(x)
        x = F.Activation(x, act_type='relu')
        x = self.conv3(x)
        return x + residual


# ----------------------------------------------------------------- networks
class ResNetV1(HybridBlock):
    """ResNet V1: stem, four stages of `block`s, global average pooling, Dense classifier.

    layers : blocks per stage, e.g. [2, 2, 2, 2] for ResNet-18
    channels : [stem channels, stage 1, ..., stage 4]
    """

    def __init__(self, block, layers, channels, classes=1000, thumbnail=False, **kwargs):
        super().__init__(**kwargs)
        if len(layers) != len(channels) - 1:
            raise ValueError(f"ResNet: {len(layers)} stages need {len(layers) + 1} channel "
                             f"numbers (stem + one per stage), got {channels}")
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='')
            if thumbnail:
                self.features.add(_conv3x3(channels[0], 1, 0))
            else:
                self.features.add(nn.Conv2D(channels[0], 7, 2, 3, use_bias=False))
                self.features.add(nn.BatchNorm())
                self.features.add(nn.Activation('relu'))
                self.features.add(nn.MaxPool2D(3, 2, 1))
            for i, num_layer in enumerate(layers):
                stride = 1 if i == 0 else 2     # each later stage halves height and width
                self.features.add(self._make_layer(block, num_layer, channels[i + 1], stride,
                                                   i + 1, in_channels=channels[i]))
            self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.Dense(classes, in_units=channels[-1])

    def _make_layer(self, block, layers, channels, stride, stage_index, in_channels=0):
        layer = nn.HybridSequential(prefix=f'stage{stage_index}_')
        with layer.name_scope():
            layer.add(block(channels, stride, channels != in_channels, in_channels=in_channels,
                            prefix=''))
            for _ in range(layers - 1):
                layer.add(block(channels, 1, False, in_channels=channels, prefix=''))
        return layer

    def hybrid_forward(self, F, x):
        x = self.features(x)
        return self.output(x)


class ResNetV2(HybridBlock):
    """ResNet V2: like V1 with pre-activation blocks, a BatchNorm on the raw input (no
    scale/shift: it standardises the pixels) and BN + ReLU before the pooling."""

    def __init__(self, block, layers, channels, classes=1000, thumbnail=False, **kwargs):
        super().__init__(**kwargs)
        if len(layers) != len(channels) - 1:
            raise ValueError(f"ResNet: {len(layers)} stages need {len(layers) + 1} channel "
                             f"numbers (stem + one per stage), got {channels}")
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='')
            self.features.add(nn.BatchNorm(scale=False, center=False))
            if thumbnail:
                self.features.add(_conv3x3(channels[0], 1, 0))
            else:
                self.features.add(nn.Conv2D(channels[0], 7, 2, 3, use_bias=False))
                self.features.add(nn.BatchNorm())
                self.features.add(nn.Activation('relu'))
                self.features.add(nn.MaxPool2D(3, 2, 1))
            in_channels = channels[0]
            for i, num_layer in enumerate(layers):
                stride = 1 if i == 0 else 2
                self.features.add(self._make_layer(block, num_layer, channels[i + 1], stride,
                                                   i + 1, in_channels=in_channels))
                in_channels = channels[i + 1]
            self.features.add(nn.BatchNorm())
            self.features.add(nn.Activation('relu'))
            self.features.add(nn.GlobalAvgPool2D())
            self.features.add(nn.Flatten())
            self.output = nn.Dense(classes, in_units=in_channels)

    def _make_layer(self, block, layers, channels, stride, stage_index, in_channels=0):
        layer = nn.HybridSequential(prefix=f'stage{stage_index}_')
        with layer.name_scope():
            layer.add(block(channels, stride, channels != in_channels, in_channels=in_channels,
                            prefix=''))
            for _ in range(layers - 1):
                layer.add(block(channels, 1, False, in_channels=channels, prefix=''))
        return layer

    def hybrid_forward(self, F, x):
        x = self.features(x)
        return self.output(x)


# ------------------------------------------------------------ constructors
# depth: (block type, blocks per stage, channels: stem + one per stage)
resnet_spec = {18: ('basic_block', [2, 2, 2, 2], [64, 64, 128, 256, 512]),
               34: ('basic_block', [3, 4, 6, 3], [64, 64, 128, 256, 512]),
               50: ('bottle_neck', [3, 4, 6, 3], [64, 256, 512, 1024, 2048]),
               101: ('bottle_neck', [3, 4, 23, 3], [64, 256, 512, 1024, 2048]),
               152: ('bottle_neck', [3, 8, 36, 3], [64, 256, 512, 1024, 2048])}
resnet_net_versions = [ResNetV1, ResNetV2]
resnet_block_versions = [{'basic_block': BasicBlockV1, 'bottle_neck': BottleneckV1},
                         {'basic_block': BasicBlockV2, 'bottle_neck': BottleneckV2}]


def get_resnet(version, num_layers, pretrained=False, ctx=None, root=None, **kwargs):
    """ResNet `version` (1 or 2) with `num_layers` (18, 34, 50, 101, 152).

    pretrained=True loads ``{root}/resnet{num_layers}_v{version}.params`` (see
    ``model_store``); keyword arguments (classes, thumbnail) go to the network.
    """
    if num_layers not in resnet_spec:
        raise ValueError(f"no ResNet with {num_layers} layers; choose one of "
                         f"{sorted(resnet_spec)}")
    if version not in (1, 2):
        raise ValueError(f"ResNet version must be 1 or 2, got {version}")
    block_type, layers, channels = resnet_spec[num_layers]
    net = resnet_net_versions[version - 1](resnet_block_versions[version - 1][block_type],
                                           layers, channels, **kwargs)
    if pretrained:
        from ..model_store import get_model_file
        net.load_parameters(get_model_file(f'resnet{num_layers}_v{version}', root=root),
                            ctx=ctx)
    return net


def _constructor(version, num_layers):
    def constructor(**kwargs):
        return get_resnet(version, num_layers, **kwargs)
    constructor.__name__ = constructor.__qualname__ = f'resnet{num_layers}_v{version}'
    constructor.__doc__ = (f"ResNet-{num_layers} V{version} "
                           f"({'He et al. 2015' if version == 1 else 'He et al. 2016'}).\n\n"
                           f"pretrained=False, ctx=None, root=None, classes=1000, "
                           f"thumbnail=False; see get_resnet.")
    return constructor


resnet18_v1 = _constructor(1, 18)
resnet34_v1 = _constructor(1, 34)
resnet50_v1 = _constructor(1, 50)
resnet101_v1 = _constructor(1, 101)
resnet152_v1 = _constructor(1, 152)
resnet18_v2 = _constructor(2, 18)
resnet34_v2 = _constructor(2, 34)
resnet50_v2 = _constructor(2, 50)
resnet101_v2 = _constructor(2, 101)
resnet152_v2 = _constructor(2, 152)
