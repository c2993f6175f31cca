"""Optimizer update ops: one training step of a weight, as MXNet's `nd.sgd_update` & co.

    nd.sgd_mom_update(weight, grad, mom, lr=0.1, momentum=0.9, out=weight)

Each op returns the new weight (write it back with `out=weight`) and updates its
state arrays (`mom`, Adam's `mean` and `var`...) in place: they are declared as
auxiliary inputs written back from extra outputs, as BatchNorm's running statistics
are. The gradient is first scaled by `rescale_grad` and, when `clip_gradient` >= 0,
clipped to [-clip_gradient, clip_gradient]. `wd` is the weight decay (L2).

The formulas follow MXNet 1.x (src/operator/optimizer_op-inl.h); `gluon.Trainer`
uses `straightdope.optimizer` instead, these are for code that calls the ops.
"""
import numpy as np

from .registry import Attr, Bool, Float, register


def _lr():
    return Attr("float", None, required=True)


COMMON = {"wd": Float(0.0), "rescale_grad": Float(1.0), "clip_gradient": Float(-1.0)}


def _clip(g, bound):
    return np.clip(g, -bound, bound) if bound >= 0 else g


def _scaled(attrs, grad):
    return _clip(attrs["rescale_grad"] * grad, attrs["clip_gradient"])


def _decayed(attrs, weight, grad):
    """MXNet's Adam/RMSProp order: rescale, add weight decay, then clip."""
    return _clip(attrs["rescale_grad"] * grad + attrs["wd"] * weight, attrs["clip_gradient"])


def _same_shapes(attrs, in_shapes):
    """Every input has the weight's shape; so have the outputs (weight, then the states,
    without the gradient)."""
    weight = next((s for s in in_shapes if s is not None), None)
    return [weight] * len(in_shapes), [weight] * (len(in_shapes) - 1)


def _declare(name, states, attrs, step, doc):
    """Register `name`(weight, grad, *states): `step` returns (new weight, *new states)."""
    inputs = ("weight", "grad") + states

    def forward(attrs, weight, grad, *state):
        new = step(attrs, weight, grad, *state)
        return tuple(np.asarray(v, dtype=weight.dtype) for v in new)

    register(name, inputs=inputs, attrs={"lr": _lr(), **attrs, **COMMON}, forward=forward,
             infer_shape=_same_shapes,
             num_outputs=1 + len(states), num_visible_outputs=1, aux_inputs=states,
             aux_writeback={1 + k: 2 + k for k in range(len(states))}, placement="host",
             doc=doc)


def _sgd(attrs, w, g):
    return ((1 - attrs["lr"] * attrs["wd"]) * w - attrs["lr"] * _scaled(attrs, g),)


def _sgd_mom(attrs, w, g, mom):
    mom = attrs["momentum"] * mom - attrs["lr"] * (attrs["wd"] * w + _scaled(attrs, g))
    return w + mom, mom


def _nag_mom(attrs, w, g, mom):
    step = attrs["lr"] * (_scaled(attrs, g) + attrs["wd"] * w)
    mom = attrs["momentum"] * mom - step
    return w + attrs["momentum"] * mom - step, mom


def _signsgd(attrs, w, g):
    return ((1 - attrs["lr"] * attrs["wd"]) * w - attrs["lr"] * np.sign(g),)


def _signum(attrs, w, g, mom):
    beta = attrs["momentum"]
    mom = beta * mom - (1 - beta) * (attrs["wd"] * w + _scaled(attrs, g))
    return (1 - attrs["lr"] * attrs["wd_lh"]) * w + attrs["lr"] * np.sign(mom), mom


def _adam(attrs, w, g, mean, var):
    g = _decayed(attrs, w, g)
    mean = attrs["beta1"] * mean + (1 - attrs["beta1"]) * g
    var = attrs["beta2"] * var + (1 - attrs["beta2"]) * g * g
    return w - attrs["lr"] * mean / (np.sqrt(var) + attrs["epsilon"]), mean, var


def _clip_weights(attrs, w):
    return _clip(w, attrs["clip_weights"])


def _rmsprop(attrs, w, g, n):
    g = _decayed(attrs, w, g)
    n = (1 - attrs["gamma1"]) * g * g + attrs["gamma1"] * n
    return _clip_weights(attrs, w - attrs["lr"] * g / np.sqrt(n + attrs["epsilon"])), n


def _rmspropalex(attrs, w, g, n, g_avg, delta):
    g = _decayed(attrs, w, g)
    gamma1 = attrs["gamma1"]
    n = (1 - gamma1) * g * g + gamma1 * n
    g_avg = (1 - gamma1) * g + gamma1 * g_avg
    delta = attrs["gamma2"] * delta - attrs["lr"] * g / np.sqrt(n - g_avg * g_avg +
                                                                  attrs["epsilon"])
    return _clip_weights(attrs, w + delta), n, g_avg, delta


def _ftml(attrs, w, g, d, v, z):
    g = _clip(attrs["rescale_grad"] * g + attrs["wd"] * w, attrs["clip_grad"])
    beta1, beta2, t = attrs["beta1"], attrs["beta2"], attrs["t"]
    v = beta2 * v + (1 - beta2) * g * g
    d_t = (1 - beta1 ** t) / attrs["lr"] * (np.sqrt(v / (1 - beta2 ** t)) + attrs["epsilon"])
    z = beta1 * z + (1 - beta1) * g - (d_t - beta1 * d) * w
    return -z / d_t, d_t, v, z


def _ftrl(attrs, w, g, z, n):
    g = _scaled(attrs, g)
    lr, lamda1 = attrs["lr"], attrs["lamda1"]
    z = z + g - (np.sqrt(n + g * g) - np.sqrt(n)) * w / lr
    n = n + g * g
    w = (np.sign(z) * lamda1 - z) / ((attrs["beta"] + np.sqrt(n)) / lr + attrs["wd"]) * \
        (np.abs(z) > lamda1)
    return w, z, n


_declare("sgd_update", (), {"lazy_update": Bool(True)}, _sgd,
         "sgd_update(weight, grad, lr): weight - lr * (grad + wd * weight).")
_declare("sgd_mom_update", ("mom",), {"momentum": Float(0.0), "lazy_update": Bool(True)},
         _sgd_mom, "sgd_mom_update(weight, grad, mom, lr, momentum): SGD with momentum; "
                   "mom = momentum * mom - lr * (grad + wd * weight), weight + mom.")
_declare("nag_mom_update", ("mom",), {"momentum": Float(0.0)}, _nag_mom,
         "nag_mom_update(weight, grad, mom, lr, momentum): Nesterov momentum.")
_declare("signsgd_update", (), {}, _signsgd,
         "signsgd_update(weight, grad, lr): a step of lr against the gradient's sign.")
_declare("signum_update", ("mom",), {"momentum": Float(0.0), "wd_lh": Float(0.0)}, _signum,
         "signum_update(weight, grad, mom, lr, momentum): a step of lr along the sign of "
         "the momentum.")
_declare("adam_update", ("mean", "var"),
         {"beta1": Float(0.9), "beta2": Float(0.999), "epsilon": Float(1e-8),
          "lazy_update": Bool(True)}, _adam,
         "adam_update(weight, grad, mean, var, lr): Adam without bias correction (fold it "
         "into lr, as MXNet's Adam optimizer does).")
_declare("rmsprop_update", ("n",),
         {"gamma1": Float(0.95), "epsilon": Float(1e-8), "clip_weights": Float(-1.0)},
         _rmsprop, "rmsprop_update(weight, grad, n, lr): RMSProp (Tieleman & Hinton).")
_declare("rmspropalex_update", ("n", "g", "delta"),
         {"gamma1": Float(0.95), "gamma2": Float(0.9), "epsilon": Float(1e-8),
          "clip_weights": Float(-1.0)}, _rmspropalex,
         "rmspropalex_update(weight, grad, n, g, delta, lr): RMSProp as in Graves (2013).")
_declare("ftml_update", ("d", "v", "z"),
         {"beta1": Float(0.6), "beta2": Float(0.999), "epsilon": Float(1e-8),
          "t": Attr("int", None, required=True), "clip_grad": Float(-1.0)}, _ftml,
         "ftml_update(weight, grad, d, v, z, lr, t): Follow the Moving Leader.")
_declare("ftrl_update", ("z", "n"), {"lamda1": Float(0.01), "beta": Float(1.0)}, _ftrl,
         "ftrl_update(weight, grad, z, n, lr): Follow the Regularized Leader.")
