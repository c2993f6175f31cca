"""Convolution and pooling layers on NCHW images (batch, channels, height, width), and
their 1-D versions on NCW sequences (batch, channels, width).

The 1-D layers run the 2-D ops on a height of 1: ``(N, C, W)`` becomes ``(N, C, 1, W)``,
a kernel ``k`` becomes ``(1, k)``, and the result is reshaped back. Their parameters have
MXNet's 1-D shapes (a Conv1D weight is ``(channels, in_channels, k)``).
"""
import numbers

from ...ndarray import NDArray
from ..block import HybridBlock
from .activations import Activation

__all__ = ["Conv1D", "Conv2D", "MaxPool1D", "MaxPool2D", "AvgPool1D", "AvgPool2D",
           "GlobalMaxPool1D", "GlobalMaxPool2D", "GlobalMaxPool3D", "GlobalAvgPool1D",
           "GlobalAvgPool2D", "GlobalAvgPool3D", "ReflectionPad2D"]


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
            shape = (channels, in_channels // groups) + self._weight_kernel(kernel)
            self.weight = self.params.get("weight", shape=shape, init=weight_initializer,
                                          allow_deferred_init=True)
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
        self.weight.shape = (self._channels, x.shape[1] // self._groups) + \
            self._weight_kernel(self._kernel)

    def _weight_kernel(self, kernel):
        """The kernel part of the weight's shape (Conv1D leaves out its height of 1)."""
        return kernel

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


# ------------------------------------------------------------------ 1-D layers
def _single(value, what, layer):
    """3 or (3,) -> 3; anything else is an error that names the argument."""
    if isinstance(value, (tuple, list)) and len(value) == 1:
        value = value[0]
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ValueError(f"{layer}: {what} must be an int (or a 1-tuple), got {value!r}")


def _check_layout_1d(layout, layer):
    if layout != "NCW":
        raise ValueError(f"{layer}: only layout='NCW' (batch, channels, width) is supported, "
                         f"got {layout!r}. Transpose NWC sequences first: "
                         f"x.transpose((0, 2, 1)).")


def _as_image(F, x):
    return F.expand_dims(x, axis=2)            # (N, C, W) -> (N, C, 1, W)


def _as_sequence(F, y):
    return F.reshape(y, shape=(0, 0, -1))       # (N, C, 1, W') -> (N, C, W')


class Conv1D(Conv2D):
    """1-D convolution over sequences (N, C, W): ``channels`` filters of width
    ``kernel_size``. Weight shape: (channels, in_channels // groups, kernel_size)."""

    def __init__(self, channels, kernel_size, strides=1, padding=0, dilation=1, groups=1,
                 layout="NCW", activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, **kwargs):
        _check_layout_1d(layout, "Conv1D")
        one = [_single(v, what, "Conv1D") for v, what in
               ((kernel_size, "kernel_size"), (strides, "strides"), (padding, "padding"),
                (dilation, "dilation"))]
        super().__init__(channels, (1, one[0]), (1, one[1]), (0, one[2]), (1, one[3]), groups,
                         "NCHW", activation, use_bias, weight_initializer, bias_initializer,
                         in_channels, **kwargs)

    def _weight_kernel(self, kernel):
        return kernel[1:]

    def hybrid_forward(self, F, x, weight, bias=None):
        out = F.Convolution(_as_image(F, x), F.expand_dims(weight, axis=2), bias=bias,
                            name="fwd", **self._kwargs)
        out = _as_sequence(F, out)
        return self.act(out) if self.act is not None else out

    def infer_shape(self, x, *args):
        if len(x.shape) != 3:
            raise ValueError(f"Conv1D '{self.name}': input must be 3-D (batch, channels, "
                             f"width), got shape {x.shape}")
        if x.shape[1] % self._groups:
            raise ValueError(f"Conv1D '{self.name}': {x.shape[1]} input channels do not "
                             f"split into groups={self._groups}")
        self.weight.shape = (self._channels, x.shape[1] // self._groups) + \
            self._weight_kernel(self._kernel)


class _Pooling1D(_Pooling):
    def __init__(self, pool_size, strides, padding, ceil_mode, global_pool, pool_type, layout,
                 count_include_pad=None, **kwargs):
        name = type(self).__name__
        _check_layout_1d(layout, name)
        size = _single(pool_size, "pool_size", name)
        stride = size if strides is None else _single(strides, "strides", name)
        super().__init__((1, size), (1, stride), (0, _single(padding, "padding", name)),
                         ceil_mode, global_pool, pool_type, "NCHW", count_include_pad,
                         **kwargs)

    def hybrid_forward(self, F, x):
        return _as_sequence(F, F.Pooling(_as_image(F, x), name="fwd", **self._kwargs))


class MaxPool1D(_Pooling1D):
    """The largest value of each ``pool_size`` window of a sequence (N, C, W)."""

    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCW", ceil_mode=False,
                 **kwargs):
        super().__init__(pool_size, strides, padding, ceil_mode, False, "max", layout,
                         **kwargs)


class AvgPool1D(_Pooling1D):
    """The mean of each ``pool_size`` window of a sequence (N, C, W)."""

    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCW", ceil_mode=False,
                 count_include_pad=True, **kwargs):
        super().__init__(pool_size, strides, padding, ceil_mode, False, "avg", layout,
                         count_include_pad, **kwargs)


class _GlobalPoolND(HybridBlock):
    """Max or mean over every axis after the channels: (N, C, ...) -> (N, C, 1, ...)."""

    def _alias(self):
        return "pool"

    def __init__(self, dims, kind, layout, **kwargs):
        expected = {1: "NCW", 3: "NCDHW"}[dims]
        if layout != expected:
            raise ValueError(f"{type(self).__name__}: only layout={expected!r} is supported, "
                             f"got {layout!r}")
        super().__init__(**kwargs)
        self._axes, self._kind = tuple(range(2, 2 + dims)), kind

    def hybrid_forward(self, F, x):
        reduce = F.max if self._kind == "max" else F.mean
        return reduce(x, axis=self._axes, keepdims=True)

    def __repr__(self):
        return f"{type(self).__name__}(axes={self._axes})"


class GlobalMaxPool1D(_GlobalPoolND):
    """(N, C, W) -> (N, C, 1): the largest value per channel."""

    def __init__(self, layout="NCW", **kwargs):
        super().__init__(1, "max", layout, **kwargs)


class GlobalAvgPool1D(_GlobalPoolND):
    """(N, C, W) -> (N, C, 1): the mean per channel."""

    def __init__(self, layout="NCW", **kwargs):
        super().__init__(1, "avg", layout, **kwargs)


class GlobalMaxPool3D(_GlobalPoolND):
    """(N, C, D, H, W) -> (N, C, 1, 1, 1): the largest value per channel."""

    def __init__(self, layout="NCDHW", **kwargs):
        super().__init__(3, "max", layout, **kwargs)


class GlobalAvgPool3D(_GlobalPoolND):
    """(N, C, D, H, W) -> (N, C, 1, 1, 1): the mean per channel."""

    def __init__(self, layout="NCDHW", **kwargs):
        super().__init__(3, "avg", layout, **kwargs)


# -------------------------------------------------------------------- padding
class ReflectionPad2D(HybridBlock):
    """Pad the height and width of (N, C, H, W) images by ``padding`` pixels on each side,
    mirroring the image at its border (the border row itself is not repeated):
    a row ``a b c d`` padded by 2 becomes ``c b a b c d c b``.

    ``padding`` is an int, or MXNet's 8-tuple ``(0, 0, 0, 0, top, bottom, left, right)``.
    The mirror is built from one-pixel slices and a concat, so it runs (and has gradients)
    wherever slices and concat do.
    """

    def __init__(self, padding=0, **kwargs):
        super().__init__(**kwargs)
        if isinstance(padding, int) and not isinstance(padding, bool):
            padding = (0, 0, 0, 0, padding, padding, padding, padding)
        if (not isinstance(padding, (tuple, list)) or len(padding) != 8 or any(padding[:4])
                or any(not isinstance(p, int) or p < 0 for p in padding)):
            raise ValueError(f"ReflectionPad2D: padding must be an int >= 0 or an 8-tuple "
                             f"(0, 0, 0, 0, top, bottom, left, right), got {padding!r}")
        self._padding = tuple(padding)

    @staticmethod
    def _mirror(F, x, axis, before, after, size):
        if not before and not after:
            return x
        if size is not None and max(before, after) >= size:
            raise ValueError(f"ReflectionPad2D: padding {max(before, after)} must be smaller "
                             f"than the padded axis ({size})")
        pick = lambda i: F.slice_axis(x, axis=axis, begin=i, end=i + 1)   # noqa: E731
        parts = [pick(i) for i in range(before, 0, -1)] + [x] + \
            [pick(-2 - i) for i in range(after)]
        return F.concat(*parts, dim=axis)

    def hybrid_forward(self, F, x):
        top, bottom, left, right = self._padding[4:]
        shape = x.shape if isinstance(x, NDArray) else None     # None while tracing
        height, width = (shape[2], shape[3]) if shape is not None and len(shape) == 4 \
            else (None, None)
        x = self._mirror(F, x, 2, top, bottom, height)
        return self._mirror(F, x, 3, left, right, width)

    def __repr__(self):
        return f"{type(self).__name__}(padding={self._padding})"
