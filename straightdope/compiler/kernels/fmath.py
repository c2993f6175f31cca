"""float32 exp, sigmoid and tanh written so that a fused loop vectorizes.

A fused loop that calls `np.exp` or `np.tanh` makes one call into the C maths
library per element: LLVM cannot turn the call into vector instructions (Numba
has no vector maths library here), and the Python float literals of a formula
like `1.0 / (1.0 + np.exp(-x))` make Numba compute it in float64. The gates of
an LSTM are almost nothing but such formulas, so they cost more than the matrix
products. Written with `+`, `*`, `floor` and a bit cast only, as here, LLVM runs
8 or 16 elements per instruction.

exp: x = n ln2 + r with |r| <= ln2 / 2, so e^x = 2^n e^r; e^r is its Taylor
series up to r^7 (error below 2e-9), 2^n is built from its bits. Accurate to
about 1 ulp; results below the smallest normal float32 (x < -87.3) are 0.
tanh: its Taylor series near 0 (where 1 - 2 / (e^2x + 1) would cancel), that
formula elsewhere. (sigmoid is 1 / (1 + e^-x) with this exp.)
"""
import re

import numba
import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from ..numba_internals import DISK_CACHE

JIT = dict(cache=DISK_CACHE, nogil=True, boundscheck=False, error_model="numpy",
           inline="always")

_F = np.float32
LOG2E = _F(1.0 / np.log(2.0))
LN2_HI = _F(0.693359375)                 # few mantissa bits: n * LN2_HI is exact
LN2_LO = _F(np.log(2.0) - 0.693359375)   # the rest of ln 2
# 1/k! for e^r; the odd Taylor coefficients of tanh (x^3, x^5, x^7, x^9)
E2, E3, E4, E5, E6, E7 = (_F(1.0 / f) for f in (2, 6, 24, 120, 720, 5040))
T3, T5, T7, T9 = _F(-1.0 / 3), _F(2.0 / 15), _F(-17.0 / 315), _F(62.0 / 2835)


@intrinsic
def _float32_from_bits(typingctx, bits):
    """The float32 whose bit pattern is the int32 `bits` (no conversion)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float32))
    return types.float32(types.int32), codegen


if numba.config.DISABLE_JIT:        # plain Python (debugging): NumPy reinterprets the bits
    def _float32_from_bits(bits):   # noqa: F811
        return np.int32(bits).view(np.float32)


@njit(**JIT)
def _pow2(n):
    return _float32_from_bits(np.int32((n + _F(127.0)) * _F(8388608.0)))


@njit(**JIT)
def exp32(x):
    x = _F(x)
    c = min(max(x, _F(-87.33654)), _F(88.72284))
    n = np.floor(c * LOG2E + _F(0.5))
    r = (c - n * LN2_HI) - n * LN2_LO
    p = _F(1.0) + r * (_F(1.0) + r * (E2 + r * (E3 + r * (E4 + r * (E5 + r * (E6 + r * E7))))))
    # 2^n as 2^a 2^b (n reaches 128, one past the largest exponent); each is built from
    # its bits: exponent field a + 127, shifted past the 23 mantissa bits
    a = np.floor(n * _F(0.5))
    y = p * _pow2(a) * _pow2(n - a)
    y = _F(np.inf) if x > _F(88.72284) else y
    y = _F(0.0) if x < _F(-87.33654) else y
    return x if x != x else y        # NaN stays NaN


@njit(**JIT)
def tanh32(x):
    x = _F(x)
    a = abs(x)
    z = x * x
    near0 = x + x * z * (T3 + z * (T5 + z * (T7 + z * T9)))
    far = _F(1.0) - _F(2.0) / (exp32(a + a) + _F(1.0))
    far = far if x >= _F(0.0) else -far
    return near0 if a < _F(0.3) else far


# float literals in a scalar expression (not digits inside names such as t12)
_FLOAT_LITERAL = re.compile(r"(?<![\w.])([0-9]+(?:\.[0-9]*(?:e[+\-]?[0-9]+)?|e[+\-]?[0-9]+))")
_CALLS = {"np.exp(": "exp32(", "np.tanh(": "tanh32("}


def float32_expr(expr: str, kernel) -> str:
    """A scalar expression rewritten to stay in float32: literals typed float32, exp
    and tanh replaced by the functions above (`kernel(module, func)` names them)."""
    expr = _FLOAT_LITERAL.sub(r"np.float32(\1)", expr)
    for call, func in _CALLS.items():
        expr = expr.replace(call, kernel("fmath", func[:-1]) + "(")
    return expr
