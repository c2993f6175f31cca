"""Image helpers in MXNet's ``mx.image`` style: read, resize, crop, normalise.

Images are NDArrays in HWC layout (height, width, channels), RGB, uint8 (0-255) as read.
Networks want CHW float32: ``gluon.data.vision.transforms.ToTensor`` does that conversion.

Decoding files needs Pillow (installed with matplotlib); it is imported only when you read
an image, so ``import straightdope`` does not need it. Resizing and cropping are NumPy.

    img = mx.image.imread('cat.png')                 # (H, W, 3) uint8
    img, _ = mx.image.center_crop(img, (224, 224))
    x = mx.image.color_normalize(img.astype('float32') / 255,
                                 mean=mx.nd.array([0.485, 0.456, 0.406]),
                                 std=mx.nd.array([0.229, 0.224, 0.225]))
"""
from __future__ import annotations

import io
import os
import random as _random

import numpy as np

from .ndarray import NDArray, array as _nd_array

__all__ = ['imread', 'imdecode', 'imresize', 'scale_down', 'resize_short', 'fixed_crop',
           'center_crop', 'random_crop', 'color_normalize']


def _numpy(src):
    return src.asnumpy() if isinstance(src, NDArray) else np.asarray(src)


def _wrap(values):
    # Keep the dtype (uint8 stays uint8): nd.array would turn it into float32.
    return _nd_array(values, dtype=values.dtype)


def _pil():
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("reading images needs Pillow (it comes with matplotlib): "
                          "pip install pillow") from None
    return Image


def _decode(fileobj, flag, to_rgb, what):
    Image = _pil()
    try:
        img = Image.open(fileobj)
        img.load()
    except Exception as err:      # Pillow raises several types for unreadable data
        raise ValueError(f"{what}: not an image Pillow can decode ({err})") from None
    img = img.convert('L' if flag == 0 else 'RGB')
    values = np.asarray(img, dtype=np.uint8)
    if flag == 0:
        return values[:, :, None]                 # keep the channel axis: (H, W, 1)
    return values if to_rgb else values[:, :, ::-1].copy()     # BGR, as OpenCV gives it


def imread(filename, flag=1, to_rgb=True):
    """Read an image file (PNG, JPEG, ...) into an (H, W, C) uint8 NDArray.

    flag=1: colour, 3 channels; flag=0: greyscale, 1 channel.
    to_rgb=False gives BGR channel order (what OpenCV-based MXNet returns by default).
    """
    filename = os.fspath(filename)
    if not os.path.exists(filename):
        raise FileNotFoundError(f"imread: no such file {filename!r}")
    with open(filename, 'rb') as f:
        return _wrap(_decode(f, flag, to_rgb, filename))


def imdecode(buf, flag=1, to_rgb=True):
    """Decode an image from its file bytes (e.g. ``open('a.png', 'rb').read()``)."""
    if isinstance(buf, NDArray):
        buf = buf.asnumpy().astype(np.uint8).tobytes()
    elif isinstance(buf, np.ndarray):
        buf = buf.astype(np.uint8).tobytes()
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise TypeError(f"imdecode needs the image file's bytes, got {type(buf).__name__}")
    return _wrap(_decode(io.BytesIO(bytes(buf)), flag, to_rgb, 'imdecode'))


def imresize(src, w, h, interp=1):
    """Resize an (H, W, C) image to (h, w, C). interp=0: nearest neighbour; any other
    value: bilinear (MXNet's OpenCV codes 1-4 all map to bilinear here).

    Pixel centres are aligned as OpenCV does: output pixel x samples the input at
    ``(x + 0.5) * W / w - 0.5``, so the picture does not shift when it is scaled.
    """
    img = _numpy(src)
    if img.ndim != 3:
        raise ValueError(f"imresize expects an (H, W, C) image, got shape {img.shape}")
    if w <= 0 or h <= 0:
        raise ValueError(f"imresize: the target size must be positive, got w={w}, h={h}")
    H, W, _ = img.shape
    ys = (np.arange(h) + 0.5) * (H / h) - 0.5
    xs = (np.arange(w) + 0.5) * (W / w) - 0.5
    if interp == 0:
        yi = np.clip(np.floor(ys + 0.5).astype(int), 0, H - 1)
        xi = np.clip(np.floor(xs + 0.5).astype(int), 0, W - 1)
        return _wrap(img[yi][:, xi].copy())
    ys, xs = np.clip(ys, 0, H - 1), np.clip(xs, 0, W - 1)
    y0, x0 = np.floor(ys).astype(int), np.floor(xs).astype(int)
    y1, x1 = np.minimum(y0 + 1, H - 1), np.minimum(x0 + 1, W - 1)
    wy, wx = (ys - y0)[:, None, None], (xs - x0)[None, :, None]
    f = img.astype(np.float64)
    top = f[y0][:, x0] * (1 - wx) + f[y0][:, x1] * wx
    bottom = f[y1][:, x0] * (1 - wx) + f[y1][:, x1] * wx
    out = top * (1 - wy) + bottom * wy
    if np.issubdtype(img.dtype, np.integer):
        info = np.iinfo(img.dtype)
        out = np.clip(np.rint(out), info.min, info.max)
    return _wrap(out.astype(img.dtype))


def scale_down(src_size, size):
    """Shrink the crop `size` (w, h) to fit inside `src_size` (w, h), keeping its ratio."""
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


def resize_short(src, size, interp=2):
    """Resize so that the shorter side is `size` pixels, keeping the aspect ratio."""
    h, w = _numpy(src).shape[:2]
    if h > w:
        new_w, new_h = size, int(size * h / w)
    else:
        new_w, new_h = int(size * w / h), size
    return imresize(src, new_w, new_h, interp)


def fixed_crop(src, x0, y0, w, h, size=None, interp=2):
    """The w x h region whose top-left corner is (x0, y0), resized to `size` (w, h) if given."""
    img = _numpy(src)
    H, W = img.shape[:2]
    if x0 < 0 or y0 < 0 or x0 + w > W or y0 + h > H:
        raise ValueError(f"fixed_crop: region x0={x0}, y0={y0}, w={w}, h={h} is outside "
                         f"the {W}x{H} image")
    out = _wrap(img[y0:y0 + h, x0:x0 + w].copy())
    if size is not None and (w, h) != tuple(size):
        out = imresize(out, size[0], size[1], interp)
    return out


def center_crop(src, size, interp=2):
    """Crop the centre to `size` (w, h); a too-small image gives the largest centred crop
    with that aspect ratio, resized up. Returns (image, (x0, y0, w, h))."""
    h, w = _numpy(src).shape[:2]
    new_w, new_h = scale_down((w, h), size)
    x0, y0 = int((w - new_w) / 2), int((h - new_h) / 2)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def random_crop(src, size, interp=2):
    """Like center_crop, at a random position (Python's `random`). Returns (image, box)."""
    h, w = _numpy(src).shape[:2]
    new_w, new_h = scale_down((w, h), size)
    x0, y0 = _random.randint(0, w - new_w), _random.randint(0, h - new_h)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def color_normalize(src, mean, std=None):
    """(src - mean) / std, per channel (mean, std broadcast over the last axis).

    Unlike MXNet, `src` is not modified: a new array is returned.
    """
    img = _numpy(src).astype(np.float32)
    if mean is not None:
        img = img - _numpy(mean).astype(np.float32)
    if std is not None:
        img = img / _numpy(std).astype(np.float32)
    return NDArray(img)
