"""`Correlation`: MXNet's FlowNet correlation layer, comparing patches of two feature maps.

    out = nd.Correlation(data1, data2, kernel_size=1, max_displacement=4, pad_size=4)
    # (N, C, H, W) twice -> (N, (2 * (4 // stride2) + 1) ** 2, H', W')

Both maps are padded by pad_size. Each output position (i, j) looks at a kernel_size
patch of data1 whose corner is at (i * stride1 + max_displacement, j * stride1 +
max_displacement), and compares it with the data2 patch moved by every displacement
(dy, dx) of a grid of radius max_displacement // stride2, in steps of stride2; output
channel (dy_index * grid_width + dx_index) holds the patch's sum over channels and kernel
of data1 * data2 (is_multiply) or |data1 - data2|, divided by kernel_size**2 * C.
The output is ceil((padded - 2 * (max_displacement + kernel radius)) / stride1) wide
and high, as MXNet's correlation-inl.h computes it; MXNet's kernels (correlation.cc)
are loops, here each displacement and kernel offset is one NumPy slice over every
position. NumPy forward and backward: compiled graphs run it on the host.
"""
import numpy as np

from .registry import Bool, Int, OpError, register

ATTRS = {"kernel_size": Int(1, minimum=1), "max_displacement": Int(1, minimum=0),
         "stride1": Int(1, minimum=1), "stride2": Int(1, minimum=1),
         "pad_size": Int(0, minimum=0), "is_multiply": Bool(True)}


def _geometry(attrs, shape):
    """(output height, output width, grid radius, grid width) for data of `shape`."""
    if attrs["kernel_size"] % 2 == 0:
        raise OpError(f"Correlation: kernel_size must be odd, got {attrs['kernel_size']}")
    border = attrs["max_displacement"] + (attrs["kernel_size"] - 1) // 2
    height, width = (-(-(n + 2 * attrs["pad_size"] - 2 * border) // attrs["stride1"])
                     for n in shape[2:])
    if height < 1 or width < 1:
        raise OpError(f"Correlation cannot be done with these settings: the neighborhood "
                      f"and kernel (border {border} on each side: max_displacement="
                      f"{attrs['max_displacement']}, kernel_size={attrs['kernel_size']}) "
                      f"do not fit in data of shape {tuple(shape)} padded by "
                      f"pad_size={attrs['pad_size']}")
    radius = attrs["max_displacement"] // attrs["stride2"]
    return height, width, radius, 2 * radius + 1


def _shape(attrs, in_shapes):
    a, b = in_shapes
    if a is None:
        return in_shapes, [None]
    if len(a) != 4 or (b is not None and tuple(b) != tuple(a)):
        raise OpError(f"Correlation: data1 and data2 must be 4-D (N, C, H, W) of one shape, "
                      f"got {a} and {b}")
    height, width, _, grid = _geometry(attrs, a)
    return [a, a], [(a[0], grid * grid, height, width)]


def _patches(attrs, shape):
    """Every (output channel, data1 slices, data2 slices) pair the sum runs over: one
    per displacement and kernel offset, each slice picking all output positions."""
    height, width, radius, grid = _geometry(attrs, shape)
    s1, s2, md = attrs["stride1"], attrs["stride2"], attrs["max_displacement"]
    for channel in range(grid * grid):
        dy, dx = (channel // grid - radius) * s2, (channel % grid - radius) * s2
        for h in range(attrs["kernel_size"]):
            for w in range(attrs["kernel_size"]):
                y, x = md + h, md + w
                first = (slice(y, y + s1 * (height - 1) + 1, s1),
                         slice(x, x + s1 * (width - 1) + 1, s1))
                second = (slice(y + dy, y + dy + s1 * (height - 1) + 1, s1),
                          slice(x + dx, x + dx + s1 * (width - 1) + 1, s1))
                yield channel, first, second


def _padded(attrs, x):
    p = attrs["pad_size"]
    return np.pad(x.astype(np.float64), ((0, 0), (0, 0), (p, p), (p, p)))


def _forward(attrs, data1, data2):
    height, width, _, grid = _geometry(attrs, data1.shape)
    one, two = _padded(attrs, data1), _padded(attrs, data2)
    out = np.zeros((data1.shape[0], grid * grid, height, width))
    for channel, first, second in _patches(attrs, data1.shape):
        a, b = one[(Ellipsis,) + first], two[(Ellipsis,) + second]
        out[:, channel] += (a * b if attrs["is_multiply"] else np.abs(a - b)).sum(axis=1)
    return (out / (attrs["kernel_size"] ** 2 * data1.shape[1])).astype(data1.dtype)


def _grad_forward(attrs, og, data1, data2):
    one, two = _padded(attrs, data1), _padded(attrs, data2)
    g1, g2 = np.zeros_like(one), np.zeros_like(two)
    og = og.astype(np.float64) / (attrs["kernel_size"] ** 2 * data1.shape[1])
    for channel, first, second in _patches(attrs, data1.shape):
        a, b = one[(Ellipsis,) + first], two[(Ellipsis,) + second]
        g = og[:, channel:channel + 1]
        if attrs["is_multiply"]:
            g1[(Ellipsis,) + first] += g * b
            g2[(Ellipsis,) + second] += g * a
        else:                          # MXNet's sign: +1 for data1 where data1 >= data2
            sign = np.where(a >= b, 1.0, -1.0)
            g1[(Ellipsis,) + first] += g * sign
            g2[(Ellipsis,) + second] -= g * sign
    p, (height, width) = attrs["pad_size"], data1.shape[2:]
    inner = (Ellipsis, slice(p, p + height), slice(p, p + width))   # padding gets none
    return g1[inner].astype(data1.dtype), g2[inner].astype(data2.dtype)


register("Correlation", inputs=("data1", "data2"), attrs=dict(ATTRS), forward=_forward,
         infer_shape=_shape, placement="host",
         gradient=lambda F, a, i, o, og: list(F._correlation_grad(og[0], i[0], i[1], **a)),
         doc="Correlation(data1, data2, kernel_size=1, max_displacement=1, stride1=1, "
             "stride2=1, pad_size=0, is_multiply=True): FlowNet's patch comparison of two "
             "NCHW maps, one output channel per displacement (see ops/correlation.py).")
register("_correlation_grad", inputs=("out_grad", "data1", "data2"), attrs=dict(ATTRS),
         forward=_grad_forward, infer_shape=lambda attrs, s: (s, [s[1], s[2]]),
         num_outputs=2, placement="host",
         doc="Gradient of Correlation: (d data1, d data2).")
