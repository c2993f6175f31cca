"""Convolution and pooling layers on NCHW images (batch, channels, height, width), their
1-D versions on NCW sequences (batch, channels, width), 3-D versions on NCDHW volumes, and
transposed convolutions (upsampling) of each rank.

The 1-D layers run the 2-D ops on a height of 1: ``(N, C, W)`` becomes ``(N, C, 1, W)``,
a kernel ``k`` becomes ``(1, k)``, and the result is reshaped back. Their parameters have
MXNet's 1-D shapes (a Conv1D weight is ``(channels, in_channels, k)``).
"""
import numbers

from ...ndarray import NDArray
from ..hybrid_block import HybridBlock
from .activations import Activation

__all__ = ["Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose",
           "Conv3DTranspose", "MaxPool1D", "MaxPool2D", "MaxPool3D", "AvgPool1D", "AvgPool2D",
           "AvgPool3D",
           "GlobalMaxPool1D", "GlobalMaxPool2D", "GlobalMaxPool3D", "GlobalAvgPool1D",
           "GlobalAvgPool2D", "GlobalAvgPool3D", "ReflectionPad2D"]


_AXES = {1: "width", 2: "height, width", 3: "depth, height, width"}
_LAYOUTS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


def _ntuple(value, n, what, layer):
    """3 -> (3,) * n; a tuple of n ints stays; anything else is an error naming it."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return (int(value),) * n
    if isinstance(value, (tuple, list)) and len(value) == n and all(
            isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in value):
        return tuple(int(v) for v in value)
    kind = "a pair" if n == 2 else f"a tuple of {n}"
    raise ValueError(f"{layer}: {what} must be an int or {kind} of ints ({_AXES[n]}), "
                     f"got {value!r}")


def _pair(value, what, layer):
    return _ntuple(value, 2, what, layer)


_CHANNELS_LAST = {1: "NWC", 2: "NHWC", 3: "NDHWC"}


def _check_layout(layout, layer, dims=2, channels_last=False):
    """True for a channels-last layout (the layer transposes around the op)."""
    if layout == _LAYOUTS[dims]:
        return False
    if channels_last and layout == _CHANNELS_LAST[dims]:
        return True
    also = f" or {_CHANNELS_LAST[dims]!r}" if channels_last else ""
    raise ValueError(f"{layer}: only layout={_LAYOUTS[dims]!r} (batch, channels, "
                     f"{_AXES[dims]}){also} is supported, got {layout!r}. Transpose "
                     f"the data first, e.g. NHWC images with x.transpose((0, 3, 1, 2)).")


def _to_channels_first(F, x, dims):
    return F.transpose(x, axes=(0, dims + 1) + tuple(range(1, dims + 1)))


def _to_channels_last(F, x, dims):
    return F.transpose(x, axes=(0,) + tuple(range(2, dims + 2)) + (1,))


class _Conv(HybridBlock):
    """A convolution (or, transposed=True, a transposed convolution) over `dims` spatial
    axes. in_channels=0 (the default) learns the input channels from the first batch.
    Weight shape: (channels, in_channels // groups, *kernel) for a convolution,
    (in_channels, channels // groups, *kernel) for a transposed one (MXNet's layouts)."""
    dims, transposed = 2, False

    def _alias(self):
        return "conv"                   # MXNet 1.x names: conv0_weight, conv0_bias, ...

    def __init__(self, channels, kernel_size, strides=1, padding=0, dilation=1, groups=1,
                 layout=None, activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, output_padding=0, **kwargs):
        name, n = type(self).__name__, self.dims
        # channels-last: data (N, *spatial, C), weight (channels, *kernel, C // groups)
        self._channels_last = _check_layout(layout or _LAYOUTS[n], name, n,
                                            channels_last=not self.transposed)
        super().__init__(**kwargs)
        if isinstance(channels, bool) or not isinstance(channels, numbers.Integral) \
                or channels < 1:
            raise ValueError(f"{name}(channels={channels!r}): channels, the number of output "
                             f"channels, must be a positive integer")
        kernel = _ntuple(kernel_size, n, "kernel_size", name)
        if in_channels and in_channels % groups:
            raise ValueError(f"{name}: in_channels={in_channels} is not divisible by "
                             f"groups={groups}")
        if channels % groups:
            raise ValueError(f"{name}: channels={channels} is not divisible by groups={groups}")
        self._channels, self._groups, self._kernel = channels, groups, kernel
        self._kwargs = {"kernel": kernel, "stride": _ntuple(strides, n, "strides", name),
                        "dilate": _ntuple(dilation, n, "dilation", name),
                        "pad": _ntuple(padding, n, "padding", name), "num_filter": channels,
                        "num_group": groups, "no_bias": not use_bias,
                        "layout": _LAYOUTS[n]}
        if self.transposed:
            self._kwargs["adj"] = _ntuple(output_padding, n, "output_padding", name)
        with self.name_scope():
            shape = self._weight_shape(in_channels)
            self.weight = self.params.get("weight", shape=shape, init=weight_initializer,
                                          allow_deferred_init=True)
            self.bias = self.params.get("bias", shape=(channels,), init=bias_initializer,
                                        allow_deferred_init=True) if use_bias else None
            self.act = Activation(activation, prefix=activation + "_") \
                if activation is not None else None

    def _weight_shape(self, in_channels):
        if self.transposed:
            return (in_channels, self._channels // self._groups) + self._weight_kernel(
                self._kernel)
        if self._channels_last:
            return (self._channels,) + self._kernel + (in_channels // self._groups,)
        return (self._channels, in_channels // self._groups) + self._weight_kernel(self._kernel)

    def hybrid_forward(self, F, x, weight, bias=None):
        op = F.Deconvolution if self.transposed else F.Convolution
        if self._channels_last:
            x = _to_channels_first(F, x, self.dims)
            weight = _to_channels_first(F, weight, self.dims)
        out = op(x, weight, bias=bias, name="fwd", **self._kwargs)
        if self._channels_last:
            out = _to_channels_last(F, out, self.dims)
        return self.act(out) if self.act is not None else out

    def infer_shape(self, x, *args):
        name, n = type(self).__name__, self.dims
        if len(x.shape) != n + 2:
            raise ValueError(f"{name} '{self.name}': input must be {n + 2}-D (batch, "
                             f"channels, {_AXES[n]}), got shape {x.shape}")
        channels = x.shape[-1] if self._channels_last else x.shape[1]
        if channels % self._groups:
            raise ValueError(f"{name} '{self.name}': {channels} input channels do not "
                             f"split into groups={self._groups}")
        self.weight.shape = self._weight_shape(channels)

    def _weight_kernel(self, kernel):
        """The kernel part of the weight's shape (Conv1D leaves out its height of 1)."""
        return kernel

    def __repr__(self):
        k = self._kwargs
        if self.transposed:
            in_channels = self.weight.shape[0] if self.weight.shape[0] > 0 else -1
        else:
            per_group = self.weight.shape[-1 if self._channels_last else 1]
            in_channels = per_group * self._groups if per_group > 0 else -1
        n = len(k["kernel"])
        s = (f"{type(self).__name__}({in_channels} -> {self._channels}, "
             f"kernel_size={k['kernel']}, stride={k['stride']}")
        if k["pad"] != (0,) * n:
            s += f", padding={k['pad']}"
        if k["dilate"] != (1,) * n:
            s += f", dilation={k['dilate']}"
        if self._groups != 1:
            s += f", groups={self._groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.act is not None:
            s += f", {self.act}"
        return s + ")"


class Conv2D(_Conv):
    """2-D convolution: `channels` filters of size `kernel_size` slide over the image.

    in_channels=0 (the default) learns the input channels from the first batch.
    Weight shape: (channels, in_channels // groups, kernel_h, kernel_w).
    """

    def __init__(self, channels, kernel_size, strides=(1, 1), padding=(0, 0),
                 dilation=(1, 1), groups=1, layout="NCHW", activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer="zeros", in_channels=0, **kwargs):
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         activation, use_bias, weight_initializer, bias_initializer,
                         in_channels, **kwargs)


class Conv3D(_Conv):
    """3-D convolution over volumes (N, C, D, H, W), e.g. video or medical scans.
    Weight shape: (channels, in_channels // groups, kernel_d, kernel_h, kernel_w)."""
    dims = 3

    def __init__(self, channels, kernel_size, strides=(1, 1, 1), padding=(0, 0, 0),
                 dilation=(1, 1, 1), groups=1, layout="NCDHW", activation=None,
                 use_bias=True, weight_initializer=None, bias_initializer="zeros",
                 in_channels=0, **kwargs):
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         activation, use_bias, weight_initializer, bias_initializer,
                         in_channels, **kwargs)


class _ConvTranspose(_Conv):
    transposed = True

    def __init__(self, channels, kernel_size, strides=1, padding=0, output_padding=0,
                 dilation=1, groups=1, layout=None, activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer="zeros", in_channels=0, **kwargs):
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         activation, use_bias, weight_initializer, bias_initializer,
                         in_channels, output_padding, **kwargs)


class Conv1DTranspose(_ConvTranspose):
    """Transposed 1-D convolution (N, C, W) -> (N, channels, W'): each input position
    spreads over a window of the output, W' = (W - 1) * strides - 2 * padding +
    dilation * (kernel_size - 1) + 1 + output_padding (upsampling; the gradient of Conv1D).
    Weight shape: (in_channels, channels // groups, kernel_size)."""
    dims = 1


class Conv2DTranspose(_ConvTranspose):
    """Transposed 2-D convolution ("deconvolution"): upsamples images, e.g. in a decoder
    or a GAN's generator. Each output size is (in - 1) * strides - 2 * padding +
    dilation * (kernel - 1) + 1 + output_padding.
    Weight shape: (in_channels, channels // groups, kernel_h, kernel_w)."""
    dims = 2


class Conv3DTranspose(_ConvTranspose):
    """Transposed 3-D convolution over volumes (N, C, D, H, W).
    Weight shape: (in_channels, channels // groups, kernel_d, kernel_h, kernel_w)."""
    dims = 3


class _Pooling(HybridBlock):
    """Max or average over windows; global pooling covers the whole image."""

    def _alias(self):
        return "pool"                   # MXNet 1.x names: pool0, pool1, ...

    dims = 2

    def __init__(self, pool_size, strides, padding, ceil_mode, global_pool, pool_type,
                 layout, count_include_pad=None, **kwargs):
        name, n = type(self).__name__, self.dims
        self._channels_last = _check_layout(layout, name, n, channels_last=True)
        super().__init__(**kwargs)
        pool_size = _ntuple(pool_size, n, "pool_size", name)
        strides = pool_size if strides is None else _ntuple(strides, n, "strides", name)
        self._kwargs = {"kernel": pool_size, "stride": strides,
                        "pad": _ntuple(padding, n, "padding", name), "global_pool": global_pool,
                        "pool_type": pool_type,
                        "pooling_convention": "full" if ceil_mode else "valid",
                        "layout": _LAYOUTS[n]}
        if count_include_pad is not None:
            self._kwargs["count_include_pad"] = count_include_pad

    def hybrid_forward(self, F, x):
        if self._channels_last:
            x = _to_channels_first(F, x, self.dims)
            return _to_channels_last(F, F.Pooling(x, name="fwd", **self._kwargs), self.dims)
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


class MaxPool3D(_Pooling):
    """The largest value of each pool_size window of a volume (N, C, D, H, W)."""
    dims = 3

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding=0, ceil_mode=False,
                 layout="NCDHW", **kwargs):
        super().__init__(pool_size, strides, padding, ceil_mode, False, "max", layout,
                         **kwargs)


class AvgPool3D(_Pooling):
    """The mean of each pool_size window of a volume (N, C, D, H, W)."""
    dims = 3

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding=0, ceil_mode=False,
                 layout="NCDHW", count_include_pad=True, **kwargs):
        super().__init__(pool_size, strides, padding, ceil_mode, False, "avg", layout,
                         count_include_pad, **kwargs)


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
    dims = 1                    # the Pooling op pools (N, C, W) directly, as MXNet's does


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
        channels_last = _check_layout(layout, type(self).__name__, dims, channels_last=True)
        super().__init__(**kwargs)
        first = 1 if channels_last else 2
        self._axes, self._kind = tuple(range(first, first + dims)), kind

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
