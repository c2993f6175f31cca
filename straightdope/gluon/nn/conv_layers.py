"""Convolution and pooling layers on NCHW images (batch, channels, height, width)."""
import numbers

from ..block import HybridBlock
from .activations import Activation

__all__ = ["Conv2D", "MaxPool2D", "AvgPool2D", "GlobalMaxPool2D", "GlobalAvgPool2D"]


def _pair(value, what, layer):
    """3 -> (3, 3); (3, 2) stays; anything else is an error that names the argument."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value, value)
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        return tuple(value)
    raise ValueError(f"{layer}: {what} must be an int or a pair of ints (height, width), "
                     f"got {value!r}")


def _check_layout(layout, layer):
    if layout != "NCHW":
        raise ValueError(f"{layer}: only layout='NCHW' (batch, channels, height, width) is "
                         f"supported, got {layout!r}. Transpose NHWC images first: "
                         f"x.transpose((0, 3, 1, 2)).")


class Conv2D(HybridBlock):
    """2-D convolution: `channels` filters of size `kernel_size` slide over the image.

    in_channels=0 (the default) learns the input channels from the first batch.
    Weight shape: (channels, in_channels // groups, kernel_h, kernel_w).
    """

    def _alias(self):
        return "conv"                   # MXNet 1.x names: conv0_weight, conv0_bias, ...

    def __init__(self, channels, kernel_size, strides=(1, 1), padding=(0, 0),
                 dilation=(1, 1), groups=1, layout="NCHW", activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer="zeros", in_channels=0, **kwargs):
        _check_layout(layout, "Conv2D")
        super().__init__(**kwargs)
        if isinstance(channels, bool) or not isinstance(channels, numbers.Integral) \
                or channels < 1:
            raise ValueError(f"Conv2D(channels={channels!r}): channels, the number of output "
                             f"channels, must be a positive integer")
        kernel = _pair(kernel_size, "kernel_size", "Conv2D")
        if in_channels and in_channels % groups:
            raise ValueError(f"Conv2D: in_channels={in_channels} is not divisible by "
                             f"groups={groups}")
        if channels % groups:
            raise ValueError(f"Conv2D: channels={channels} is not divisible by groups={groups}")
        self._channels, self._groups, self._kernel = channels, groups, kernel
        self._kwargs = {"kernel": kernel, "stride": _pair(strides, "strides", "Conv2D"),
                        "dilate": _pair(dilation, "dilation", "Conv2D"),
                        "pad": _pair(padding, "padding", "Conv2D"), "num_filter": channels,
                        "num_group": groups, "no_bias": not use_bias, "layout": layout}
        with self.name_scope():
            self.weight = self.params.get(
                "weight", shape=(channels, in_channels // groups) + kernel,
                init=weight_initializer, allow_deferred_init=True)
            self.bias = self.params.get("bias", shape=(channels,), init=bias_initializer,
                                        allow_deferred_init=True) if use_bias else None
            self.act = Activation(activation, prefix=activation + "_") \
                if activation is not None else None

    def hybrid_forward(self, F, x, weight, bias=None):
        out = F.Convolution(x, weight, bias=bias, name="fwd", **self._kwargs)
        return self.act(out) if self.act is not None else out

    def infer_shape(self, x, *args):
        if len(x.shape) != 4:
            raise ValueError(f"Conv2D '{self.name}': input must be 4-D (batch, channels, "
                             f"height, width), got shape {x.shape}")
        if x.shape[1] % self._groups:
            raise ValueError(f"Conv2D '{self.name}': {x.shape[1]} input channels do not "
                             f"split into groups={self._groups}")
        self.weight.shape = (self._channels, x.shape[1] // self._groups) + self._kernel

    def __repr__(self):
        k = self._kwargs
        per_group = self.weight.shape[1]
        in_channels = per_group * self._groups if per_group > 0 else -1
        s = (f"{type(self).__name__}({in_channels} -> {self._channels}, "
             f"kernel_size={k['kernel']}, stride={k['stride']}")
        if k["pad"] != (0, 0):
            s += f", padding={k['pad']}"
        if k["dilate"] != (1, 1):
            s += f", dilation={k['dilate']}"
        if self._groups != 1:
            s += f", groups={self._groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.act is not None:
            s += f", {self.act}"
        return s + ")"


class _Pooling(HybridBlock):
    """Max or average over windows; global pooling covers the whole image."""

    def _alias(self):
        return "pool"                   # MXNet 1.x names: pool0, pool1, ...

    def __init__(self, pool_size, strides, padding, ceil_mode, global_pool, pool_type,
                 layout, count_include_pad=None, **kwargs):
        _check_layout(layout, type(self).__name__)
        super().__init__(**kwargs)
        name = type(self).__name__
        pool_size = _pair(pool_size, "pool_size", name)
        strides = pool_size if strides is None else _pair(strides, "strides", name)
        self._kwargs = {"kernel": pool_size, "stride": strides,
                        "pad": _pair(padding, "padding", name), "global_pool": global_pool,
                        "pool_type": pool_type,
                        "pooling_convention": "full" if ceil_mode else "valid",
                        "layout": layout}
        if count_include_pad is not None:
            self._kwargs["count_include_pad"] = count_include_pad

    def hybrid_forward(self, F, x):
        return F.Pooling(x, name="fwd", **self._kwargs)

    def __repr__(self):
        k = self._kwargs
        return (f"{type(self).__name__}(size={k['kernel']}, stride={k['stride']}, "
                f"padding={k['pad']}, ceil_mode={k['pooling_convention'] == 'full'}, "
                f"global_pool={k['global_pool']}, pool_type={k['pool_type']}, "
                f"layout={k['layout']})")


class MaxPool2D(_Pooling):
    """The largest value of each pool_size window (strides default to pool_size)."""

    def __init__(self, pool_size=(2, 2), strides=None, padding=0, layout="NCHW",
                 ceil_mode=False, **kwargs):
        super().__init__(pool_size, strides, padding, ceil_mode, False, "max", layout,
                         **kwargs)


class AvgPool2D(_Pooling):
    """The mean of each pool_size window; count_include_pad: do padded zeros count?"""

    def __init__(self, pool_size=(2, 2), strides=None, padding=0, layout="NCHW",
                 ceil_mode=False, count_include_pad=True, **kwargs):
        super().__init__(pool_size, strides, padding, ceil_mode, False, "avg", layout,
                         count_include_pad, **kwargs)


class GlobalMaxPool2D(_Pooling):
    """(N, C, H, W) -> (N, C, 1, 1): the largest value per channel."""

    def __init__(self, layout="NCHW", **kwargs):
        super().__init__((1, 1), None, 0, True, True, "max", layout, **kwargs)


class GlobalAvgPool2D(_Pooling):
    """(N, C, H, W) -> (N, C, 1, 1): the mean per channel."""

    def __init__(self, layout="NCHW", **kwargs):
        super().__init__((1, 1), None, 0, True, True, "avg", layout, **kwargs)
