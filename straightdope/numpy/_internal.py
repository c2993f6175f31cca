"""`np._internal`: MXNet's internal np functions that its code (and tests) call by this
module name. Here: the boolean-mask assignments behind `x[mask] = value`."""
from ..ndarray import NDArray as _NDArray


def _boolean_mask_assign(name, data, mask, value, start_axis, out):
    """data with the elements `mask` picks, from axis `start_axis` on, set to `value` (a
    number or an array broadcast to the picked part), written into `out` (data itself
    for out=data, as MXNet's code calls it) or into a copy."""
    for what, x in (("data", data), ("mask", mask)):
        if not isinstance(x, _NDArray):
            raise NotImplementedError(f"np._internal.{name}: {what} must be an mx.np array "
                                      f"(a traced Symbol is not supported), got "
                                      f"{type(x).__name__}")
    if mask.shape != data.shape[start_axis:start_axis + mask.ndim]:
        raise ValueError(f"np._internal.{name}: mask of shape {mask.shape} does not match "
                         f"data of shape {data.shape} from axis {start_axis}")
    target = data.copy() if out is None else out
    if out is not None and out is not data:
        out[...] = data
    target[(slice(None),) * start_axis + (mask.astype("bool", copy=False),)] = value
    return target


def boolean_mask_assign_scalar(data, mask, value, start_axis=0, out=None):
    return _boolean_mask_assign("boolean_mask_assign_scalar", data, mask, value, start_axis,
                                out)


def boolean_mask_assign_tensor(data, mask, value, start_axis=0, out=None):
    return _boolean_mask_assign("boolean_mask_assign_tensor", data, mask, value, start_axis,
                                out)
