"""Image transforms, written with plain NumPy.

Each transform is a small callable object: ``ToTensor()(img)``. A transform returns the same
kind of array it receives: a NumPy image gives a NumPy result, an NDArray gives an NDArray.
Images are **HWC** (height, width, channels) as stored on disk; networks want **CHW**, which is
what :class:`ToTensor` produces. A leading batch axis (NHWC / NCHW) is accepted too.

>>> train = Digits(train=True).transform_first(Compose([ToTensor(), Normalize(0.13, 0.31)]))

(In MXNet these are HybridBlocks; here they are plain objects, which is all a data pipeline
needs: they run on NumPy data before the network sees it.)
"""
import numpy as np

__all__ = ['Compose', 'Cast', 'ToTensor', 'Normalize', 'Resize', 'resize']


def _unwrap(x):
    """(numpy_array, was_ndarray): transforms compute in NumPy whatever they receive."""
    if hasattr(x, 'asnumpy'):
        return x.asnumpy(), True
    return np.asarray(x), False


def _rewrap(a, was_ndarray):
    if not was_ndarray:
        return a
    from .... import ndarray as nd  # lazy: only needed when the caller passed NDArrays
    return nd.array(a, dtype=a.dtype)


def _check_image(a, name, layout='HWC'):
    if a.ndim not in (3, 4):
        hint = " (add a channel axis: img[:, :, None])" if a.ndim == 2 else ""
        raise ValueError(f"{name} expects an image of shape {tuple(layout)} or a batch "
                         f"N{layout}, got an array of shape {a.shape}{hint}")


def _source_coords(out_len, in_len):
    """Where output pixel centres fall in the input (half-pixel convention, as PIL/OpenCV)."""
    pos = (np.arange(out_len) + 0.5) * (in_len / out_len) - 0.5
    pos = np.clip(pos, 0, in_len - 1)
    lo = np.floor(pos).astype(np.intp)
    hi = np.minimum(lo + 1, in_len - 1)
    return lo, hi, (pos - lo).astype(np.float32)


def resize(img, height, width, interpolation=1):
    """Resize an HWC (or NHWC) image to ``(height, width)``.

    ``interpolation=1`` is bilinear: each output pixel is a weighted mean of the 4 nearest
    input pixels; ``0`` is nearest neighbour. Integer images are rounded and clipped back to
    their dtype, so uint8 stays uint8.
    """
    a = np.asarray(img)
    _check_image(a, 'resize')
    in_h, in_w = a.shape[-3], a.shape[-2]
    if interpolation == 0:
        rows = np.minimum((np.arange(height) * in_h / height).astype(np.intp), in_h - 1)
        cols = np.minimum((np.arange(width) * in_w / width).astype(np.intp), in_w - 1)
        return a.take(rows, axis=-3).take(cols, axis=-2)
    if interpolation != 1:
        raise ValueError(f"interpolation must be 0 (nearest) or 1 (bilinear), "
                         f"got {interpolation!r}")
    y0, y1, wy = _source_coords(height, in_h)
    x0, x1, wx = _source_coords(width, in_w)
    f = a.astype(np.float32)
    wx = wx[:, None]                                  # broadcast over channels
    top = f.take(y0, axis=-3)
    bottom = f.take(y1, axis=-3)
    top = top.take(x0, axis=-2) * (1 - wx) + top.take(x1, axis=-2) * wx
    bottom = bottom.take(x0, axis=-2) * (1 - wx) + bottom.take(x1, axis=-2) * wx
    wy = wy[:, None, None]
    out = top * (1 - wy) + bottom * wy
    if np.issubdtype(a.dtype, np.integer):
        info = np.iinfo(a.dtype)
        out = np.clip(np.rint(out), info.min, info.max)
    return out.astype(a.dtype)


class Compose:
    """Apply transforms one after the other: ``Compose([Resize(32), ToTensor()])``."""

    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __call__(self, x):
        for t in self.transforms:
            x = t(x)
        return x

    def __repr__(self):
        inner = ''.join(f"\n  {t!r}" for t in self.transforms)
        return f"Compose({inner}\n)"


class Cast:
    """Change the dtype: ``Cast('float32')``."""

    def __init__(self, dtype='float32'):
        self.dtype = np.dtype(dtype)

    def __call__(self, x):
        a, was_nd = _unwrap(x)
        return _rewrap(a.astype(self.dtype), was_nd)

    def __repr__(self):
        return f"Cast({self.dtype.name!r})"


class ToTensor:
    """HWC image with values 0..255 -> CHW float32 with values 0..1 (NHWC -> NCHW)."""

    def __call__(self, x):
        a, was_nd = _unwrap(x)
        _check_image(a, 'ToTensor')
        out = np.moveaxis(a, -1, -3).astype(np.float32) / np.float32(255)
        return _rewrap(np.ascontiguousarray(out), was_nd)

    def __repr__(self):
        return "ToTensor()"


class Normalize:
    """``(x - mean) / std`` per channel, on a CHW (or NCHW) float tensor.

    ``mean`` and ``std`` are numbers (all channels) or one value per channel. Use it *after*
    ToTensor: the statistics are for values in 0..1, e.g. MNIST's ``Normalize(0.13, 0.31)``.
    """

    def __init__(self, mean=0.0, std=1.0):
        self.mean = np.atleast_1d(np.asarray(mean, dtype=np.float32))
        self.std = np.atleast_1d(np.asarray(std, dtype=np.float32))
        if np.any(self.std == 0):
            raise ValueError(f"Normalize: std must not contain zeros, got {std!r}")

    def __call__(self, x):
        a, was_nd = _unwrap(x)
        _check_image(a, 'Normalize', layout='CHW')
        channels = a.shape[-3]
        for name, v in (('mean', self.mean), ('std', self.std)):
            if v.size not in (1, channels):
                raise ValueError(f"Normalize: {name} has {v.size} values but the tensor has "
                                 f"{channels} channels (shape {a.shape}, CHW expected; did "
                                 f"you forget ToTensor() first?)")
        out = (a - self.mean[:, None, None]) / self.std[:, None, None]
        return _rewrap(out.astype(np.result_type(a.dtype, np.float32)), was_nd)

    def __repr__(self):
        return f"Normalize(mean={self.mean.tolist()}, std={self.std.tolist()})"


class Resize:
    """Resize an HWC image (before ToTensor).

    ``size`` is an int (square output) or ``(width, height)``, in that order as in MXNet. With
    ``keep_ratio=True`` and an int size, the *shorter* side becomes ``size``.
    """

    def __init__(self, size, keep_ratio=False, interpolation=1):
        self.size = size
        self.keep_ratio = keep_ratio
        self.interpolation = interpolation

    def _target(self, h, w):
        if isinstance(self.size, (tuple, list)):
            width, height = self.size
            return int(height), int(width)
        s = int(self.size)
        if not self.keep_ratio:
            return s, s
        if h < w:
            return s, max(1, round(w * s / h))
        return max(1, round(h * s / w)), s

    def __call__(self, x):
        a, was_nd = _unwrap(x)
        _check_image(a, 'Resize')
        height, width = self._target(a.shape[-3], a.shape[-2])
        return _rewrap(resize(a, height, width, self.interpolation), was_nd)

    def __repr__(self):
        return (f"Resize(size={self.size!r}, keep_ratio={self.keep_ratio}, "
                f"interpolation={self.interpolation})")
