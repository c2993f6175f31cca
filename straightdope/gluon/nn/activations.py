"""Activation layers: a nonlinearity as a block of its own.

Each one is a HybridBlock whose hybrid_forward is a single op, so a traced
graph shows it as one node named after the block (`relu0_fwd`).
"""
from ...initializer import Constant
from ...ndarray import NDArray
from ...ops import OpError, get_op
from ..hybrid_block import HybridBlock

__all__ = ["Activation", "LeakyReLU", "ELU", "SELU", "GELU", "Swish", "SiLU", "PReLU"]


class Activation(HybridBlock):
    """An activation by name: 'relu', 'sigmoid', 'tanh', 'softrelu' or 'softsign'."""

    def __init__(self, activation, **kwargs):
        try:
            get_op("Activation").parse_attrs({"act_type": activation})
        except OpError:
            raise ValueError(
                f"unknown activation {activation!r}: Activation (and Dense/Conv2D's "
                f"activation=...) take 'relu', 'sigmoid', 'tanh', 'softrelu' or 'softsign'. "
                f"For others use the layers nn.LeakyReLU, nn.ELU, nn.SELU, nn.GELU, "
                f"nn.Swish.") from None
        self._act_type = activation
        self._attrs = get_op("Activation").cached_attrs({"act_type": activation})  # parsed once
        super().__init__(**kwargs)

    def _alias(self):
        return self._act_type          # MXNet names it relu0, not activation0

    def hybrid_forward(self, F, x):
        return F.Activation(x, act_type=self._act_type, name="fwd")

    def __repr__(self):
        return f"{type(self).__name__}({self._act_type})"


class LeakyReLU(HybridBlock):
    """x if x > 0 else alpha * x: a small slope instead of zero for negative inputs."""

    def __init__(self, alpha, **kwargs):
        if alpha < 0:
            raise ValueError(f"LeakyReLU: alpha (the slope for x < 0) must be >= 0, got {alpha}")
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="leaky", slope=self._alpha, name="fwd")

    def __repr__(self):
        return f"{type(self).__name__}({self._alpha})"


class ELU(HybridBlock):
    """x if x > 0 else alpha * (exp(x) - 1): smooth, with negative outputs."""

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="elu", slope=self._alpha, name="fwd")

    def __repr__(self):
        return f"{type(self).__name__}(alpha={self._alpha})"


class SELU(HybridBlock):
    """Scaled ELU with the constants that keep activations normalised (Klambauer et al.)."""
    ALPHA, SCALE = 1.6732632423543772, 1.0507009873554805

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="elu", slope=self.ALPHA, name="fwd") * self.SCALE

    def __repr__(self):
        return f"{type(self).__name__}()"


class GELU(HybridBlock):
    """x * Phi(x), Phi the standard normal CDF (the exact erf form, as MXNet's default)."""

    def __init__(self, approximation="erf", **kwargs):
        if approximation != "erf":
            raise ValueError(f"GELU: only approximation='erf' is implemented, got "
                             f"{approximation!r}")
        super().__init__(**kwargs)

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="gelu", name="fwd")

    def __repr__(self):
        return f"{type(self).__name__}()"


class Swish(HybridBlock):
    """x * sigmoid(beta * x)."""

    def __init__(self, beta=1.0, **kwargs):
        super().__init__(**kwargs)
        self._beta = beta

    def hybrid_forward(self, F, x):
        return x * F.sigmoid(x * self._beta if self._beta != 1.0 else x)

    def __repr__(self):
        return f"{type(self).__name__}(beta={self._beta})"


class SiLU(Swish):
    """x * sigmoid(x) (Swish with beta = 1)."""

    def __init__(self, **kwargs):
        super().__init__(beta=1.0, **kwargs)

    def __repr__(self):
        return f"{type(self).__name__}()"


class PReLU(HybridBlock):
    """x if x >= 0 else alpha * x, with `alpha` LEARNED: one slope (in_channels=1, the
    default) or one per channel (axis 1), initialised to 0.25."""

    def __init__(self, alpha_initializer=None, in_channels=1, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.alpha = self.params.get("alpha", shape=(in_channels,),
                                         init=alpha_initializer or Constant(0.25))

    def hybrid_forward(self, F, x, alpha):
        if isinstance(x, NDArray) and x.ndim > 2:
            alpha = F.reshape(alpha, shape=(1, -1) + (1,) * (x.ndim - 2))   # along axis 1
        negative = F.broadcast_mul(F.relu(-x), alpha)
        return F.relu(x) - negative
